"""The `bpe` command (console entry point of `pip install .`), run as a subprocess the way a
user runs it, on the backend under test (`mod`; BPE_BACKEND=python selects bpe_fallback).

`bpe train`: every output format is loaded by its own library (the native one by bpe, the
.tiktoken file by tiktoken's own loader, tokenizer.json by Hugging Face tokenizers, the GPT-2
files by bpe.from_gpt2 and by tokenizers' BPE model) and must give exactly the ids of
Tokenizer.train_files with the same options, on held-out texts.  `bpe encode`: the array it
writes is that of Tokenizer.encode_files.  Where the command is not installed beside this
Python (a checkout without `pip install .`), those tests are skipped saying so; CI installs it.
"""

import hashlib
import io
import json
import os
import shutil
import subprocess
import sys
import types
from pathlib import Path

import pytest

from helpers import DATA, EOT, SPECIALS, corpus_with_specials, read_data

REPO = Path(__file__).resolve().parent.parent
BPE = shutil.which("bpe", path=os.path.dirname(sys.executable))
needs_command = pytest.mark.skipif(
    BPE is None, reason=f"the bpe command is not installed beside {sys.executable} (pip install .)")


def tool_env(mod=None, **extra):
    """The environment for a subprocess running on backend `mod` (default: the installed
    bpe), importing the very module files the tests use in-process."""
    env = dict(os.environ)
    env.pop("BPE_DEBUG", None)
    env["BPE_BACKEND"] = "python" if mod is not None and mod.__name__ == "bpe_fallback" else ""
    import bpe_fallback

    where = {os.path.dirname(os.path.abspath(bpe_fallback.__file__))}
    if mod is not None:
        where.add(os.path.dirname(os.path.abspath(mod.__file__)))
    env["PYTHONPATH"] = os.pathsep.join(sorted(where) + [p for p in [env.get("PYTHONPATH")] if p])
    env.update(extra)
    return env


def run_tool(command, args, *, mod=None, cwd=None, stdin=None, env=None):
    """Run a command line: `command` is a list (e.g. [BPE] or [python, script])."""
    return subprocess.run(
        [*map(str, command), *map(str, args)],
        capture_output=True,
        text=True,
        encoding="utf-8",
        cwd=cwd,
        input=stdin,
        env=env or tool_env(mod),
        timeout=300,
    )


def bpe(args, **kw):
    """`bpe ARGS...` through the installed entry point."""
    if BPE is None:
        pytest.skip(f"the bpe command is not installed beside {sys.executable} (pip install .)")
    return run_tool([BPE], args, **kw)


def train(args, **kw):
    return bpe(["train", *args], **kw)


def assert_ok(result):
    assert result.returncode == 0, result.stderr
    assert "Traceback" not in result.stderr, result.stderr


def assert_one_line_error(result, prog="bpe", *needles):
    assert result.returncode != 0, (result.stdout, result.stderr)
    assert "Traceback" not in result.stderr, result.stderr
    lines = result.stderr.splitlines()
    assert len(lines) == 1, result.stderr
    assert lines[0].startswith(f"{prog}: error: "), lines[0]
    for needle in needles:
        assert needle in lines[0], lines[0]
    return lines[0]


def run_in_process(argv, monkeypatch, capsys, cwd=None, stdin=""):
    """bpe_fallback.main(argv) -- the function the entry point calls -- in this process:
    (returncode, stdout, stderr)."""
    import bpe_fallback

    monkeypatch.delenv("BPE_DEBUG", raising=False)
    monkeypatch.delenv("BPE_BACKEND", raising=False)
    monkeypatch.setattr(sys, "stdin", io.TextIOWrapper(io.BytesIO(stdin.encode())))
    if cwd is not None:
        monkeypatch.chdir(cwd)
    capsys.readouterr()
    code = bpe_fallback.main([str(a) for a in argv])
    out, err = capsys.readouterr()
    return types.SimpleNamespace(returncode=code, stdout=out, stderr=err)


