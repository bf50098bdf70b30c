"""No guessed pattern, no overwritten input, no shared time budget, no unbounded inflate:
every class of these, and the neighbours found beside them, on both
backends; the cases that could hang or exhaust memory run in a fresh subprocess with a
timeout (and a memory limit where memory is the point)."""

import base64
import gzip
import hashlib
import json
import os
import stat
import subprocess
import sys
import textwrap
import time

import pytest

from helpers import DATA, EOT, gpt2_ranks, read_data

POSIX = pytest.mark.skipif(sys.platform == "win32", reason="POSIX file types, links and modes")
OPENAI = "https://openaipublic.blob.core.windows.net/encodings/"
SHA256 = {  # the pins of tiktoken_ext/openai_public.py
    "r50k_base": "306cd27f03c1a714eca7108e03d66b7dc042abe8c258b44c199a7ed9838dd930",
    "cl100k_base": "223921b76ee99bde995b7ff738513eef100fb51d18c93597a113bcffe865b2a7",
    "o200k_base": "446a9538cb6c348e3516120d7c08b09f57c36495e2acfffe59a5bf8b0cfb1a2d",
}
TRICKY = ["I'M HERE", "hello\n\n\nworld", "it's 2024!!  ok\r\n\r\n", "ÀBC déjà-vu 東京 🙂",
          "x = [1, 2, 3]\n\tif y:\n        return 12345678", "CamelCaseWord's", "   \n  \n"]


def where(mod):
    """PYTHONPATH for a subprocess importing the very module files the tests use."""
    import bpe_fallback

    dirs = {os.path.dirname(os.path.abspath(m.__file__)) for m in (mod, bpe_fallback)}
    return os.pathsep.join(sorted(dirs) + [p for p in [os.environ.get("PYTHONPATH")] if p])


def run_fresh(mod, code, *args, timeout=120, env=None):
    """Run `code` in a fresh Python with the backend under test imported as m."""
    src = f"import sys\nimport {mod.__name__} as m\n" + textwrap.dedent(code)
    full = dict(os.environ, PYTHONPATH=where(mod), BPE_OFFLINE="1")
    full.update(env or {})
    return subprocess.run([sys.executable, "-c", src, *map(str, args)], capture_output=True,
                          text=True, timeout=timeout, env=full)


def cli(mod, *args, cwd=None, timeout=120):
    """`bpe ARGS...` (python -m bpe_fallback) on the backend under test."""
    env = dict(os.environ, PYTHONPATH=where(mod), BPE_OFFLINE="1",
               BPE_BACKEND="python" if mod.__name__ == "bpe_fallback" else "cython")
    env.pop("BPE_DEBUG", None)
    return subprocess.run([sys.executable, "-m", "bpe_fallback", *map(str, args)],
                          capture_output=True, text=True, timeout=timeout, env=env, cwd=cwd)


def one_line_error(result, *needles):
    assert result.returncode == 1, (result.returncode, result.stdout, result.stderr)
    lines = result.stderr.splitlines()
    assert len(lines) == 1 and lines[0].startswith("bpe: error: "), result.stderr
    for needle in needles:
        assert needle in lines[0], lines[0]
    return lines[0]


def tiktoken_reference(name, path):
    """tiktoken's own Encoding `name` (its pattern and special tokens from tiktoken_ext),
    with the ranks read by tiktoken's loader from the local file `path`."""
    import tiktoken
    import tiktoken.load
    from tiktoken_ext import openai_public

    real = openai_public.load_tiktoken_bpe
    openai_public.load_tiktoken_bpe = lambda *a, **k: tiktoken.load.load_tiktoken_bpe(str(path))
    try:
        spec = getattr(openai_public, name)()
    finally:
        openai_public.load_tiktoken_bpe = real
    return tiktoken.Encoding(**spec)


def official_file(name, directory, gz=False):
    """OpenAI's .tiktoken file for `name` under a name that says nothing about it: from
    tests/data (gzipped copies), or for r50k_base written from GPT-2's vocab.json."""
    path = directory / ("ranks.tiktoken.gz" if gz else "ranks.tiktoken")
    if name == "r50k_base":
        data = b"".join(base64.b64encode(t) + b" %d\n" % i
                        for t, i in sorted(gpt2_ranks().items(), key=lambda kv: kv[1]))
    else:
        data = gzip.decompress((DATA / f"{name}.tiktoken.gz").read_bytes())
    assert hashlib.sha256(data).hexdigest() == SHA256[name]
    path.write_bytes(gzip.compress(data, compresslevel=1) if gz else data)
    return path


