"""Files are handled safely: an output that is also an input (by path, symlink or hard
link) is refused before anything is written; re-runs and saves keep the modes `open()`
would give; FIFOs, devices and directories are refused before the first byte is read, by
every loader, corpus reader and command."""

import os
import stat
import subprocess
import sys
import time

import pytest
from fresh import POSIX, cli, one_line_error, run_fresh, where

from helpers import DATA, EOT, read_data

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


# ---- outputs that are no regular file: never replaced by one ---------------------------

SAVES = {   # a save, and the file of it that is made something else first
    "save": (lambda t, p: t.save(p / "out"), "out"),
    "save_tiktoken": (lambda t, p: t.save_tiktoken(p / "out"), "out"),
    "its sidecar": (lambda t, p: t.save_tiktoken(p / "out"), "out.json"),
    "save_huggingface": (lambda t, p: t.save_huggingface(p / "out"), "out"),
    "save_gpt2": (lambda t, p: t.save_gpt2(p), "merges.txt"),
    "save_pretrained": (lambda t, p: t.save_pretrained(p, eos_token=EOT), "tokenizer.json"),
    "encode_files": (lambda t, p: t.encode_files([DATA / "corpus.en"], p / "out"), "out"),
    "encode_files' sidecar": (lambda t, p: t.encode_files([DATA / "corpus.en"], p / "out"),
                              "out.json"),
}


def special_file(kind, path):
    """Make `path` a FIFO, or a character device like /dev/null (root only: else skip)."""
    if kind == "fifo":
        os.mkfifo(path)
        return stat.S_ISFIFO
    try:
        os.mknod(path, stat.S_IFCHR | 0o666, os.makedev(1, 3))
    except PermissionError:
        pytest.skip("making a device needs root")
    return stat.S_ISCHR


@POSIX
@pytest.mark.parametrize("kind", ["fifo", "device"])
@pytest.mark.parametrize("save", list(SAVES))
def test_a_save_over_a_fifo_or_device_is_refused_and_leaves_it(mod, small, tmp_path, save,
                                                                kind):
    call, name = SAVES[save]
    still = special_file(kind, tmp_path / name)
    with pytest.raises(ValueError, match="not a regular file"):
        call(small, tmp_path)
    assert still(os.lstat(tmp_path / name).st_mode)
    assert sorted(os.listdir(tmp_path)) == [name]   # nothing else written, no temporary left


@POSIX
def test_a_save_through_a_symlink_writes_the_file_it_names(mod, small, tmp_path):
    (tmp_path / "real").mkdir()
    (tmp_path / "real" / "tok.bpe").write_text("old")
    os.symlink(tmp_path / "real" / "tok.bpe", tmp_path / "link.bpe")
    os.symlink(tmp_path / "real" / "new.bpe", tmp_path / "dangling.bpe")
    for name in ("link.bpe", "dangling.bpe"):
        small.save(tmp_path / name)
        assert os.path.islink(tmp_path / name)
        assert mod.Tokenizer.load(os.path.realpath(tmp_path / name)) == small
    os.symlink(tmp_path / "loop", tmp_path / "loop")
    with pytest.raises(ValueError, match="cannot write"):
        small.save(tmp_path / "loop")


@POSIX
@pytest.mark.parametrize("command", ["train", "encode", "decode"])
def test_commands_refuse_an_output_that_is_a_fifo(mod, files, tmp_path, command):
    corpus, _, tokfile = files
    os.mkfifo(tmp_path / "fifo")
    r = cli(mod, "encode", corpus, "-t", tokfile, "-o", tmp_path / "ids.bin", "-q")
    assert r.returncode == 0, r.stderr
    args = {"train": ["train", corpus, "--vocab-size", 280],
            "encode": ["encode", corpus, "-t", tokfile],
            "decode": ["decode", "-t", tokfile, tmp_path / "ids.bin"]}[command]
    started = time.monotonic()
    quiet = ["-q"] if command != "decode" else []
    r = cli(mod, *args, "-o", tmp_path / "fifo", *quiet, timeout=60)
    one_line_error(r, "FIFO")
    assert time.monotonic() - started < 30
    assert stat.S_ISFIFO(os.lstat(tmp_path / "fifo").st_mode)


def test_decode_to_a_dash_writes_standard_output(mod, files, tmp_path):
    corpus, _, tokfile = files
    r = cli(mod, "encode", corpus, "-t", tokfile, "-o", tmp_path / "ids.bin", "-q")
    assert r.returncode == 0, r.stderr
    r = cli(mod, "decode", "-t", tokfile, tmp_path / "ids.bin", "-o", "-", cwd=tmp_path)
    assert r.returncode == 0, r.stderr
    assert r.stdout == corpus.read_text(encoding="utf-8")
    assert not (tmp_path / "-").exists()


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