HELD_OUT = {
    "german": read_data("german.txt"),
    "tinystories": read_data("tinystories_sample.txt"),  # holds <|endoftext|>
    "address": read_data("address.txt"),
    "corpus_rest": read_data("corpus.en")[60000:66000],
    "mixed": f"Hello{EOT}world <|pad|> it's 2024 \u65e5\u672c\u8a9e \U0001f389\n\n  end",
}


@pytest.fixture(scope="session")
def train_path(tmp_path_factory):
    """~40 KB of corpus.en, with <|endoftext|> and <|pad|> in it: the training text."""
    path = tmp_path_factory.mktemp("corpus") / "train.txt"
    path.write_bytes(corpus_with_specials(40000).encode("utf-8"))
    return path


# (format, extra options, train_files keywords)
CASES = {
    "native": ("native", [], {}),
    "tiktoken": ("tiktoken", [], {}),
    "huggingface": ("huggingface", [], {}),
    "gpt2": ("gpt2", [], {}),
    "native-cl100k": ("native", ["--pattern", "cl100k", "--max-token-bytes", "5",
                                 "--min-frequency", "3"],
                      {"pattern": "cl100k", "max_token_bytes": 5, "min_frequency": 3}),
    "tiktoken-regex": ("tiktoken", ["--pattern", r"\w+|[^\w\s]+|\s+"],
                       {"pattern": r"\w+|[^\w\s]+|\s+"}),
    "huggingface-words": ("huggingface", ["--pattern", "words"], {"pattern": "words"}),
    "gpt2-o200k": ("gpt2", ["--pattern", "o200k"], {"pattern": "o200k"}),
}
VOCAB = 500

_expected = {}


def expected(mod, path, options):
    key = (mod.__name__, str(path), tuple(sorted(options.items())))
    if key not in _expected:
        _expected[key] = mod.Tokenizer.train_files([str(path)], VOCAB, special_tokens=SPECIALS,
                                                   **options)
    return _expected[key]


def tiktoken_ids(out, texts):
    tiktoken = pytest.importorskip("tiktoken")
    from tiktoken.load import load_tiktoken_bpe

    with open(str(out) + ".json", encoding="utf-8") as f:
        meta = json.load(f)
    ranks = load_tiktoken_bpe(str(out), expected_hash=meta["sha256"])
    enc = tiktoken.Encoding("dumped", pat_str=meta["pattern"], mergeable_ranks=ranks,
                            special_tokens=meta["special_tokens"])
    return meta, {k: enc.encode(t, allowed_special="all") for k, t in texts.items()}


def hf_ids(hf, texts):
    return {k: hf.encode(t, add_special_tokens=False).ids for k, t in texts.items()}


def hf_from_gpt2_files(directory, pattern, specials):
    """tokenizers' own BPE model over vocab.json + merges.txt, byte-level, with the pattern."""
    tokenizers = pytest.importorskip("tokenizers")
    from tokenizers import Regex, decoders, models, pre_tokenizers

    model = models.BPE.from_file(str(directory / "vocab.json"), str(directory / "merges.txt"))
    hf = tokenizers.Tokenizer(model)
    hf.pre_tokenizer = pre_tokenizers.Sequence([
        pre_tokenizers.Split(Regex(pattern), behavior="isolated"),
        pre_tokenizers.ByteLevel(add_prefix_space=False, use_regex=False),
    ])
    hf.decoder = decoders.ByteLevel()
    hf.add_special_tokens(list(specials))
    return hf


