"""A set of files is published as a set: encode_files' arrays with their validation split
and sidecars, save_pretrained's transformers directory.  Every file is written before any is
renamed into place; a failure on a later file (a full disk, simulated) or among the renames
leaves the old set whole, byte for byte, with no temporary file behind."""

import errno
import os
from pathlib import Path

import pytest

from helpers import EOT, read_data

ROOT = Path(__file__).resolve().parent.parent
ENGLISH = read_data("corpus.en")[:12000]
DOCS = [d for d in read_data("tinystories_sample.txt").split(EOT) if d.strip()] + [
    ENGLISH[k:k + 2000] for k in range(0, len(ENGLISH), 2000)]


def snapshot(directory):
    """{name: bytes} of every file in `directory`, hidden ones included."""
    return {p.name: p.read_bytes() for p in sorted(Path(directory).iterdir()) if p.is_file()}


def full_disk_on(monkeypatch, suffix):
    """FileSet.text raises ENOSPC for the path ending in `suffix` (a later file of a set)."""
    import bpe_fallback

    real = bpe_fallback.FileSet.text

    def text(self, path, *args, **kw):
        if str(path).endswith(suffix):
            raise OSError(errno.ENOSPC, "No space left on device (simulated)")
        return real(self, path, *args, **kw)

    monkeypatch.setattr(bpe_fallback.FileSet, "text", text)


def rename_fails_after(monkeypatch, k):
    """os.replace fails on its k+1-th call (the middle of a set's renames)."""
    real, calls = os.replace, []

    def replace(src, dst, *args, **kw):
        calls.append(dst)
        if len(calls) == k + 1:
            raise OSError(errno.EIO, "I/O error (simulated)")
        return real(src, dst, *args, **kw)

    monkeypatch.setattr(os, "replace", replace)


def corpus(tmp_path):
    paths = []
    for k, doc in enumerate(DOCS[:12]):
        paths.append(tmp_path / "in" / f"d{k}.txt")
        paths[-1].parent.mkdir(exist_ok=True)
        paths[-1].write_text(doc, encoding="utf-8")
    return [str(p) for p in paths]


def fail_publishing(monkeypatch, failure, last_file, renames):
    """A set's publishing fails: the disk is full when `last_file` is written, or the
    rename after the first `renames` ones fails."""
    if failure == "disk full":
        full_disk_on(monkeypatch, last_file)
    else:
        rename_fails_after(monkeypatch, renames)


@pytest.mark.parametrize("failure", ["disk full", "rename"])
def test_encode_files_with_a_validation_split_is_one_set(mod, tmp_path, monkeypatch, failure):
    paths = corpus(tmp_path)
    out = tmp_path / "out"
    out.mkdir()
    old_tok = mod.Tokenizer.train(DOCS, 300, special_tokens=[EOT])
    old_tok.encode_files(paths, str(out / "train.bin"), eot=EOT, val_fraction=0.3)
    before = snapshot(out)
    assert set(before) == {"train.bin", "train.bin.json", "val.bin", "val.bin.json"}
    new_tok = mod.Tokenizer.train(DOCS, 280, special_tokens=[EOT])
    with monkeypatch.context() as m:
        fail_publishing(m, failure, "val.bin.json", 2)
        with pytest.raises(OSError):
            new_tok.encode_files(paths, str(out / "train.bin"), eot=EOT, val_fraction=0.3)
    assert snapshot(out) == before
    new_tok.encode_files(paths, str(out / "train.bin"), eot=EOT, val_fraction=0.3)
    after = snapshot(out)
    assert set(after) == set(before) and after["train.bin"] != before["train.bin"]


@pytest.mark.parametrize("failure", ["disk full", "rename"])
def test_save_pretrained_is_one_set(mod, tmp_path, monkeypatch, failure):
    pytest.importorskip("transformers")
    from transformers import PreTrainedTokenizerFast

    out = tmp_path / "tok"
    old = mod.Tokenizer.train(DOCS, 300, special_tokens=[EOT, "<pad>"])
    old.save_pretrained(str(out), eos_token=EOT, pad_token="<pad>")
    before = snapshot(out)
    new = mod.Tokenizer.train(DOCS, 280, special_tokens=[EOT, "<pad>"])
    with monkeypatch.context() as m:
        fail_publishing(m, failure, "special_tokens_map.json", 1)
        with pytest.raises(OSError):
            new.save_pretrained(str(out), eos_token=EOT, pad_token="<pad>")
    assert snapshot(out) == before
    hf = PreTrainedTokenizerFast.from_pretrained(str(out))
    assert hf.pad_token_id == old.special_tokens["<pad>"]
    assert hf.encode(DOCS[0]) == old.encode(DOCS[0])