def texts():
    return [read_data("corpus.en", 40000)] + TRICKY


@pytest.fixture(scope="module")
def small(mod):
    return mod.Tokenizer.train(read_data("corpus.en", 8000) + EOT, 256 + 60 + 1,
                               special_tokens=[EOT])


# ---- a guessed pattern ---------------------------------------------------------------

@pytest.mark.parametrize("name", ["cl100k_base", "o200k_base", "r50k_base"])
def test_official_tiktoken_files_are_known_by_their_sha256(mod, tmp_path, name):
    """OpenAI's files, without a sidecar, load with their encoding's pattern and special
    tokens: the ids of tiktoken's own encoding on every text."""
    path = official_file(name, tmp_path)
    ref = tiktoken_reference(name, path)
    tok = mod.Tokenizer.from_file(path)
    assert tok.special_tokens == ref._special_tokens
    for text in texts():
        assert tok.encode(text) == ref.encode(text), text[:40]
    special = f"a{EOT}b"
    assert tok.encode(special, allowed_special="all") == ref.encode(special, allowed_special="all")


def test_official_gzipped_file_is_known_too(mod, tmp_path):
    path = official_file("cl100k_base", tmp_path, gz=True)
    ref = tiktoken_reference("cl100k_base", official_file("cl100k_base", tmp_path))
    tok = mod.Tokenizer.from_file(path)
    for text in TRICKY:
        assert tok.encode(text) == ref.encode(text), text


def test_command_reads_an_official_file_with_its_pattern(mod, tmp_path):
    """`bpe encode -t cl100k_base.tiktoken` (no sidecar): tiktoken's ids."""
    path = official_file("cl100k_base", tmp_path)
    ref = tiktoken_reference("cl100k_base", path)
    text = read_data("corpus.en", 30000) + "".join(TRICKY)
    src = tmp_path / "in.txt"
    src.write_text(text, encoding="utf-8", newline="")
    r = cli(mod, "encode", src, "-t", path, "-o", tmp_path / "out.bin", "-q")
    assert r.returncode == 0, r.stderr
    ids = list(memoryview((tmp_path / "out.bin").read_bytes()).cast("I"))
    assert ids == ref.encode(text)


def test_other_tiktoken_without_sidecar_is_refused(mod, small, tmp_path):
    """Anything but OpenAI's files needs its sidecar or an explicit pattern: no guess."""
    path = tmp_path / "tok.tiktoken"
    small.save_tiktoken(path, sidecar=False)
    with pytest.raises(ValueError) as e:
        mod.Tokenizer.from_file(path)
    assert "pattern=" in str(e.value) and "sidecar" in str(e.value) and str(path) in str(e.value)
    tok = mod.Tokenizer.from_file(path, pattern="gpt2")
    assert tok.merges == small.merges and tok.pattern == small.pattern
    # gzipped: the same rule
    (tmp_path / "tok.tiktoken.gz").write_bytes(gzip.compress(path.read_bytes()))
    with pytest.raises(ValueError, match="pattern="):
        mod.Tokenizer.from_file(tmp_path / "tok.tiktoken.gz")
    # an official file with one rank changed is no official file
    other = official_file("cl100k_base", tmp_path)
    data = other.read_bytes()
    other.write_bytes(data.replace(b" 100255\n", b" 100256\n"))
    with pytest.raises(ValueError, match="pattern="):
        mod.Tokenizer.from_file(other)


def test_command_refuses_a_guess_and_says_what_to_pass(mod, small, tmp_path):
    path = tmp_path / "tok.tiktoken"
    small.save_tiktoken(path, sidecar=False)
    src = tmp_path / "in.txt"
    src.write_text("hello world\n")
    r = cli(mod, "encode", src, "-t", path, "-o", tmp_path / "out.bin", "-q")
    one_line_error(r, "--pattern")
    assert not (tmp_path / "out.bin").exists()
    r = cli(mod, "encode", src, "-t", path, "-o", tmp_path / "out.bin", "-q", "--pattern", "gpt2")
    assert r.returncode == 0, r.stderr


# ---- a sidecar from another save -----------------------------------------------------

def test_sidecar_of_another_file_is_refused(mod, small, tmp_path):
    """A crash between save_tiktoken's renames: new ranks beside the old sidecar."""
    path = tmp_path / "tok.tiktoken"
    small.save_tiktoken(path)
    other = mod.Tokenizer.train("the quick brown fox jumps " * 40, 256 + 4, pattern="words")
    other.save_tiktoken(tmp_path / "new.tiktoken", sidecar=False)
    os.replace(tmp_path / "new.tiktoken", path)  # the sidecar still describes small
    with pytest.raises(ValueError) as e:
        mod.Tokenizer.from_file(path)
    assert "sha256" in str(e.value) and f"{path}.json" in str(e.value)
    r = cli(mod, "encode", tmp_path / "tok.tiktoken", "-t", path, "-o", tmp_path / "o.bin", "-q")
    one_line_error(r, "sha256")
    # the sidecar's own file loads
    small.save_tiktoken(path)
    assert mod.Tokenizer.from_file(path) == small


