"""Corpora named *.gz (or starting with gzip's magic bytes) are read decompressed, as text
or JSON lines, by train_files, encode_files, `bpe train` and `bpe encode` (with a validation
split too): the merges and ids of the plain file, sidecars naming the .gz; a broken gzip
file is a ValueError naming it; file_cuts refuses a gzip file (its byte ranges could not be
read apart)."""

import gzip
import json

import pytest
from test_dataprep import cli

from helpers import EOT, read_data
from test_cli import assert_ok, assert_one_line_error

TEXT = read_data("tinystories_sample.txt").replace(EOT, "\n\n") + read_data("corpus.en")[:20000]
RECORDS = "".join(json.dumps({"text": d}) + "\n" for d in TEXT.split("\n\n") if d.strip())


@pytest.fixture
def files(tmp_path):
    (tmp_path / "c.txt").write_text(TEXT, encoding="utf-8")
    (tmp_path / "c.txt.gz").write_bytes(gzip.compress(TEXT.encode("utf-8")))
    (tmp_path / "c.jsonl").write_text(RECORDS, encoding="utf-8")
    half = len(RECORDS) // 2  # two gzip members, as `cat a.gz b.gz` makes
    (tmp_path / "c.jsonl.gz").write_bytes(gzip.compress(RECORDS[:half].encode())
                                          + gzip.compress(RECORDS[half:].encode()))
    (tmp_path / "unnamed").write_bytes(gzip.compress(TEXT.encode("utf-8")))
    return tmp_path


def test_train_files_reads_gzip_inflated(mod, files):
    plain = mod.Tokenizer.train_files([str(files / "c.txt")], 400, special_tokens=[EOT])
    for name in ("c.txt.gz", "unnamed"):
        got = mod.Tokenizer.train_files([str(files / name)], 400, special_tokens=[EOT],
                                        workers=2, chunk_size=4096)
        assert got == plain, name
    plain = mod.Tokenizer.train_files([str(files / "c.jsonl")], 400, jsonl=True)
    assert mod.Tokenizer.train_files([str(files / "c.jsonl.gz")], 400, jsonl=True) == plain


def test_encode_files_reads_gzip_inflated(mod, files):
    tok = mod.Tokenizer.train(TEXT, 400, special_tokens=[EOT])
    want = tok.encode_files([str(files / "c.jsonl")], str(files / "a.bin"), eot=EOT)
    got = tok.encode_files([str(files / "c.jsonl.gz")], str(files / "b.bin"), eot=EOT,
                           chunk_size=4096)
    assert (files / "a.bin").read_bytes() == (files / "b.bin").read_bytes()
    assert got["count"] == want["count"] and got["documents"] == want["documents"]
    assert [i["path"] for i in got["inputs"]] == [str(files / "c.jsonl.gz")]
    tok.encode_files([str(files / "c.txt")], str(files / "a.bin"), eot=EOT, val_fraction=0.5)
    tok.encode_files([str(files / "c.txt.gz")], str(files / "b.bin"), eot=EOT,
                     val_fraction=0.5)
    for name in ("bin", "val.bin"):
        assert (files / f"a.{name}").read_bytes() == (files / f"b.{name}").read_bytes()


def test_a_broken_gzip_corpus_is_named(mod, files):
    data = (files / "c.txt.gz").read_bytes()
    (files / "cut.txt.gz").write_bytes(data[:len(data) // 2])
    (files / "junk.txt.gz").write_bytes(b"\x1f\x8b" + b"\x00" * 50)
    tok = mod.Tokenizer.train(TEXT, 300)
    for name in ("cut.txt.gz", "junk.txt.gz"):
        path = str(files / name)
        with pytest.raises(ValueError, match=name):
            mod.Tokenizer.train_files([path], 300)
        with pytest.raises(ValueError, match=name):
            tok.encode_files([path], str(files / "x.bin"))
        assert not (files / "x.bin").exists()


def test_file_cuts_refuses_gzip(mod, files):
    for name in ("c.txt.gz", "unnamed"):
        with pytest.raises(ValueError, match="gzip"):
            mod.file_cuts(str(files / name), 1000)
        with open(files / name, "rb") as f, pytest.raises(ValueError, match="gzip"):
            mod.file_cuts(f, 1000)


def test_the_command_line_reads_gzip(mod, files):
    assert_ok(cli(mod, ["train", files / "c.txt", "--vocab-size", 400, "-o", files / "a.bpe",
                        "-q"]))
    result = cli(mod, ["train", files / "c.txt.gz", "--vocab-size", 400, "-o", files / "b.bpe"])
    assert_ok(result)
    assert (files / "a.bpe").read_bytes() == (files / "b.bpe").read_bytes()
    assert f"{len(TEXT.encode()):,} bytes" in result.stdout  # the inflated size
    assert_ok(cli(mod, ["encode", "-t", files / "a.bpe", files / "c.jsonl", "-o",
                        files / "a.bin", "--val-fraction", "0.3", "-q"]))
    assert_ok(cli(mod, ["encode", "-t", files / "a.bpe", files / "c.jsonl.gz", "-o",
                        files / "b.bin", "--val-fraction", "0.3", "-q"]))
    for name in ("bin", "val.bin"):
        assert (files / f"a.{name}").read_bytes() == (files / f"b.{name}").read_bytes()
    data = (files / "c.txt.gz").read_bytes()
    (files / "cut.txt.gz").write_bytes(data[:len(data) // 2])
    assert_one_line_error(cli(mod, ["train", files / "cut.txt.gz", "--vocab-size", 300, "-o",
                                    files / "c.bpe"]), "bpe", "cut.txt.gz", "gzip")