@pytest.mark.parametrize("case", list(CASES))
def test_every_format_loads_in_its_library_with_the_ids_of_train_files(
        mod, case, train_path, tmp_path, monkeypatch):
    fmt, extra, options = CASES[case]
    monkeypatch.setenv("TIKTOKEN_CACHE_DIR", "")  # tiktoken: keep no cached copy
    out = tmp_path / {"native": "tok.bpe", "tiktoken": "tok.tiktoken",
                      "huggingface": "tokenizer.json", "gpt2": "gpt2-dir"}[fmt]
    special_args = [a for s in SPECIALS for a in ("--special", s)]
    result = train([train_path, "--vocab-size", VOCAB, "--format", fmt, "-o", out,
                             "--workers", "1", *special_args, *extra], mod=mod)
    assert_ok(result)
    want = expected(mod, train_path, options)
    assert len(want.merges) > 100
    want_ids = {k: want.encode(t, allowed_special="all") for k, t in HELD_OUT.items()}

    if fmt == "native":
        assert mod.Tokenizer.load(str(out)) == want
        got = {k: mod.Tokenizer.load(str(out)).encode(t, allowed_special="all")
               for k, t in HELD_OUT.items()}
        assert got == want_ids
    elif fmt == "tiktoken":
        meta, got = tiktoken_ids(out, HELD_OUT)
        assert meta == {"pattern": want.pattern, "special_tokens": want.special_tokens,
                        "sha256": hashlib.sha256(out.read_bytes()).hexdigest()}
        assert got == want_ids
        back = mod.Tokenizer.from_tiktoken(str(out), pattern=meta["pattern"],
                                           special_tokens=meta["special_tokens"])
        assert back == want
        assert "load_tiktoken_bpe" in result.stdout  # the hint names tiktoken's loader
    elif fmt == "huggingface":
        tokenizers = pytest.importorskip("tokenizers")
        assert hf_ids(tokenizers.Tokenizer.from_file(str(out)), HELD_OUT) == want_ids
        assert mod.Tokenizer.from_huggingface(str(out)) == want
    else:
        assert sorted(os.listdir(out)) == ["merges.txt", "vocab.json"]
        back = mod.Tokenizer.from_gpt2(str(out / "vocab.json"), str(out / "merges.txt"),
                                       pattern=options.get("pattern", "gpt2"))
        assert back == want
        assert {k: back.encode(t, allowed_special="all") for k, t in HELD_OUT.items()} == want_ids
        hf = hf_from_gpt2_files(out, want.pattern, SPECIALS)
        assert hf_ids(hf, HELD_OUT) == want_ids
        if "pattern" in options:  # the hint says which pattern to pass
            assert f"pattern={options['pattern']!r}" in result.stdout


def test_summary(train_path, tmp_path):
    out = tmp_path / "tok.bpe"
    result = train([train_path, "--vocab-size", 400, "--special", EOT, "-o", out,
                             "--eval", DATA / "german.txt", "--eval", DATA / "address.txt"])
    assert_ok(result)
    assert result.stderr == ""  # stderr is no terminal: no progress
    lines = dict(line.split(None, 1) for line in result.stdout.splitlines())
    assert "143 of 143 learned" in lines["merges"]
    assert "vocab_size 400 (1 special)" in lines["merges"]
    assert "distinct" in lines["pre-tokens"]
    assert "bytes per token on the training text" in lines["compression"]
    assert "german.txt" in result.stdout and "address.txt" in result.stdout
    assert str(out) in lines["wrote"]
    # the numbers are those of the tokenizer written
    import bpe

    tok = bpe.Tokenizer.load(str(out))
    text = train_path.read_text(encoding="utf-8")
    n = len(tok.encode(text, allowed_special="all"))
    assert f"({n:,} tokens)" in lines["compression"]
    assert f"{len(text.encode()) / n:.2f} bytes per token" in lines["compression"]
    longest = max((t for i, t in tok.vocab.items() if 256 <= i < 256 + len(tok.merges)), key=len)
    assert repr(longest.decode("utf-8", "backslashreplace")) in lines["longest"]


def test_stopping_early_is_reported(tmp_path):
    src = tmp_path / "tiny.txt"
    src.write_text("abab abab cdcd\n", encoding="utf-8")
    result = train([src, "--vocab-size", 1000, "-o", tmp_path / "t.bpe"])
    assert_ok(result)
    assert "stopped early" in result.stdout


