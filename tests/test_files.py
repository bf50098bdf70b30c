"""Files as a trusted library must treat them: loaders read regular files only (never block
on a FIFO, never read a device without end), within a size limit; text files edited on
Windows (CRLF, a byte order mark) load; ids are ASCII digits; saved files get the mode open()
would give and leave no temporary file behind; a GPT-2 vocab.json / merges.txt pair that does
not belong together is refused; tiktoken files recover their merges in about linear time.
Everything runs on both backends; whatever could hang or crash runs in a subprocess with a
timeout."""

import base64
import json
import os
import signal
import socket
import stat
import subprocess
import sys
import textwrap
import time

import pytest

from helpers import EOT, GPT2_MERGES, GPT2_VOCAB, PLAIN_TEXTS, SPECIALS, corpus_with_specials

POSIX = pytest.mark.skipif(sys.platform == "win32", reason="POSIX file types and modes")
TEXT = PLAIN_TEXTS["tinystories"]


@pytest.fixture(scope="module")
def small(mod):
    return mod.Tokenizer.train(corpus_with_specials(8000), 256 + 80 + 2, special_tokens=SPECIALS)


@pytest.fixture(scope="module")
def saved(small, tmp_path_factory):
    """One valid file of every format, and how to load each."""
    d = tmp_path_factory.mktemp("saved")
    small.save(d / "tok.bpe")
    small.save_gpt2(d / "gpt2")
    small.save_tiktoken(d / "tok.tiktoken")
    small.save_huggingface(d / "tokenizer.json")
    return d


def loaders(mod, small):
    """name -> function(path) loading that path with each loader (the other file of a GPT-2
    pair being the valid one)."""
    T = mod.Tokenizer
    return {
        "load": T.load,
        "from_huggingface": T.from_huggingface,
        "from_tiktoken": lambda p: T.from_tiktoken(
            p, pattern="gpt2", special_tokens=small.special_tokens if small else None
        ),
        "from_gpt2 vocab": lambda p: T.from_gpt2(p, GPT2_MERGES),
        "from_gpt2 merges": lambda p: T.from_gpt2(GPT2_VOCAB, p),
    }


def run_script(mod, code, *args, timeout=60):
    """Run `code` in a fresh Python with the backend under test importable as `mod`."""
    where = os.path.dirname(os.path.abspath(mod.__file__))
    env = dict(os.environ, PYTHONPATH=os.pathsep.join([where] + [os.environ.get("PYTHONPATH", "")]))
    script = (
        f"import importlib, sys\nmod = importlib.import_module({mod.__name__!r})\n"
        + textwrap.dedent(code)
    )
    return subprocess.run(
        [sys.executable, "-c", script, *map(str, args)],
        capture_output=True,
        text=True,
        env=env,
        timeout=timeout,
    )


# ---------------------------------------------------------------------------------------
# regular files only, size limit

LOAD_ALL = """
    import json
    T = mod.Tokenizer
    path = sys.argv[1]
    calls = {
        "load": lambda: T.load(path),
        "from_huggingface": lambda: T.from_huggingface(path),
        "from_tiktoken": lambda: T.from_tiktoken(path, pattern="gpt2"),
        "from_gpt2 vocab": lambda: T.from_gpt2(path, sys.argv[2]),
        "from_gpt2 merges": lambda: T.from_gpt2(sys.argv[3], path),
    }
    out = {}
    for name, call in calls.items():
        try:
            call()
            out[name] = "loaded"
        except Exception as e:
            out[name] = [type(e).__name__, str(e)]
    print(json.dumps(out))
"""


def load_all_in_subprocess(mod, path):
    result = run_script(mod, LOAD_ALL, path, GPT2_MERGES, GPT2_VOCAB, timeout=60)
    assert result.returncode == 0, result.stderr
    return json.loads(result.stdout)


