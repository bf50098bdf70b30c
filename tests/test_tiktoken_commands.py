"""Commands written for tiktoken, on both backends.

- `bpe run COMMAND ARGS...` runs a program that imports tiktoken (a console script's entry
  point, a Python script on PATH or at a path, `-m MODULE`) with this library under
  tiktoken's names: its output and exit status are those it has with tiktoken itself (the
  oracle: the same program run by Python with tiktoken installed).
- The errors tiktoken raises from its public API carry tiktoken's own messages (such programs
  print them to their users); the oracle is the message tiktoken raises.
"""

import base64
import os
import subprocess
import sys
import textwrap

import pytest
from fresh import where

tiktoken = pytest.importorskip("tiktoken")
import tiktoken.load  # noqa: E402, F811 - the real modules, before any patch
import tiktoken.model  # noqa: E402

PATTERN = r"""'s|'t| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S)|\s+"""
SPECIALS = {"<|endoftext|>": 300, "<|fim_prefix|>": 301, "<|end|>": 302}


def ranks():
    table = {bytes([b]): b for b in range(256)}
    for merged in (b"he", b"ll", b"hell", b"hello", b" w", b"or", b" wor", b"ld", b" world"):
        table[merged] = len(table)
    return table


# A program written for tiktoken: reads a rank table with tiktoken.load, prints the ids of
# each argument (allowed_special from --allow), or tiktoken's message and status 3.
FAKETOK = '''
import sys

import tiktoken
import tiktoken.load


def main():
    print(getattr(tiktoken.__spec__, "origin", None), file=sys.stderr)
    path, *texts = sys.argv[1:]
    enc = tiktoken.Encoding("fake", pat_str=PATTERN, special_tokens=SPECIALS,
                            mergeable_ranks=tiktoken.load.load_tiktoken_bpe(path))
    allowed = set()
    for text in texts:
        if text.startswith("--allow="):
            allowed.add(text[len("--allow="):])
            continue
        if text == "--crash":
            enc.encode("<|end|>")  # uncaught: Python's traceback, status 1
        try:
            print(enc.encode(text, allowed_special=allowed), enc.decode(enc.encode_ordinary(text)))
        except ValueError as e:
            print(e)
            return 3
    return 0


if __name__ == "__main__":
    sys.exit(main())
'''.replace("PATTERN", repr(PATTERN)).replace("SPECIALS", repr(SPECIALS))


@pytest.fixture(scope="module")
def program(tmp_path_factory):
    """The program installed three ways in a temporary folder: package `faketok` with a
    console script `faketok` (its dist-info), a script `faketok-script` on PATH; and a
    rank table for it."""
    root = tmp_path_factory.mktemp("faketok")
    (root / "faketok.py").write_text(FAKETOK)
    info = root / "faketok-0.1.dist-info"
    info.mkdir()
    (info / "METADATA").write_text("Metadata-Version: 2.1\nName: faketok\nVersion: 0.1\n")
    (info / "entry_points.txt").write_text("[console_scripts]\nfaketok = faketok:main\n")
    bin_dir = root / "bin"
    bin_dir.mkdir()
    script = bin_dir / "faketok-script"
    script.write_text(f"#!{sys.executable}\nimport sys\nfrom faketok import main\n"
                      f"sys.exit(main())\n")
    script.chmod(0o755)
    table = root / "fake.tiktoken"
    table.write_bytes(b"".join(base64.b64encode(t) + b" %d\n" % i for t, i in ranks().items()))
    return root


def env_for(mod, program):
    env = dict(os.environ, BPE_OFFLINE="1",
               PYTHONPATH=os.pathsep.join([where(mod), str(program)]),
               PATH=os.pathsep.join([str(program / "bin"), os.environ.get("PATH", "")]),
               BPE_BACKEND="python" if mod.__name__ == "bpe_fallback" else "cython")
    env.pop("BPE_DEBUG", None)
    return env


def run(mod, program, argv):
    return subprocess.run([sys.executable, *argv], capture_output=True, text=True, timeout=120,
                          env=env_for(mod, program))


def bpe_run(mod, program, *args):
    return run(mod, program, ["-m", "bpe_fallback", "run", *map(str, args)])


CASES = {
    "ids": ["hello world", "it's 12 worlds!", "--allow=<|endoftext|>", "x<|endoftext|>y"],
    "disallowed": ["hello", "a <|fim_prefix|> b", "never reached"],
}


@pytest.mark.parametrize("case", sorted(CASES))
@pytest.mark.parametrize("how", ["entry point", "script on PATH", "script path", "module"])
def test_bpe_run_gives_what_tiktoken_gives(mod, program, how, case):
    args = [program / "fake.tiktoken", *CASES[case]]
    want = run(mod, program, [str(program / "faketok.py"), *map(str, args)])  # tiktoken's
    assert want.stderr.splitlines()[0].endswith(os.path.join("tiktoken", "__init__.py"))
    command = {"entry point": ["faketok"], "script on PATH": ["faketok-script"],
               "script path": [program / "bin" / "faketok-script"],
               "module": ["-m", "faketok"]}[how]
    got = bpe_run(mod, program, *command, *args)
    assert got.stderr.splitlines()[0] == f"{mod.__name__}.patch_tiktoken()", got.stderr
    assert (got.stdout, got.returncode) == (want.stdout, want.returncode)
    assert want.returncode == (3 if case == "disallowed" else 0)