def test_quiet_and_progress(train_path, tmp_path):
    quiet = train([train_path, "--vocab-size", 300, "-o", tmp_path / "a.bpe", "-q"])
    assert_ok(quiet)
    assert quiet.stdout == "" and quiet.stderr == ""
    forced = train([train_path, "--vocab-size", 300, "-o", tmp_path / "b.bpe", "-q",
                             "--progress"])
    assert_ok(forced)
    assert forced.stdout == ""
    err = forced.stderr
    assert "\r" not in err  # not a terminal: whole lines only
    assert "counted" in err and "distinct pre-tokens" in err
    assert "learned 44 merges" in err
    assert (tmp_path / "a.bpe").read_bytes() == (tmp_path / "b.bpe").read_bytes()


def test_stdin_equals_train_files(mod, tmp_path):
    text = read_data("tinystories_sample.txt") + read_data("german.txt")
    src = tmp_path / "same.txt"
    src.write_bytes(text.encode("utf-8"))
    result = train(["-", "--vocab-size", 320, "--special", EOT, "-o",
                             tmp_path / "stdin.bpe", "-q"], mod=mod, stdin=text)
    assert_ok(result)
    got = mod.Tokenizer.load(str(tmp_path / "stdin.bpe"))
    assert got == mod.Tokenizer.train_files([str(src)], 320, special_tokens=[EOT])
    assert got == mod.Tokenizer.train(text, 320, special_tokens=[EOT])
    # stdin among files: each input is one document, as train_files reads files
    other = DATA / "address.txt"
    result = train([other, "-", "--vocab-size", 320, "-o", tmp_path / "mix.bpe", "-q"],
                            mod=mod, stdin=text)
    assert_ok(result)
    assert (mod.Tokenizer.load(str(tmp_path / "mix.bpe"))
            == mod.Tokenizer.train_files([str(other), str(src)], 320))


def test_stdin_is_named_dash_in_the_sidecar(mod, tmp_path):
    text = read_data("german.txt")
    assert_ok(train([DATA / "german.txt", "--vocab-size", 300, "-o", tmp_path / "t.bpe", "-q"],
                    mod=mod))
    assert_ok(bpe(["encode", "-t", tmp_path / "t.bpe", DATA / "address.txt", "-", "-o",
                   tmp_path / "ids.bin", "-q"], mod=mod, stdin=text))
    meta = json.loads((tmp_path / "ids.bin.json").read_text())
    assert [i["path"] for i in meta["inputs"]] == [str(DATA / "address.txt"), "-"]


def test_invalid_utf8_is_a_one_line_warning(tmp_path):
    src = tmp_path / "bad.txt"
    src.write_bytes(b"abc \xff\xfe def abc abc\n" * 3)
    result = train([src, "--vocab-size", 260, "-q", "-o", tmp_path / "bad.bpe"])
    assert_ok(result)
    lines = result.stderr.splitlines()
    assert len(lines) == 1 and lines[0].startswith("bpe: warning: "), result.stderr
    assert "invalid UTF-8" in lines[0]