@POSIX
@pytest.mark.parametrize("kind", ["fifo", "dev_zero", "directory", "socket", "symlink_to_fifo"])
def test_loaders_refuse_what_is_not_a_regular_file(mod, tmp_path, kind):
    """A FIFO without a writer would block open() or read() forever, /dev/zero never ends:
    every loader refuses them (and directories, sockets) at once with ValueError."""
    path = tmp_path / "thing"
    sock = None
    if kind in ("fifo", "symlink_to_fifo"):
        os.mkfifo(tmp_path / "fifo")
        path = tmp_path / "fifo"
        if kind == "symlink_to_fifo":
            os.symlink(tmp_path / "fifo", tmp_path / "link")
            path = tmp_path / "link"
    elif kind == "dev_zero":
        path = "/dev/zero"
        if not os.path.exists(path):
            pytest.skip("no /dev/zero")
    elif kind == "directory":
        path.mkdir()
    else:
        sock = socket.socket(socket.AF_UNIX)
        try:
            sock.bind(str(path))
        except OSError:
            pytest.skip("no unix sockets here")
    try:
        started = time.monotonic()
        outcome = load_all_in_subprocess(mod, path)
        assert time.monotonic() - started < 30
    finally:
        if sock is not None:
            sock.close()
    want = {"directory": "directory", "dev_zero": "character device", "socket": "socket"}.get(
        kind, "FIFO"
    )
    for name, got in outcome.items():
        assert got != "loaded" and got[0] == "ValueError", (name, got)
        assert want in got[1] and "regular file" in got[1], (name, got)


@POSIX
def test_loaders_refuse_a_file_above_the_size_limit(mod, tmp_path):
    """A sparse file of 2 GB (no disk used) is refused from its size, before any read."""
    path = tmp_path / "huge"
    with open(path, "wb") as f:
        f.truncate(2 << 30)
    outcome = load_all_in_subprocess(mod, path)
    for name, got in outcome.items():
        assert got[0] == "ValueError" and "bytes" in got[1] and "more than" in got[1], (name, got)


def test_loaders_wrong_path_types(mod):
    for bad in (None, 3, 2.5, ["x"]):  # 3 would be a file descriptor to os.stat
        for load in loaders(mod, None).values():
            with pytest.raises(TypeError):
                load(bad)


def test_missing_file_is_an_oserror(mod, tmp_path):
    for load in loaders(mod, None).values():
        with pytest.raises(FileNotFoundError):
            load(tmp_path / "missing")


# ---------------------------------------------------------------------------------------
# text as editors leave it: CRLF, a byte order mark; ids in ASCII digits only


@pytest.mark.parametrize("fmt", ["native", "tiktoken", "gpt2", "huggingface"])
def test_crlf_and_bom_are_read(mod, small, saved, tmp_path, fmt):
    files = {
        "native": ["tok.bpe"],
        "tiktoken": ["tok.tiktoken"],
        "gpt2": ["gpt2/vocab.json", "gpt2/merges.txt"],
        "huggingface": ["tokenizer.json"],
    }[fmt]
    for variant in ("crlf", "bom", "both"):
        paths = []
        for name in files:
            text = (saved / name).read_bytes().decode("utf-8")
            if variant in ("crlf", "both"):
                text = text.replace("\n", "\r\n")
            if variant in ("bom", "both"):
                text = "\ufeff" + text
            path = tmp_path / f"{variant}-{os.path.basename(name)}"
            path.write_bytes(text.encode("utf-8"))
            paths.append(path)
        T = mod.Tokenizer
        back = {"native": lambda: T.load(paths[0]),
                "tiktoken": lambda: T.from_tiktoken(paths[0], pattern=small.pattern,
                                                    special_tokens=small.special_tokens),
                "gpt2": lambda: T.from_gpt2(*paths),
                "huggingface": lambda: T.from_huggingface(paths[0])}[fmt]()
        assert back == small, (fmt, variant)


