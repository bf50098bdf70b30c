"""The environment variable BPE_NUM_THREADS read alike by both backends: a bad value is a
ValueError naming it on the compiled core, so the pure-Python one (which encodes in one
thread whatever the value) must not accept the same call silently."""

import os
import subprocess
import sys

import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))

PROBE = """
import {mod} as mod
tok = mod.Tokenizer.from_merges([(b"h", b"i")])
try:
    tok.encode_batch(["hi", "ih"])
except Exception as e:
    print(type(e).__name__, "BPE_NUM_THREADS" in str(e))
else:
    print("ok")
"""


def probe(mod, value):
    env = dict(os.environ, PYTHONPATH=ROOT, BPE_NUM_THREADS=value)
    got = subprocess.run([sys.executable, "-c", PROBE.format(mod=mod.__name__)],
                         capture_output=True, text=True, cwd=ROOT, timeout=120, env=env)
    assert got.returncode == 0, got.stderr
    return got.stdout.strip()


@pytest.mark.slow
@pytest.mark.parametrize("value", ["0", "two", "99999"])
def test_bad_thread_variable_is_an_error_on_both_backends(mod, value):
    assert probe(mod, value) == "ValueError True"


@pytest.mark.slow
def test_good_thread_variable_is_taken(mod):
    assert probe(mod, "3") == "ok"