def bad_invocations(tmp_path, setup=True):
    german = DATA / "german.txt"
    afile = tmp_path / "a-file"
    if setup:
        afile.write_text("x")
        (tmp_path / "a-dir").mkdir()
        (tmp_path / "junk.bpe").write_text("#bpe-tokenizer 1\npattern oops\n")
        import bpe_fallback

        bpe_fallback.Tokenizer.from_merges([], special_tokens=[EOT]).save(
            str(tmp_path / "good.bpe")
        )
    good = tmp_path / "good.bpe"
    return {
        "missing input": (["train", tmp_path / "nope.txt", "--vocab-size", 300], "no such file"),
        "input is a directory": (["train", tmp_path, "--vocab-size", 300], "is a directory"),
        "vocab below 256": (["train", german, "--vocab-size", 100], "at least 256"),
        "vocab below 256 + specials": (
            ["train", german, "--vocab-size", 257, "--special", "<a>", "--special", "<b>"],
            "at least 258",
        ),
        "vocab huge": (["train", german, "--vocab-size", "99999999999999999999"], "at most"),
        "no vocab size": (["train", german], "--vocab-size"),
        "vocab not a number": (["train", german, "--vocab-size", "many"], "invalid int"),
        "invalid regex": (
            ["train", german, "--vocab-size", 300, "--pattern", "(unclosed"],
            "invalid pattern",
        ),
        "unknown format": (
            ["train", german, "--vocab-size", 300, "--format", "xml"],
            "invalid choice",
        ),
        "output dir is a file": (
            ["train", german, "--vocab-size", 300, "-o", Path(german) / "no" / "t.bpe"],
            "is not a directory",
        ),
        "output under a file": (
            ["train", german, "--vocab-size", 300, "-o", afile / "t.bpe"],
            "not a directory",
        ),
        "output is a directory": (
            ["train", german, "--vocab-size", 300, "-o", tmp_path / "a-dir"],
            "is a directory",
        ),
        "gpt2 output is a file": (
            ["train", german, "--vocab-size", 300, "--format", "gpt2", "-o", afile],
            "not a directory",
        ),
        "output is the input": (["train", afile, "--vocab-size", 300, "-o", afile], "is the input"),
        "missing eval": (
            ["train", german, "--vocab-size", 300, "--eval", tmp_path / "nope"],
            "no such eval file",
        ),
        "workers 0": (["train", german, "--vocab-size", 300, "--workers", 0], "--workers"),
        "special twice": (
            ["train", german, "--vocab-size", 300, "--special", "x", "--special", "x"],
            "twice",
        ),
        "empty special": (["train", german, "--vocab-size", 300, "--special", ""], "empty"),
        "negative min frequency": (
            ["train", german, "--vocab-size", 300, "--min-frequency", -1],
            "--min-frequency",
        ),
        "unknown option": (["train", german, "--vocab-size", 300, "--colour"], "unrecognized"),
        # refused by the library when writing, after training
        "special equals a byte token": (
            [
                "train",
                german,
                "--vocab-size",
                300,
                "--special",
                "a",
                "--format",
                "huggingface",
                "-o",
                tmp_path / "t.json",
            ],
            "special token 'a'",
        ),
        "stdin twice": (["train", "-", "-", "--vocab-size", 300], "only once"),
        "no command": ([], "required"),
        "encode: missing tokenizer": (
            ["encode", "--tokenizer", tmp_path / "nope.bpe", german, "-o", tmp_path / "x.bin"],
            "no such tokenizer",
        ),
        "encode: corrupt tokenizer": (
            ["encode", "-t", tmp_path / "junk.bpe", german, "-o", tmp_path / "x.bin"],
            "junk.bpe",
        ),
        "encode: no output": (["encode", "-t", tmp_path / "junk.bpe", german], "-o/--output"),
        "encode: missing input": (
            ["encode", "-t", good, tmp_path / "nope", "-o", tmp_path / "x.bin"],
            "no such file",
        ),
        "encode: output dir is a file": (
            ["encode", "-t", tmp_path / "junk.bpe", german, "-o", Path(german) / "x.bin"],
            "is not a directory",
        ),
        "encode: unknown eot": (
            ["encode", "-t", good, german, "-o", tmp_path / "x.bin", "--eot", "<|nope|>"],
            "eot '<|nope|>' is not a special token",
        ),
        "encode: special in the text": (
            ["encode", "-t", good, DATA / "tinystories_sample.txt", "-o", tmp_path / "x.bin"],
            "--allowed-special",
        ),
        "encode: bad dtype": (
            ["encode", "-t", good, german, "-o", tmp_path / "x.bin", "--dtype", "int8"],
            "invalid choice",
        ),
    }