@pytest.mark.parametrize(
    "bad_id",
    ["\u0662\u0665\u0666", "\uff11", "\u00b2", "1\u0660", "+1", " 1", "1_0", "12345678901"],
)
def test_native_ids_are_ascii_digits(mod, small, saved, tmp_path, bad_id):
    """str.isdigit() takes Arabic-Indic and full-width digits and superscripts: the native
    format and tiktoken's take ASCII digits only."""
    lines = (saved / "tok.bpe").read_text(encoding="utf-8").split("\n")
    k = next(i for i, line in enumerate(lines) if line.startswith("tokens "))
    tokens = lines[k + 1].split(" ", 1)
    bad = lines[:k + 1] + [bad_id + " " + tokens[1]] + lines[k + 2:]
    (tmp_path / "bad.bpe").write_text("\n".join(bad), encoding="utf-8")
    with pytest.raises(ValueError, match="not an id|expected"):
        mod.Tokenizer.load(tmp_path / "bad.bpe")
    rows = (saved / "tok.tiktoken").read_text(encoding="utf-8").split("\n")
    rows[3] = rows[3].split(" ")[0] + " " + bad_id
    (tmp_path / "bad.tiktoken").write_text("\n".join(rows), encoding="utf-8")
    with pytest.raises(ValueError, match="not an id|expected"):
        mod.Tokenizer.from_tiktoken(tmp_path / "bad.tiktoken", pattern="gpt2")


# ---------------------------------------------------------------------------------------
# saving: modes, atomicity, no temporary files

SAVE_ALL = """
    import os, json
    os.umask(int(sys.argv[2], 8))
    tok = mod.Tokenizer.train("the cat sat on the mat " * 20, 270, special_tokens=["<|x|>"])
    d = sys.argv[1]
    tok.save(os.path.join(d, "tok.bpe"))
    tok.save_huggingface(os.path.join(d, "tokenizer.json"))
    tok.save_tiktoken(os.path.join(d, "tok.tiktoken"))
    tok.save_gpt2(os.path.join(d, "gpt2"))
    tok.save_pretrained(os.path.join(d, "hf"))
    modes = {}
    for root, dirs, files in os.walk(d):
        for f in files:
            p = os.path.join(root, f)
            modes[os.path.relpath(p, d)] = os.stat(p).st_mode & 0o777
    print(json.dumps(modes))
"""


@POSIX
@pytest.mark.parametrize("umask", [0o022, 0o077, 0o002])
@pytest.mark.parametrize("tmpfile", ["O_TMPFILE", "named"])
def test_saved_files_get_the_mode_open_gives(mod, tmp_path, umask, tmpfile):
    """Every save gives a new file the mode open() would (0o666 less the umask) and leaves
    nothing else in the directory -- with Linux's unnamed temporary files and without
    (O_TMPFILE removed from os, as on other systems)."""
    code = textwrap.dedent(SAVE_ALL)
    if tmpfile == "named":
        code = "import os\nif hasattr(os, 'O_TMPFILE'):\n    del os.O_TMPFILE\n" + code
    if tmpfile == "named" and not hasattr(os, "O_TMPFILE"):
        code = SAVE_ALL
    result = run_script(mod, code, tmp_path, oct(umask)[2:])
    assert result.returncode == 0, result.stderr
    modes = json.loads(result.stdout)
    assert sorted(modes) == sorted(
        [
            "tok.bpe",
            "tokenizer.json",
            "tok.tiktoken",
            "tok.tiktoken.json",
            "gpt2/vocab.json",
            "gpt2/merges.txt",
            "hf/tokenizer.json",
            "hf/tokenizer_config.json",
            "hf/special_tokens_map.json",
        ]
    )
    for name, mode in modes.items():
        assert mode == 0o666 & ~umask, (name, oct(mode))


@POSIX
def test_saving_over_a_file_keeps_its_mode(mod, small, tmp_path):
    path = tmp_path / "tok.bpe"
    small.save(path)
    os.chmod(path, 0o640)
    small.save(path)
    assert stat.S_IMODE(os.stat(path).st_mode) == 0o640
    assert os.listdir(tmp_path) == ["tok.bpe"]


