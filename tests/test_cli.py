"""tools/train_and_dump.py, run as a subprocess the way a user runs it.

Every output format is loaded by its own library (the native one by bpe, the .tiktoken
file by tiktoken's own loader, tokenizer.json by Hugging Face tokenizers, the GPT-2 files
by bpe.from_gpt2 and by tokenizers' BPE model) and must give exactly the ids of
Tokenizer.train_files with the same options, on held-out texts.  The tool runs on the
backend under test (`mod`): BPE_BACKEND=python makes it use bpe_fallback.
"""

import hashlib
import importlib
import io
import json
import os
import subprocess
import sys
import types
import warnings
from pathlib import Path

import pytest

from helpers import DATA, EOT, SPECIALS, corpus_with_specials, read_data

REPO = Path(__file__).resolve().parent.parent
TOOL = REPO / "tools" / "train_and_dump.py"

HELD_OUT = {
    "german": read_data("german.txt"),
    "tinystories": read_data("tinystories_sample.txt"),  # holds <|endoftext|>
    "address": read_data("address.txt"),
    "corpus_rest": read_data("corpus.en")[60000:66000],
    "mixed": f"Hello{EOT}world <|pad|> it's 2024 \u65e5\u672c\u8a9e \U0001f389\n\n  end",
}


def tool_env(mod=None, **extra):
    """The environment for a tool subprocess running on backend `mod` (default: the
    installed bpe), importing the very module file the tests use in-process."""
    env = dict(os.environ)
    env.pop("BPE_DEBUG", None)
    env["BPE_BACKEND"] = "python" if mod is not None and mod.__name__ == "bpe_fallback" else ""
    if mod is not None:
        where = os.path.dirname(os.path.abspath(mod.__file__))
        env["PYTHONPATH"] = os.pathsep.join([where] + [p for p in [env.get("PYTHONPATH")] if p])
    env.update(extra)
    return env


def run_tool(tool, args, *, mod=None, cwd=None, stdin=None, env=None):
    return subprocess.run(
        [sys.executable, str(tool), *map(str, args)],
        capture_output=True,
        text=True,
        encoding="utf-8",
        cwd=cwd,
        input=stdin,
        env=env or tool_env(mod),
        timeout=300,
    )


def train_and_dump(args, **kw):
    return run_tool(TOOL, args, **kw)


def assert_ok(result):
    assert result.returncode == 0, result.stderr
    assert "Traceback" not in result.stderr, result.stderr