BAD = list(bad_invocations(Path("/nonexistent"), setup=False))
# some through the installed entry point, the others in-process through the function it
# calls (bpe_fallback.main)
AS_PROCESS = {"missing input", "vocab below 256 + specials", "invalid regex", "vocab huge",
              "output dir is a file", "unknown format", "encode: special in the text", "no command"}


@pytest.mark.parametrize("name", BAD)
def test_bad_invocation_is_one_line(name, tmp_path, monkeypatch, capsys):
    args, needle = bad_invocations(tmp_path)[name]
    before = set(os.listdir(tmp_path))
    if name in AS_PROCESS:
        result = bpe(args, cwd=tmp_path, stdin="")
    else:
        result = run_in_process(args, monkeypatch, capsys, cwd=tmp_path)
    assert_one_line_error(result, "bpe", needle)
    assert result.stdout == ""
    assert set(os.listdir(tmp_path)) == before  # nothing written


def test_bad_backend_name(tmp_path):
    result = train([DATA / "german.txt", "--vocab-size", 300], cwd=tmp_path,
                   env=tool_env(BPE_BACKEND="java"))
    assert_one_line_error(result, "bpe", "BPE_BACKEND")


def test_python_backend_is_used(train_path, tmp_path):
    result = train([train_path, "--vocab-size", 300, "-o", tmp_path / "t.bpe"],
                   env=tool_env(BPE_BACKEND="python"))
    assert_ok(result)
    assert result.stdout.splitlines()[0].split() == ["backend", "python"]


def test_help():
    for args, words in ((["--help"], ("train", "encode")),
                        (["train", "--help"], ("--vocab-size", "--format", "tiktoken",
                                               "huggingface", "gpt2", "--eval")),
                        (["encode", "--help"], ("--tokenizer", "--eot", "--dtype", "--jsonl",
                                                "--allowed-special", "numpy.memmap"))):
        result = bpe(args)
        assert_ok(result)
        for word in words:
            assert word in result.stdout, (args, word)


# ---- bpe encode ---------------------------------------------------------------------------


@pytest.fixture(scope="session")
def saved(tmp_path_factory, train_path):
    """A tokenizer trained on train_path with the specials, saved in every format."""
    import bpe_fallback

    where = tmp_path_factory.mktemp("saved")
    tok = bpe_fallback.Tokenizer.train_files([str(train_path)], VOCAB, special_tokens=SPECIALS)
    tok.save(str(where / "tok.bpe"))
    tok.save_huggingface(str(where / "tokenizer.json"))
    tok.save_gpt2(str(where / "gpt2"))
    return tok, where


def read_ids(path, dtype="uint16"):
    import array

    ids = array.array({"uint16": "H", "uint32": "I"}[dtype])
    ids.frombytes(Path(path).read_bytes())
    if sys.byteorder == "big":
        ids.byteswap()
    return ids.tolist()


@pytest.mark.parametrize("spec", ["tok.bpe", "tokenizer.json", "gpt2"])
def test_encode_equals_encode_files(mod, saved, tmp_path, spec):
    tok, where = saved
    inputs = [DATA / "tinystories_sample.txt", DATA / "german.txt", DATA / "corpus.en"]
    out = tmp_path / "train.bin"
    result = bpe(["encode", "--tokenizer", where / spec, *inputs, "-o", out, "--eot", EOT,
                  "--allowed-special", "all", "--workers", "2"], mod=mod)
    assert_ok(result)
    ref = tok.encode_files(inputs, tmp_path / "ref.bin", eot=EOT, allowed_special="all")
    assert out.read_bytes() == (tmp_path / "ref.bin").read_bytes()
    meta = json.loads((tmp_path / "train.bin.json").read_text())
    assert meta["count"] == ref["count"] and meta["documents"] == ref["documents"]
    lines = dict(line.split(None, 1) for line in result.stdout.splitlines() if line[:1] != " ")
    assert f"{ref['count']:,} uint16" in lines["ids"] and "3 documents" in lines["inputs"]
    assert "numpy.memmap('" in result.stdout