def test_stale_temporary_files_are_never_read(mod, small, saved, tmp_path):
    """A temporary file a crash left behind has a hidden name of its own: saving and
    loading the real file ignore it."""
    path = tmp_path / "tokenizer.json"
    stale = tmp_path / ".tokenizer.json.0123456789ab.tmp"
    stale.write_text("{half a file", encoding="utf-8")
    small.save_huggingface(path)
    assert mod.Tokenizer.from_huggingface(path) == small
    assert sorted(os.listdir(tmp_path)) == sorted(
        [".tokenizer.json.0123456789ab.tmp", "tokenizer.json"]
    )
    assert stale.read_text(encoding="utf-8") == "{half a file"


KILLED_SAVER = """
    import os, time
    tok = mod.Tokenizer.from_merges([(b"a", b"b")], special_tokens=["<s>"])
    real_fsync = os.fsync

    def slow_fsync(fd):  # the data is written: stop here until killed
        real_fsync(fd)
        print("syncing", flush=True)
        time.sleep(60)

    os.fsync = slow_fsync
    tok.save(sys.argv[1])
"""


@POSIX
@pytest.mark.skipif(not hasattr(os, "O_TMPFILE"), reason="unnamed temporary files are Linux's")
def test_killed_save_leaves_no_temporary_file(mod, small, tmp_path):
    """SIGKILL while a save syncs its data: the old file stays whole and, where the system
    has unnamed temporary files, nothing else is left in the directory."""
    path = tmp_path / "tok.bpe"
    small.save(path)
    before = path.read_bytes()
    where = os.path.dirname(os.path.abspath(mod.__file__))
    env = dict(os.environ, PYTHONPATH=where)
    script = (
        f"import importlib, sys\nmod = importlib.import_module({mod.__name__!r})\n"
        + textwrap.dedent(KILLED_SAVER)
    )
    proc = subprocess.Popen([sys.executable, "-c", script, str(path)], stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True, env=env)
    try:
        assert proc.stdout.readline().strip() == "syncing", proc.stderr.read()
        proc.send_signal(signal.SIGKILL)
        proc.wait(10)
    finally:
        if proc.poll() is None:
            proc.kill()
    assert os.listdir(tmp_path) == ["tok.bpe"]
    assert path.read_bytes() == before and mod.Tokenizer.load(path) == small


# ---------------------------------------------------------------------------------------
# GPT-2 pairs that do not belong together


def test_gpt2_cut_merges_are_refused(mod, tmp_path):
    """merges.txt cut to 20,000 merges beside the full vocab.json: 30,000 ordinary tokens
    would become special tokens; the pair is refused instead, with a short message."""
    lines = GPT2_MERGES.read_text(encoding="utf-8").split("\n")
    cut = tmp_path / "merges.txt"
    cut.write_text("\n".join(lines[:20001]) + "\n", encoding="utf-8")
    with pytest.raises(ValueError, match="do not belong together") as err:
        mod.Tokenizer.from_gpt2(GPT2_VOCAB, cut)
    assert len(str(err.value)) < 400
    with pytest.raises(ValueError, match="do not belong together"):
        mod.Tokenizer.from_gpt2(GPT2_VOCAB, cut, special_tokens=[EOT])


def test_gpt2_own_pair_has_one_special(mod):
    tok = mod.Tokenizer.from_gpt2(GPT2_VOCAB, GPT2_MERGES)
    assert tok.special_tokens == {EOT: 50256}
    assert tok.encode("Hello world") == [15496, 995]