# ---- a policy that chunking can bypass -----------------------------------------------

BAD = "BAD\nTOKEN"


def test_disallowed_text_across_a_chunk_cut_is_seen(mod, small, tmp_path):
    path = tmp_path / "in.txt"
    path.write_text("hello world\n" * 3 + BAD + " and more text\n" * 3, encoding="utf-8")
    start = path.read_bytes().index(BAD.encode())
    cuts = [a for a, _ in mod.file_cuts(path, 2)]
    assert start + 3 in cuts  # a cut falls inside BAD
    with pytest.raises(ValueError, match="disallowed"):
        small.encode(path.read_text(), disallowed_special={BAD})
    for workers in (1, 2):
        with pytest.raises(ValueError, match="BAD"):
            small.encode_files([path], tmp_path / "out.bin", chunk_size=2, workers=workers,
                               disallowed_special={BAD})
        assert not (tmp_path / "out.bin").exists()
    # byte ranges of one document, cut inside BAD
    size = path.stat().st_size
    with pytest.raises(ValueError, match="BAD"):
        small.encode_files([(path, 0, start + 3), (path, start + 3, size)], tmp_path / "out.bin",
                           disallowed_special={BAD})
    # the text encodes when BAD is not disallowed, the same as encode
    meta = small.encode_files([path], tmp_path / "out.bin", chunk_size=2, workers=2)
    ids = list(memoryview((tmp_path / "out.bin").read_bytes()).cast("H"))
    assert ids == small.encode(path.read_text()) and meta["count"] == len(ids)


def test_disallowed_text_across_stream_chunks_is_seen(mod, small):
    text = "hello world\n" * 3 + BAD + " more\n"
    cut = text.index(BAD) + 3
    with pytest.raises(ValueError, match="BAD"):
        list(small.encode_iterable([text[:cut], text[cut:]], disallowed_special={BAD}))
    big = "hello world\n" * 20000
    with pytest.raises(ValueError, match="BAD"):
        list(small.encode_iterable([big + text[:cut], text[cut:] + big], disallowed_special={BAD}))


# ---- output over input ---------------------------------------------------------------

def link(kind, target, name):
    """`name` naming `target` by path, symlink or hard link."""
    if kind == "path":
        return target
    if kind == "symlink":
        os.symlink(target, name)
    else:
        os.link(target, name)
    return name


def snapshot(*paths):
    return [(p.read_bytes(), os.stat(p).st_ino) for p in paths]


@pytest.fixture
def files(small, tmp_path):
    corpus = tmp_path / "corpus.txt"
    corpus.write_text(read_data("corpus.en", 6000), encoding="utf-8")
    held = tmp_path / "eval.txt"
    held.write_text(read_data("corpus.en", 9000)[6000:], encoding="utf-8")
    small.save(tmp_path / "tok.bpe")
    return corpus, held, tmp_path / "tok.bpe"


@POSIX
@pytest.mark.parametrize("kind", ["path", "symlink", "hardlink"])
def test_encode_output_over_the_tokenizer_is_refused(mod, files, tmp_path, kind):
    corpus, _, tokfile = files
    out = link(kind, tokfile, tmp_path / "out.bin")
    before = snapshot(tokfile, corpus)
    r = cli(mod, "encode", corpus, "-t", tokfile, "-o", out, "-q")
    one_line_error(r, "output")
    assert snapshot(tokfile, corpus) == before
    assert not os.path.exists(f"{out}.json")


@POSIX
@pytest.mark.parametrize("kind", ["path", "symlink", "hardlink"])
def test_train_output_over_an_eval_file_is_refused(mod, files, tmp_path, kind):
    corpus, held, _ = files
    out = link(kind, held, tmp_path / "new.bpe")
    before = snapshot(held, corpus)
    r = cli(mod, "train", corpus, "--vocab-size", 300, "--eval", held, "-o", out)
    one_line_error(r, "output")
    assert snapshot(held, corpus) == before


@POSIX
@pytest.mark.parametrize("case", ["tiktoken-sidecar-is-eval", "gpt2-dir-holds-input",
                                  "encode-sidecar-is-input", "encode-over-tiktoken-sidecar",
                                  "encode-over-gpt2-dir-file", "encode-over-hf-in-dir",
                                  "encode-corpus-hardlink"])