def assert_one_line_error(result, prog="train_and_dump", *needles):
    assert result.returncode != 0, (result.stdout, result.stderr)
    assert "Traceback" not in result.stderr, result.stderr
    lines = result.stderr.splitlines()
    assert len(lines) == 1, result.stderr
    assert lines[0].startswith(f"{prog}: error: "), lines[0]
    for needle in needles:
        assert needle in lines[0], lines[0]
    return lines[0]


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
    result = train_and_dump([train_path, "--vocab-size", VOCAB, "--format", fmt, "-o", out,
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
    result = train_and_dump([train_path, "--vocab-size", 400, "--special", EOT, "-o", out,
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
    result = train_and_dump([src, "--vocab-size", 1000, "-o", tmp_path / "t.bpe"])
    assert_ok(result)
    assert "stopped early" in result.stdout


def test_quiet_and_progress(train_path, tmp_path):
    quiet = train_and_dump([train_path, "--vocab-size", 300, "-o", tmp_path / "a.bpe", "-q"])
    assert_ok(quiet)
    assert quiet.stdout == "" and quiet.stderr == ""
    forced = train_and_dump([train_path, "--vocab-size", 300, "-o", tmp_path / "b.bpe", "-q",
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
    result = train_and_dump(["-", "--vocab-size", 320, "--special", EOT, "-o",
                             tmp_path / "stdin.bpe", "-q"], mod=mod, stdin=text)
    assert_ok(result)
    got = mod.Tokenizer.load(str(tmp_path / "stdin.bpe"))
    assert got == mod.Tokenizer.train_files([str(src)], 320, special_tokens=[EOT])
    assert got == mod.Tokenizer.train(text, 320, special_tokens=[EOT])
    # stdin among files: each input is one document, as train_files reads files
    other = DATA / "address.txt"
    result = train_and_dump([other, "-", "--vocab-size", 320, "-o", tmp_path / "mix.bpe", "-q"],
                            mod=mod, stdin=text)
    assert_ok(result)
    assert (mod.Tokenizer.load(str(tmp_path / "mix.bpe"))
            == mod.Tokenizer.train_files([str(other), str(src)], 320))


def test_no_arguments_trains_the_sample(tmp_path):
    import bpe

    result = train_and_dump([], cwd=tmp_path)
    assert_ok(result)
    assert "sample.bpe" in result.stdout
    got = bpe.Tokenizer.load(str(tmp_path / "sample.bpe"))
    assert got == bpe.Tokenizer.train_files([str(DATA / "corpus.en")], 1000, special_tokens=[EOT])
    assert got.vocab_size == 1000 and got.special_tokens == {EOT: 999}


def test_invalid_utf8_is_a_one_line_warning(tmp_path):
    src = tmp_path / "bad.txt"
    src.write_bytes(b"abc \xff\xfe def abc abc\n" * 3)
    result = train_and_dump([src, "--vocab-size", 260, "-q", "-o", tmp_path / "bad.bpe"])
    assert_ok(result)
    lines = result.stderr.splitlines()
    assert len(lines) == 1 and lines[0].startswith("train_and_dump: warning: "), result.stderr
    assert "invalid UTF-8" in lines[0]


def bad_invocations(tmp_path, setup=True):
    german = DATA / "german.txt"
    afile = tmp_path / "a-file"
    if setup:
        afile.write_text("x")
        (tmp_path / "a-dir").mkdir()
    return {
        "missing input": ([tmp_path / "nope.txt", "--vocab-size", 300], "no such file"),
        "input is a directory": ([tmp_path, "--vocab-size", 300], "is a directory"),
        "vocab below 256": ([german, "--vocab-size", 100], "at least 256"),
        "vocab below 256 + specials": ([german, "--vocab-size", 257, "--special", "<a>",
                                        "--special", "<b>"], "at least 258"),
        "no vocab size": ([german], "--vocab-size is required"),
        "vocab not a number": ([german, "--vocab-size", "many"], "invalid int"),
        "invalid regex": ([german, "--vocab-size", 300, "--pattern", "(unclosed"],
                          "invalid pattern"),
        "unknown format": ([german, "--vocab-size", 300, "--format", "xml"], "invalid choice"),
        "output dir missing": ([german, "--vocab-size", 300, "-o", tmp_path / "no" / "t.bpe"],
                               "does not exist"),
        "output under a file": ([german, "--vocab-size", 300, "-o", afile / "t.bpe"],
                                "not a directory"),
        "output is a directory": ([german, "--vocab-size", 300, "-o", tmp_path / "a-dir"],
                                  "is a directory"),
        "gpt2 output is a file": ([german, "--vocab-size", 300, "--format", "gpt2", "-o", afile],
                                  "not a directory"),
        "output is the input": ([afile, "--vocab-size", 300, "-o", afile], "is the input"),
        "missing eval": ([german, "--vocab-size", 300, "--eval", tmp_path / "nope"],
                         "no such eval file"),
        "workers 0": ([german, "--vocab-size", 300, "--workers", 0], "--workers"),
        "special twice": ([german, "--vocab-size", 300, "--special", "x", "--special", "x"],
                          "twice"),
        "empty special": ([german, "--vocab-size", 300, "--special", ""], "empty"),
        "negative min frequency": ([german, "--vocab-size", 300, "--min-frequency", -1],
                                   "--min-frequency"),
        "unknown option": ([german, "--vocab-size", 300, "--colour"], "unrecognized"),
        # refused by the library when writing, after training
        "special equals a byte token": ([german, "--vocab-size", 300, "--special", "a",
                                         "--format", "huggingface", "-o", tmp_path / "t.json"],
                                        "special token 'a'"),
        "stdin twice": (["-", "-", "--vocab-size", 300], "only once"),
    }


BAD = list(bad_invocations(Path("/nonexistent"), setup=False))
# the bad invocations the issue names run as real processes; the others in-process,
# through the same entry point (`run(main, PROG)`) that the script's __main__ calls
AS_PROCESS = {"missing input", "vocab below 256 + specials", "invalid regex",
              "output dir missing", "unknown format"}


@pytest.mark.parametrize("name", BAD)
def test_bad_invocation_is_one_line(name, tmp_path, monkeypatch, capsys):
    args, needle = bad_invocations(tmp_path)[name]
    before = set(os.listdir(tmp_path))
    if name in AS_PROCESS:
        result = train_and_dump(args, cwd=tmp_path, stdin="")
    else:
        result = run_in_process("train_and_dump", args, monkeypatch, capsys, cwd=tmp_path)
    assert_one_line_error(result, "train_and_dump", needle)
    assert result.stdout == ""
    assert set(os.listdir(tmp_path)) == before  # nothing written


def run_in_process(tool, args, monkeypatch, capsys, cwd=None, stdin=""):
    """Run tools/<tool>.py's entry point in this process: (returncode, stdout, stderr)."""
    monkeypatch.syspath_prepend(str(REPO / "tools"))
    module = importlib.import_module(tool)
    monkeypatch.setattr(warnings, "showwarning", warnings.showwarning)  # the tool sets it
    monkeypatch.delenv("BPE_DEBUG", raising=False)
    monkeypatch.delenv("BPE_BACKEND", raising=False)
    monkeypatch.setattr(sys, "stdin", io.TextIOWrapper(io.BytesIO(stdin.encode())))
    if cwd is not None:
        monkeypatch.chdir(cwd)
    capsys.readouterr()
    code = module.run(module.main, module.PROG, [str(a) for a in args])
    out, err = capsys.readouterr()
    return types.SimpleNamespace(returncode=code, stdout=out, stderr=err)


def test_bad_backend_name(tmp_path):
    result = train_and_dump([], cwd=tmp_path, env=tool_env(BPE_BACKEND="java"))
    assert_one_line_error(result, "train_and_dump", "BPE_BACKEND")


def test_python_backend_is_used(train_path, tmp_path):
    result = train_and_dump([train_path, "--vocab-size", 300, "-o", tmp_path / "t.bpe"],
                            env=tool_env(BPE_BACKEND="python"))
    assert_ok(result)
    assert result.stdout.splitlines()[0].split() == ["backend", "python"]


def test_help():
    result = train_and_dump(["--help"])
    assert_ok(result)
    for word in ("--vocab-size", "--format", "tiktoken", "huggingface", "gpt2", "--eval"):
        assert word in result.stdout
