"""tools/train_dask.py: the driver script over `bpe train --dask` and `bpe encode --dask`
gives the one-machine files (the library's Dask work is tested in test_dask_cluster.py)."""

import os
import subprocess
import sys
from pathlib import Path

import pytest

from helpers import EOT, read_data

ROOT = Path(__file__).resolve().parent.parent


@pytest.mark.slow
def test_the_script_trains_and_encodes_as_the_command(mod, tmp_path):
    pytest.importorskip("distributed")
    pytest.importorskip("fsspec")
    text = tmp_path / "a.txt"
    text.write_text(read_data("corpus.en", 60000), encoding="utf-8")
    env = dict(os.environ, PYTHONPATH=str(ROOT))

    def run(*args):
        r = subprocess.run([sys.executable, str(ROOT / "tools" / "train_dask.py"), *args],
                           capture_output=True, text=True, cwd=ROOT, env=env, timeout=300)
        assert r.returncode == 0, r.stderr
        return r

    run("train", str(text), "--vocab-size", "400", "--special", EOT, "-o",
        str(tmp_path / "t.bpe"), "--scheduler", "local:1")
    tok = mod.Tokenizer.load(tmp_path / "t.bpe")
    assert tok == mod.Tokenizer.train_files([str(text)], 400, special_tokens=[EOT])
    run("encode", "-t", str(tmp_path / "t.bpe"), str(text), "--eot", EOT, "-o",
        str(tmp_path / "d.bin"), "--scheduler", "local:1")
    tok.encode_files([str(text)], str(tmp_path / "m.bin"), eot=EOT)
    assert (tmp_path / "d.bin").read_bytes() == (tmp_path / "m.bin").read_bytes()


def test_the_script_says_how_it_is_called():
    r = subprocess.run([sys.executable, str(ROOT / "tools" / "train_dask.py")],
                       capture_output=True, text=True, cwd=ROOT, timeout=60)
    assert r.returncode == 2 and "--scheduler" in r.stderr