def test_every_output_of_a_command_is_checked_against_every_input(mod, small, files, tmp_path,
                                                                  case):
    corpus, held, tokfile = files
    guarded = [corpus, held, tokfile]
    if case == "tiktoken-sidecar-is-eval":  # -o X --format tiktoken writes X and X.json
        os.replace(held, tmp_path / "tok.tiktoken.json")
        held = tmp_path / "tok.tiktoken.json"
        args = ["train", corpus, "--vocab-size", 300, "--eval", held, "--format", "tiktoken",
                "-o", tmp_path / "tok.tiktoken"]
        guarded = [corpus, held]
    elif case == "gpt2-dir-holds-input":  # -o DIR --format gpt2 writes DIR/merges.txt
        (tmp_path / "d").mkdir()
        os.replace(corpus, tmp_path / "d" / "merges.txt")
        corpus = tmp_path / "d" / "merges.txt"
        args = ["train", corpus, "--vocab-size", 300, "--format", "gpt2", "-o", tmp_path / "d"]
        guarded = [corpus]
    elif case == "encode-sidecar-is-input":  # -o X writes X and X.json
        os.replace(corpus, tmp_path / "out.bin.json")
        corpus = tmp_path / "out.bin.json"
        args = ["encode", corpus, "-t", tokfile, "-o", tmp_path / "out.bin"]
        guarded = [corpus, tokfile]
    elif case == "encode-over-tiktoken-sidecar":  # the sidecar is read: an input too
        small.save_tiktoken(tmp_path / "tok.tiktoken")
        tokfile = tmp_path / "tok.tiktoken"
        args = ["encode", corpus, "-t", tokfile, "-o", tmp_path / "tok.tiktoken.json"]
        guarded = [corpus, tokfile, tmp_path / "tok.tiktoken.json"]
    elif case == "encode-over-gpt2-dir-file":
        small.save_gpt2(tmp_path / "g")
        args = ["encode", corpus, "-t", tmp_path / "g", "-o", tmp_path / "g" / "vocab.json"]
        guarded = [corpus, tmp_path / "g" / "vocab.json", tmp_path / "g" / "merges.txt"]
    elif case == "encode-over-hf-in-dir":
        (tmp_path / "hf").mkdir()
        small.save_huggingface(tmp_path / "hf" / "tokenizer.json")
        args = ["encode", corpus, "-t", tmp_path / "hf", "-o", tmp_path / "hf" / "tokenizer"]
        guarded = [corpus, tmp_path / "hf" / "tokenizer.json"]
    else:
        os.link(corpus, tmp_path / "same.bin")
        args = ["encode", corpus, "-t", tokfile, "-o", tmp_path / "same.bin"]
        guarded = [corpus, tokfile]
    before = snapshot(*guarded)
    r = cli(mod, *args, "-q")
    one_line_error(r, "output")
    assert snapshot(*guarded) == before


@POSIX
@pytest.mark.parametrize("kind", ["path", "symlink", "hardlink"])
def test_encode_files_output_over_an_input_is_refused(mod, small, files, tmp_path, kind):
    corpus, held, _ = files
    if kind == "path":
        os.replace(held, tmp_path / "b.bin.json")
        held = tmp_path / "b.bin.json"
    before = snapshot(corpus, held)
    with pytest.raises(ValueError, match="output"):  # the array over an input
        small.encode_files([corpus, held], link(kind, corpus, tmp_path / "a.bin"))
    link(kind, held, tmp_path / "b.bin.json") if kind != "path" else None
    with pytest.raises(ValueError, match="output"):  # the sidecar over an input
        small.encode_files([corpus, held], tmp_path / "b.bin")
    assert snapshot(corpus, held) == before


# ---- modes kept on re-run ------------------------------------------------------------

def mode(path):
    return stat.S_IMODE(os.stat(path).st_mode)


@POSIX
@pytest.mark.parametrize("chmod", [0o600, 0o640])
def test_encode_files_rerun_keeps_modes(mod, small, files, tmp_path, chmod):
    corpus = files[0]
    out = tmp_path / "train.bin"
    small.encode_files([corpus], out)
    os.chmod(out, chmod)
    os.chmod(f"{out}.json", chmod)
    small.encode_files([corpus], out, workers=2, chunk_size=1000)
    assert (mode(out), mode(f"{out}.json")) == (chmod, chmod)