def test_gpt2_extra_entries_that_look_special_or_join_nothing(mod, tmp_path):
    """Entries no merge makes become special tokens when they look like one (<mask>, [PAD])
    or join no two other entries (RoBERTa's madeupword0000); one that joins two entries
    ('Ġthe' + 'cat') is a token whose merge line is missing: refused."""
    vocab = json.loads(GPT2_VOCAB.read_text(encoding="utf-8"))
    extra = {"<mask>": 50257, "[PAD]": 50258, "madeupword0000": 50259}
    (tmp_path / "vocab.json").write_text(json.dumps({**vocab, **extra}), encoding="utf-8")
    tok = mod.Tokenizer.from_gpt2(tmp_path / "vocab.json", GPT2_MERGES)
    assert tok.special_tokens == {EOT: 50256, **extra}
    (tmp_path / "vocab.json").write_text(json.dumps({**vocab, "Ġthecat": 50257}), encoding="utf-8")
    with pytest.raises(ValueError, match="do not belong together"):
        mod.Tokenizer.from_gpt2(tmp_path / "vocab.json", GPT2_MERGES)


def test_gpt2_mixed_saves_are_refused(mod, tmp_path):
    """save_gpt2 writes a fingerprint of the pair into merges.txt's #version line: a
    vocab.json beside the merges.txt of another save (as a crash between the two renames
    would leave) is refused, while each save loads back whole."""
    a = mod.Tokenizer.train(TEXT, 256 + 60 + 1, special_tokens=[EOT])
    b = mod.Tokenizer.train(TEXT, 256 + 61 + 1, special_tokens=[EOT])
    a.save_gpt2(tmp_path / "a")
    b.save_gpt2(tmp_path / "b")
    for d, tok in (("a", a), ("b", b)):
        back = mod.Tokenizer.from_gpt2(tmp_path / d / "vocab.json", tmp_path / d / "merges.txt")
        assert back.vocab == tok.vocab and back.merges == tok.merges
        assert back.special_tokens == tok.special_tokens
    for vocab, merges in (("a", "b"), ("b", "a")):
        with pytest.raises(ValueError, match="do not belong together"):
            mod.Tokenizer.from_gpt2(
                tmp_path / vocab / "vocab.json", tmp_path / merges / "merges.txt"
            )
    # an edit of either file breaks the fingerprint too
    merges = (tmp_path / "a" / "merges.txt").read_text(encoding="utf-8").split("\n")
    (tmp_path / "a" / "merges.txt").write_text("\n".join(merges[:-5]) + "\n", encoding="utf-8")
    with pytest.raises(ValueError, match="do not belong together"):
        mod.Tokenizer.from_gpt2(tmp_path / "a" / "vocab.json", tmp_path / "a" / "merges.txt")


def test_gpt2_fingerprinted_pair_reads_in_tokenizers_and_transformers(mod, tmp_path):
    """The #version line with the fingerprint is skipped by tokenizers' BPE.from_file and by
    transformers, which give the ids of this library."""
    from tokenizers import Tokenizer, models, pre_tokenizers

    tok = mod.Tokenizer.from_gpt2(GPT2_VOCAB, GPT2_MERGES)
    tok.save_gpt2(tmp_path)
    first = (tmp_path / "merges.txt").read_text(encoding="utf-8").split("\n")[0]
    assert first.startswith("#version: 0.2 ") and "bpe-pair:" in first
    hf = Tokenizer(models.BPE.from_file(str(tmp_path / "vocab.json"), str(tmp_path / "merges.txt")))
    hf.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    transformers = pytest.importorskip("transformers")
    tf = transformers.GPT2TokenizerFast.from_pretrained(str(tmp_path))
    for name, text in PLAIN_TEXTS.items():
        ids = tok.encode(text)
        assert hf.encode(text).ids == ids, name
        assert tf.encode(text) == ids, name


# ---------------------------------------------------------------------------------------
# tiktoken: merges recovered in about linear time, short messages