def test_bpe_run_passes_errors_and_statuses_through(mod, program):
    want = run(mod, program, [str(program / "faketok.py"), str(program / "fake.tiktoken"),
                              "--crash"])
    got = bpe_run(mod, program, "faketok", program / "fake.tiktoken", "--crash")
    assert want.returncode == got.returncode == 1
    # Python's traceback, ending in tiktoken's message
    assert got.stderr.rstrip().splitlines()[-4:] == want.stderr.rstrip().splitlines()[-4:]
    assert got.stderr.splitlines()[1] == "Traceback (most recent call last):"
    for argv, status in [(["-c", "import sys; sys.exit(7)"], 7),
                         (["-c", "raise SystemExit('bye')"], 1)]:
        (program / "bin" / "exits.py").write_text(argv[1])
        done = bpe_run(mod, program, program / "bin" / "exits.py")
        assert done.returncode == status == run(mod, program, argv).returncode
    assert done.stderr == "bye\n"


@pytest.mark.parametrize("command", ["no-such-command-here", "sh", "./no/such/file.py"])
def test_a_command_not_found_is_one_line(mod, program, command):
    done = bpe_run(mod, program, command, "x")
    lines = done.stderr.splitlines()
    assert done.returncode == 127 and done.stdout == ""
    assert len(lines) == 1 and lines[0].startswith("bpe: error: ") and command in lines[0]


# ---- tiktoken's error messages ------------------------------------------------------------

def raised(call):
    try:
        call()
    except Exception as e:  # noqa: BLE001 - what is compared is what was raised
        return e
    raise AssertionError("nothing raised")


def test_errors_carry_tiktokens_messages(mod):
    np = pytest.importorskip("numpy")
    real = tiktoken.Encoding("fake", pat_str=PATTERN, mergeable_ranks=ranks(),
                             special_tokens=SPECIALS)
    ours = mod.Encoding("fake", pat_str=PATTERN, mergeable_ranks=ranks(),
                        special_tokens=SPECIALS)
    calls = {
        "encode": lambda e: e.encode("hello <|endoftext|>"),
        "encode, one name": lambda e: e.encode("a<|end|>b<|fim_prefix|>",
                                               disallowed_special={"<|fim_prefix|>"}),
        "encode, allowed others": lambda e: e.encode("<|end|>", allowed_special={"<|endoftext|>"}),
        "encode_to_numpy": lambda e: e.encode_to_numpy("x<|fim_prefix|>"),
        "encode_batch": lambda e: e.encode_batch(["ok", "x <|end|>"]),
        "encode_with_unstable": lambda e: e.encode_with_unstable("hello <|endoftext|> wor"),
        "encode_single_token": lambda e: e.encode_single_token("hello world"),
        "encode_single_token bytes": lambda e: e.encode_single_token(b"\xff\xfe"),
    }
    for name, call in calls.items():
        want, got = raised(lambda: call(real)), raised(lambda: call(ours))
        assert isinstance(got, type(want)), (name, got, want)
        assert str(got) == str(want), name
    assert np is not None
    for call in (lambda m: m.encoding_for_model("no-such-model"),):
        want, got = raised(lambda: call(tiktoken.model)), raised(lambda: call(mod))
        assert type(got) is type(want) and str(got) == str(want)
    want, got = raised(lambda: tiktoken.get_encoding("nope")), raised(
        lambda: mod.get_encoding("nope"))
    assert type(got) is type(want)
    assert str(got).splitlines()[:2] == str(want).splitlines()[:2]  # then the names it knows
    assert str(got).splitlines()[2] == "Known encodings: " + ", ".join(mod.list_encoding_names())


def test_the_cli_keeps_its_one_line(mod, program, tmp_path):
    """`bpe encode` on a corpus with a disallowed special token: one line, the token named."""
    tok = mod.Encoding("fake", pat_str=PATTERN, mergeable_ranks=ranks(), special_tokens=SPECIALS)
    tok.save(tmp_path / "fake.bpe")
    (tmp_path / "in.txt").write_text("hello <|end|> world")
    done = run(mod, program, ["-m", "bpe_fallback", "encode", "--tokenizer",
                              str(tmp_path / "fake.bpe"), str(tmp_path / "in.txt"), "-o",
                              str(tmp_path / "o.bin")])
    assert done.returncode == 1 and done.stderr == textwrap.dedent("""\
        bpe: error: text contains the disallowed special token '<|end|>': pass --allowed-special \
TOKEN (or all) to encode it as the special token, or --ordinary to encode it as text
        """)
