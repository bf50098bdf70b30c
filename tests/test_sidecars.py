"""Nothing is read with a guessed pattern: OpenAI's official .tiktoken files are known by
their sha256 (plain or gzipped, under any name), another file needs its sidecar or an
explicit pattern; a sidecar that names another file, or is corrupt, is a ValueError
naming it; both backends read sidecars alike."""

import gzip
import json
import os

import pytest
from fresh import TRICKY, cli, official_file, one_line_error, texts, tiktoken_reference

from helpers import EOT, read_data

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


# ---- corrupt sidecars: ValueError naming the file ------------------------------------

@pytest.mark.parametrize("field, value", [
    ("special_tokens", {EOT: 299.0}), ("special_tokens", {EOT: "299"}),
    ("special_tokens", {EOT: True}), ("special_tokens", {EOT: None}),
    ("special_tokens", {EOT: [1]}), ("special_tokens", {EOT: -1}),
    ("special_tokens", {EOT: 2**40}), ("special_tokens", {"": 400}),
    ("special_tokens", [EOT]), ("special_tokens", "x"),
    ("pattern", 5), ("pattern", None), ("pattern", "("), ("pattern", "(?:)"),
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