TIKTOKEN_TIMED = """
    import base64, time
    tokens = [bytes([b]) for b in range(256)]
    kind = sys.argv[1]
    if kind == "one_long":
        tokens.append(b"a" * 32000)
    elif kind == "chain":
        tokens += [b"a" * k for k in range(2, 400)]
    elif kind == "doubling":
        tokens += [b"a" * 2 ** k for k in range(1, 17)]
    elif kind == "alternating":
        tokens += [b"ab"] + [b"ab" * k + b"a" for k in range(1, 300)]
    with open(sys.argv[2], "w") as f:
        for rank, t in enumerate(tokens):
            f.write(base64.b64encode(t).decode() + " " + str(rank) + "\\n")
    start = time.perf_counter()
    try:
        tok = mod.Tokenizer.from_tiktoken(sys.argv[2], pattern="gpt2")
        outcome = "loaded %d" % len(tok.merges)
    except ValueError as e:
        outcome = "ValueError " + str(e)
    print("%.3f" % (time.perf_counter() - start))
    print(outcome)
"""


@pytest.mark.parametrize("kind", ["one_long", "chain", "doubling", "alternating"])
def test_tiktoken_merge_recovery_is_fast(mod, tmp_path, kind):
    """Files built to make a quadratic (or cubic) recovery crawl load or fail in well under
    a few seconds, and an error quotes at most a short piece of the token."""
    result = run_script(mod, TIKTOKEN_TIMED, kind, tmp_path / "x.tiktoken", timeout=120)
    assert result.returncode == 0, result.stderr
    seconds, outcome = result.stdout.strip().split("\n", 1)
    assert float(seconds) < 5, (kind, seconds)
    # one_long: a token no two lower-ranked ones make, kept as a whole-pre-token token
    assert outcome == "loaded 0" if kind == "one_long" else outcome.startswith("loaded"), outcome


def test_tiktoken_recovery_matches_tiktoken(mod, trained, tmp_path):
    """The recovered merges encode as tiktoken does with the same ranks (o200k-style
    pattern; a long token included)."""
    import tiktoken

    tok = trained("o200k")
    tok.save_tiktoken(tmp_path / "m.tiktoken")
    back = mod.Tokenizer.from_tiktoken(tmp_path / "m.tiktoken", pattern="o200k",
                                       special_tokens=tok.special_tokens)
    assert back.merges == tok.merges
    special_ids = set(tok.special_tokens.values())
    enc = tiktoken.Encoding(
        "t",
        pat_str=tok.pattern,
        special_tokens=tok.special_tokens,
        mergeable_ranks={b: i for i, b in tok.vocab.items() if i not in special_ids},
    )
    for name, text in PLAIN_TEXTS.items():
        assert back.encode(text) == enc.encode(text), name


def test_error_messages_quote_tokens_briefly(mod, tmp_path):
    """A 100 KB token in a corrupt file is quoted in a few dozen characters."""
    long = "x" * 100_000
    vocab = {chr(c) if 0x21 <= c <= 0x7E else f"b{c}": c for c in range(256)}
    (tmp_path / "vocab.json").write_text(json.dumps(vocab), encoding="utf-8")
    (tmp_path / "merges.txt").write_text(f"{long} y\n", encoding="utf-8")
    (tmp_path / "m.bpe").write_text(
        f'#bpe-tokenizer 1\npattern "a"\ntokens 1\n0 {long}\u0100\n', encoding="utf-8"
    )
    (tmp_path / "m.tiktoken").write_text(
        base64.b64encode(long.encode()).decode() + " 0\n", encoding="utf-8"
    )
    for call in (lambda: mod.Tokenizer.from_gpt2(tmp_path / "vocab.json", tmp_path / "merges.txt"),
                 lambda: mod.Tokenizer.load(tmp_path / "m.bpe"),
                 lambda: mod.Tokenizer.from_tiktoken(tmp_path / "m.tiktoken", pattern="gpt2"),
                 lambda: mod.Tokenizer.from_merges([(long.encode(), b"y")])):
        with pytest.raises(ValueError) as err:
            call()
        assert len(str(err.value)) < 400, str(err.value)[:500]