@POSIX
def test_every_save_keeps_modes(mod, small, tmp_path):
    saves = {
        "tok.bpe": (small.save, ["tok.bpe"]),
        "tok.tiktoken": (small.save_tiktoken, ["tok.tiktoken", "tok.tiktoken.json"]),
        "tokenizer.json": (small.save_huggingface, ["tokenizer.json"]),
        "gpt2": (small.save_gpt2, ["gpt2/vocab.json", "gpt2/merges.txt"]),
        "hf": (lambda p: small.save_pretrained(p, eos_token=EOT),
               ["hf/tokenizer.json", "hf/tokenizer_config.json", "hf/special_tokens_map.json"]),
    }
    for target, (save, written) in saves.items():
        save(tmp_path / target)
        for name in written:
            os.chmod(tmp_path / name, 0o604)
        save(tmp_path / target)
        assert [mode(tmp_path / name) for name in written] == [0o604] * len(written), target


@POSIX
def test_commands_keep_modes(mod, files, tmp_path):
    corpus, _, tokfile = files
    for fmt, written in (("native", ["t.bpe"]), ("tiktoken", ["t.bpe", "t.bpe.json"]),
                         ("huggingface", ["t.bpe"])):
        r = cli(mod, "train", corpus, "--vocab-size", 280, "-o", tmp_path / "t.bpe", "-q",
                "--format", fmt)
        assert r.returncode == 0, r.stderr
        for name in written:
            os.chmod(tmp_path / name, 0o600)
        r = cli(mod, "train", corpus, "--vocab-size", 280, "-o", tmp_path / "t.bpe", "-q",
                "--format", fmt)
        assert r.returncode == 0, r.stderr
        assert [mode(tmp_path / n) for n in written] == [0o600] * len(written), fmt
    for again in (False, True):
        r = cli(mod, "encode", corpus, "-t", tokfile, "-o", tmp_path / "ids.bin", "-q")
        assert r.returncode == 0, r.stderr
        if not again:
            os.chmod(tmp_path / "ids.bin", 0o600)
            os.chmod(tmp_path / "ids.bin.json", 0o600)
    assert (mode(tmp_path / "ids.bin"), mode(tmp_path / "ids.bin.json")) == (0o600, 0o600)


# ---- FIFOs, devices, directories: refused before the first byte ----------------------

FIFO_CALLS = [
    "m.Tokenizer.from_file(P)",
    "m.Tokenizer.from_file(P, pattern='gpt2')",
    "m.Tokenizer.from_file(LINK)",
    "m.Tokenizer.load(P)",
    "m.Tokenizer.from_tiktoken(P, pattern='gpt2')",
    "m.Tokenizer.from_huggingface(P)",
    "m.Tokenizer.from_gpt2(P, P)",
    "m.get_encoding('cl100k_base', path=P)",
    "m.Tokenizer.from_file(TIK)",  # a .tiktoken file whose sidecar is a FIFO
    "m.Tokenizer.from_file(D)",  # a directory whose tokenizer.json is a FIFO
]


@POSIX
@pytest.mark.parametrize("call", FIFO_CALLS)
def test_fifo_is_refused_before_the_first_byte(mod, small, tmp_path, call):
    fifo = tmp_path / "fifo"
    os.mkfifo(fifo)
    os.symlink(fifo, tmp_path / "link")
    small.save_tiktoken(tmp_path / "t.tiktoken", sidecar=False)
    os.mkfifo(tmp_path / "t.tiktoken.json")
    (tmp_path / "d").mkdir()
    os.mkfifo(tmp_path / "d" / "tokenizer.json")
    r = run_fresh(mod, f"""
        import time
        P, LINK, TIK, D = sys.argv[1:5]
        t = time.monotonic()
        try:
            {call}
            print("loaded")
        except ValueError as e:
            print("ValueError", round(time.monotonic() - t), e)
    """, fifo, tmp_path / "link", tmp_path / "t.tiktoken", tmp_path / "d", timeout=60)
    assert r.returncode == 0, r.stderr[-2000:]
    assert r.stdout.startswith("ValueError 0 "), r.stdout
    assert "FIFO" in r.stdout or "regular file" in r.stdout, r.stdout


