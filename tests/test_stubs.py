"""bpe.pyi describes the installed module: mypy's stubtest compares the two, every name of
`bpe.__all__` and every member of its classes (the compiled Core's through CoreProtocol)."""

import os
import shutil
import subprocess
import sys

import pytest

import bpe


@pytest.mark.skipif(bpe.BACKEND != "cython", reason="the stubs describe the compiled module")
def test_stubs_match_the_compiled_module(tmp_path):
    pytest.importorskip("mypy")
    stub = os.path.join(os.path.dirname(bpe.__file__), "bpe.pyi")
    assert os.path.exists(stub), "bpe.pyi is not installed beside bpe"
    # mypy is given the stub installed beside the module, in a directory of its own (an
    # editable install's import hook is not a place mypy looks, and mypy refuses
    # site-packages on MYPYPATH); a stub it cannot find is an error, not a pass
    stub_dir = tmp_path / "stub"
    stub_dir.mkdir()
    shutil.copyfile(stub, stub_dir / "bpe.pyi")
    env = dict(os.environ, MYPYPATH=str(stub_dir))
    run = subprocess.run([sys.executable, "-m", "mypy.stubtest", "bpe"],
                         capture_output=True, text=True, cwd=tmp_path, env=env)
    assert run.returncode == 0, run.stdout + run.stderr