def test_encode_options(mod, saved, tmp_path):
    tok, where = saved
    story = DATA / "tinystories_sample.txt"
    text = read_data("tinystories_sample.txt")
    r = bpe(
        ["encode", "-t", where / "tok.bpe", story, "-o", tmp_path / "o.bin", "--ordinary", "-q"],
        mod=mod,
    )
    assert_ok(r)
    assert r.stdout == "" and read_ids(tmp_path / "o.bin") == tok.encode_ordinary(text)
    r = bpe(["encode", "-t", where / "tok.bpe", story, "-o", tmp_path / "a.bin", "-q",
             "--allowed-special", EOT, "--dtype", "uint32"], mod=mod)
    assert_ok(r)
    assert read_ids(tmp_path / "a.bin", "uint32") == tok.encode(text, allowed_special={EOT})
    records = tmp_path / "docs.txt"
    records.write_text("".join(json.dumps({"body": d}) + "\n" for d in ("one doc", "two docs")))
    r = bpe(["encode", "-t", where / "tok.bpe", records, "--jsonl", "--text-field", "body",
             "--eot", "<|pad|>", "-o", tmp_path / "j.bin", "-q"], mod=mod)
    assert_ok(r)
    pad = tok.special_tokens["<|pad|>"]
    assert read_ids(tmp_path / "j.bin") == tok.encode("one doc") + [pad] + tok.encode(
        "two docs"
    ) + [pad]
    r = bpe(["encode", "-t", where / "tok.bpe", "-", "-o", tmp_path / "s.bin", "-q", "--progress"],
            mod=mod, stdin="read from standard input")
    assert_ok(r)
    assert read_ids(tmp_path / "s.bin") == tok.encode("read from standard input")
    assert r.stderr.startswith("encoded 24 bytes in ")  # --progress: lines, not a terminal


def test_python_dash_m_without_the_command(mod, tmp_path):
    """`python -m bpe_fallback` is the same command, for a vendored copy of the file."""
    out = tmp_path / "t.bpe"
    r = run_tool([sys.executable, "-m", "bpe_fallback"],
                 ["train", DATA / "german.txt", "--vocab-size", 300, "-o", out, "-q"], mod=mod)
    assert_ok(r)
    assert mod.Tokenizer.load(str(out)) == mod.Tokenizer.train_files(
        [str(DATA / "german.txt")], 300
    )
    r = run_tool(
        [sys.executable, "-m", "bpe_fallback"],
        ["encode", "-t", out, DATA / "german.txt", "-o", tmp_path / "g.bin", "--workers", 2, "-q"],
        mod=mod,
    )
    assert_ok(r)
    tok = mod.Tokenizer.load(str(out))
    assert read_ids(tmp_path / "g.bin") == tok.encode(read_data("german.txt"))


def test_train_and_dump_tool(tmp_path):
    """tools/train_and_dump.py is `bpe train`; with no arguments it trains the sample."""
    import bpe

    tool = [sys.executable, REPO / "tools" / "train_and_dump.py"]
    result = run_tool(tool, [], cwd=tmp_path)
    assert_ok(result)
    assert "sample.bpe" in result.stdout
    got = bpe.Tokenizer.load(str(tmp_path / "sample.bpe"))
    assert got == bpe.Tokenizer.train_files([str(DATA / "corpus.en")], 1000, special_tokens=[EOT])
    assert got.vocab_size == 1000 and got.special_tokens == {EOT: 999}
    result = run_tool(tool, [DATA / "german.txt", "--vocab-size", 300, "-o", tmp_path / "g.bpe",
                             "--format", "huggingface"])
    assert_ok(result)
    assert bpe.Tokenizer.from_file(str(tmp_path / "g.bpe")) == bpe.Tokenizer.train_files(
        [str(DATA / "german.txt")], 300)