@POSIX
@pytest.mark.parametrize("args", [
    ["encode", "{corpus}", "-t", "{fifo}", "-o", "{tmp}/o.bin"],
    ["encode", "{corpus}", "-t", "/dev/zero", "-o", "{tmp}/o.bin"],
    ["train", "{corpus}", "--vocab-size", "300", "--eval", "{fifo}", "-o", "{tmp}/t.bpe"],
    ["train", "{fifo}", "--vocab-size", "300", "-o", "{tmp}/t.bpe"],
    ["encode", "{fifo}", "-t", "{tok}", "-o", "{tmp}/o.bin"],
])
def test_commands_refuse_a_fifo_at_once(mod, files, tmp_path, args):
    corpus, _, tokfile = files
    os.mkfifo(tmp_path / "fifo")
    args = [a.format(corpus=corpus, fifo=tmp_path / "fifo", tmp=tmp_path, tok=tokfile)
            for a in args]
    started = time.monotonic()
    r = cli(mod, *args, "-q", timeout=60)
    line = one_line_error(r)
    assert "FIFO" in line or "regular file" in line or "character device" in line, line
    assert time.monotonic() - started < 30
    assert not (tmp_path / "o.bin").exists() and not (tmp_path / "t.bpe").exists()


# ---- gzip: bombs, and gzipped files in every loader ----------------------------------

def write_bomb(path, gib=4):
    """A gzip file of a few MB that inflates to `gib` GiB of zeros (many members)."""
    member = gzip.compress(b"\0" * (1 << 20), compresslevel=9)
    with open(path, "wb") as f:
        for _ in range(gib << 10):
            f.write(member)


BOMB = """
    import resource, time
    resource.setrlimit(resource.RLIMIT_AS, (2 << 30, 2 << 30))
    P = sys.argv[1]
    t = time.monotonic()
    try:
        {call}
        print("loaded")
    except (ValueError, FileNotFoundError) as e:
        print(type(e).__name__, round(time.monotonic() - t), e)
"""


@POSIX
@pytest.mark.parametrize("call", [
    "m.get_encoding('cl100k_base', path=P)",
    "m.get_encoding('cl100k_base')",  # tiktoken's cache holds the bomb
    "m.Tokenizer.from_file(P)",
    "m.Tokenizer.from_tiktoken(P, pattern='gpt2')",
    "m.Tokenizer.load(P)",
])
def test_gzip_bomb_is_refused_with_bounded_memory(mod, tmp_path, call):
    cache = tmp_path / "cache"
    cache.mkdir()
    bomb = tmp_path / "cl100k_base.tiktoken.gz"
    write_bomb(bomb)
    os.link(bomb, cache / hashlib.sha1((OPENAI + "cl100k_base.tiktoken").encode()).hexdigest())
    r = run_fresh(mod, BOMB.format(call=call), bomb, timeout=120,
                  env={"TIKTOKEN_CACHE_DIR": str(cache)})
    assert r.returncode == 0, r.stderr[-2000:]
    kind, seconds = r.stdout.split()[:2]
    assert kind in ("ValueError", "FileNotFoundError") and int(seconds) <= 20, r.stdout


@POSIX
def test_huge_file_in_tiktoken_cache_is_not_read_whole(mod, tmp_path):
    cache = tmp_path / "cache"
    cache.mkdir()
    with open(cache / hashlib.sha1((OPENAI + "cl100k_base.tiktoken").encode()).hexdigest(),
              "wb") as f:
        f.truncate(3 << 30)  # sparse: no disk used
    r = run_fresh(mod, BOMB.format(call="m.get_encoding('cl100k_base')"), "-", timeout=120,
                  env={"TIKTOKEN_CACHE_DIR": str(cache)})
    assert r.returncode == 0, r.stderr[-2000:]
    assert r.stdout.split()[0] in ("ValueError", "FileNotFoundError"), r.stdout


def test_gzipped_files_read_like_plain_ones_in_every_loader(mod, small, tmp_path):
    def gz(path):
        with open(path, "rb") as f:
            data = f.read()
        with open(f"{path}.gz", "wb") as f:
            f.write(gzip.compress(data))
        return f"{path}.gz"

    small.save(tmp_path / "t.bpe")
    small.save_huggingface(tmp_path / "tokenizer.json")
    small.save_tiktoken(tmp_path / "t.tiktoken")
    small.save_gpt2(tmp_path / "g")
    T = mod.Tokenizer
    assert T.load(gz(tmp_path / "t.bpe")) == small
    assert T.from_huggingface(gz(tmp_path / "tokenizer.json")) == small
    assert T.from_tiktoken(gz(tmp_path / "t.tiktoken"), pattern=small.pattern,
                           special_tokens=small.special_tokens) == small
    assert T.from_file(tmp_path / "t.bpe.gz") == small
    assert T.from_file(tmp_path / "tokenizer.json.gz") == small
    vocab, merges = gz(tmp_path / "g" / "vocab.json"), gz(tmp_path / "g" / "merges.txt")
    assert T.from_gpt2(vocab, merges) == small


