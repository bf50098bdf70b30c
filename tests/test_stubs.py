"""bpe.pyi describes the installed module: mypy's stubtest compares the two."""

import os
import subprocess
import sys

import pytest

import bpe


@pytest.mark.skipif(bpe.BACKEND != "cython", reason="the stubs describe the compiled module")
def test_stubs_match_the_compiled_module(tmp_path):
    pytest.importorskip("mypy")
    stub_dir = os.path.dirname(bpe.__file__)
    assert os.path.exists(os.path.join(stub_dir, "bpe.pyi")), "bpe.pyi is not installed beside bpe"
    run = subprocess.run([sys.executable, "-m", "mypy.stubtest", "bpe", "--ignore-missing-stub"],
                         capture_output=True, text=True, cwd=tmp_path)
    assert run.returncode == 0, run.stdout + run.stderr
