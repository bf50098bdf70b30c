"""bpe.pyi describes the installed module: mypy's stubtest compares the two, every name of
`bpe.__all__` and every member of its classes (the compiled Core's through CoreProtocol)."""

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
    # mypy finds the stub where the module is (an editable install's import hook is not
    # a place mypy looks); a stub it cannot find is an error, not a pass
    env = dict(os.environ, MYPYPATH=stub_dir)
    run = subprocess.run([sys.executable, "-m", "mypy.stubtest", "bpe"],
                         capture_output=True, text=True, cwd=tmp_path, env=env)
    assert run.returncode == 0, run.stdout + run.stderr