def test_broken_gzip_is_a_value_error_naming_the_file(mod, small, tmp_path):
    small.save(tmp_path / "t.bpe")
    data = gzip.compress((tmp_path / "t.bpe").read_bytes())
    for name, blob in (("cut.gz", data[: len(data) // 2]), ("bad.gz", data[:20] + b"x" * 40)):
        (tmp_path / name).write_bytes(blob)
        for call in (mod.Tokenizer.load, mod.Tokenizer.from_file,
                     lambda p: mod.get_encoding("cl100k_base", path=p)):
            with pytest.raises(ValueError) as e:
                call(tmp_path / name)
            assert name in str(e.value)


# ---- the time budget of custom patterns: per call, own work only ---------------------

THREADS = """
    import threading
    from helpers import read_data
    tok = m.Tokenizer.train(read_data("corpus.en", 20000), 400, pattern=r"\\w+|\\W")
    text = read_data("corpus.en", 27000)
    want = tok.encode(text)
    errors, done = [], []
    def work():
        try:
            for _ in range(3):
                assert tok.encode(text) == want
            done.append(1)
        except Exception as e:
            errors.append(repr(e)[:200])
    threads = [threading.Thread(target=work) for _ in range({n})]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not errors, (len(errors), errors[0])
    assert len(done) == {n}
    assert tok.encode_batch([text] * {n}, num_threads={n}) == [want] * {n}
    print("ok")
"""


@pytest.mark.parametrize("n", [4, 16])
def test_threads_do_not_share_a_time_budget(mod, n):
    r = run_fresh(mod, THREADS.format(n=n), timeout=300,
                  env={"PYTHONPATH": os.pathsep.join([where(mod), str(DATA.parent)])})
    assert r.returncode == 0 and r.stdout.strip() == "ok", r.stderr[-3000:]


LOADED = """
    import os, subprocess, time
    import bpe_fallback
    from helpers import read_data
    cpu = sorted(os.sched_getaffinity(0))[0]
    os.sched_setaffinity(0, {cpu})
    P = r"\\w+|\\W"
    text = read_data("corpus.en") * 2
    pieces = bpe_fallback.pretokenizer(P)(text)
    want = m.Tokenizer.from_merges([], pattern=P).encode_ordinary(text)
    costs = []
    for _ in range(3):
        t = time.thread_time()
        bpe_fallback.pretokenizer(P)(text)
        costs.append(time.thread_time() - t)
    # a budget of three times the CPU time the split takes, far below what the machine's
    # load makes of it in wall time: 7 busy processes on the same CPU
    bpe_fallback.PATTERN_TIME_BASE = 0.01
    bpe_fallback.PATTERN_TIME_PER_CHAR = 3 * min(costs) / len(text)
    split = bpe_fallback.pretokenizer(P)
    tok = m.Tokenizer.from_merges([], pattern=P)
    hog = "import os\\nos.sched_setaffinity(0, {%d})\\nwhile True: pass" % cpu
    hogs = [subprocess.Popen([sys.executable, "-c", hog]) for _ in range(7)]
    try:
        time.sleep(0.5)
        w, t = time.monotonic(), time.thread_time()
        for _ in range(4):
            assert split(text) == pieces
            assert tok.encode_ordinary(text) == want
        print("ok", round((time.monotonic() - w) / (time.thread_time() - t), 1))
    finally:
        for h in hogs:
            h.kill()
            h.wait()
"""


@POSIX
@pytest.mark.skipif(not hasattr(os, "sched_setaffinity"), reason="needs CPU affinity")
def test_machine_load_does_not_drain_the_budget(mod):
    r = run_fresh(mod, LOADED, timeout=300,
                  env={"PYTHONPATH": os.pathsep.join([where(mod), str(DATA.parent)])})
    assert r.returncode == 0 and r.stdout.startswith("ok"), (r.stdout, r.stderr[-3000:])
    assert float(r.stdout.split()[1]) > 3  # the load was real: wall time / CPU time


def test_catastrophic_pattern_in_threads_is_stopped(mod):
    r = run_fresh(mod, """
        import threading, time
        tok = m.Tokenizer.from_merges([], pattern=r"(a|a)*$|[\\s\\S]")
        text = "a" * 40 + "b"
        out = []
        def work():
            try:
                tok.encode(text)
                out.append("encoded")
            except ValueError as e:
                out.append("stopped" if "too long" in str(e) else repr(e))
        t = time.monotonic()
        threads = [threading.Thread(target=work) for _ in range(4)]
        for th in threads:
            th.start()
        for th in threads:
            th.join()
        assert out == ["stopped"] * 4, out
        print("ok", round(time.monotonic() - t))
    """, timeout=180)
    assert r.returncode == 0 and r.stdout.startswith("ok"), r.stderr[-2000:]
    assert int(r.stdout.split()[1]) <= 60


# ---- corrupt sidecars: ValueError naming the file ------------------------------------

@pytest.mark.parametrize("field, value", [
    ("special_tokens", {EOT: 299.0}), ("special_tokens", {EOT: "299"}),
    ("special_tokens", {EOT: True}), ("special_tokens", {EOT: None}),
    ("special_tokens", {EOT: [1]}), ("special_tokens", {EOT: -1}),
    ("special_tokens", {EOT: 2**40}), ("special_tokens", {"": 400}),
    ("special_tokens", [EOT]), ("special_tokens", "x"),
    ("pattern", 5), ("pattern", None), ("pattern", "("), ("pattern", "x*"),
    ("sha256", 5), ("sha256", "abc"), ("sha256", None),
])
def test_corrupt_sidecar_is_a_value_error_naming_it(mod, small, tmp_path, field, value):
    path = tmp_path / "tok.tiktoken"
    meta = small.save_tiktoken(path)
    meta[field] = value
    (tmp_path / "tok.tiktoken.json").write_text(json.dumps(meta))
    with pytest.raises(ValueError) as e:
        mod.Tokenizer.from_file(path)
    assert f"{path}.json" in str(e.value), str(e.value)


@pytest.mark.parametrize("content", ["", "{", "[]", "null", '"x"', "\udcff", '{"pattern": 1}'])
def test_sidecar_that_is_no_json_object_is_a_value_error_naming_it(mod, small, tmp_path, content):
    path = tmp_path / "tok.tiktoken"
    small.save_tiktoken(path)
    (tmp_path / "tok.tiktoken.json").write_bytes(content.encode("utf-8", "surrogateescape"))
    with pytest.raises(ValueError) as e:
        mod.Tokenizer.from_file(path)
    assert f"{path}.json" in str(e.value), str(e.value)


def test_both_backends_read_sidecars_alike(both, tmp_path):
    tok = both[1].Tokenizer.train(read_data("corpus.en", 4000), 300, pattern="words",
                                  special_tokens=["<s>", EOT])
    tok.save_tiktoken(tmp_path / "t.tiktoken")
    got = [m.Tokenizer.from_file(tmp_path / "t.tiktoken") for m in both]
    assert [g.pattern for g in got] == [tok.pattern] * 2
    assert [g.special_tokens for g in got] == [tok.special_tokens] * 2


@POSIX
@pytest.mark.parametrize("call", [
    "m.file_cuts(P, 100)",
    "m.file_cuts('/dev/zero', 100)",
    "m.Tokenizer.train_files([P], 300, workers=1)",
    "m.Tokenizer.from_merges([]).encode_files([P], OUT)",
])
def test_corpus_readers_refuse_a_fifo_at_once(mod, tmp_path, call):
    os.mkfifo(tmp_path / "fifo")
    r = run_fresh(mod, f"""
        P, OUT = sys.argv[1:3]
        try:
            {call}
            print("read")
        except ValueError as e:
            print("ValueError", e)
    """, tmp_path / "fifo", tmp_path / "out.bin", timeout=60)
    assert r.returncode == 0, r.stderr[-2000:]
    assert r.stdout.startswith("ValueError") and "not a regular file" in r.stdout, r.stdout


@POSIX
@pytest.mark.parametrize("case", ["fifo-text", "fifo-tokenizer", "plot-over-eval"])
def test_analyze_tool_refuses_fifos_and_output_over_input(mod, files, tmp_path, case):
    corpus, held, tokfile = files
    os.mkfifo(tmp_path / "fifo")
    args = {"fifo-text": ["compress", tokfile, tmp_path / "fifo"],
            "fifo-tokenizer": ["compress", tmp_path / "fifo", corpus],
            "plot-over-eval": ["curve", corpus, "--sizes", "300", "--eval", held,
                               "--plot", held]}[case]
    before = snapshot(held)
    env = dict(os.environ, PYTHONPATH=where(mod), BPE_OFFLINE="1",
               BPE_BACKEND="python" if mod.__name__ == "bpe_fallback" else "")
    tool = DATA.parent.parent / "tools" / "analyze.py"
    r = subprocess.run([sys.executable, tool, *map(str, args)], capture_output=True, text=True,
                       timeout=60, env=env)
    assert r.returncode == 1, (r.stdout, r.stderr)
    assert "regular file" in r.stderr or "is the input" in r.stderr, r.stderr
    assert snapshot(held) == before
