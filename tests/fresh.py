"""Helpers of the tests that run the library in a fresh interpreter or through the
command line (file safety, sidecars, gzip limits, pattern budgets, limits): the
subprocess runners, and OpenAI's official files under names that say nothing."""

import base64
import gzip
import hashlib
import os
import subprocess
import sys
import textwrap

import pytest

from helpers import DATA, gpt2_ranks, read_data

POSIX = pytest.mark.skipif(sys.platform == "win32", reason="POSIX file types, links and modes")
OPENAI = "https://openaipublic.blob.core.windows.net/encodings/"
SHA256 = {  # the pins of tiktoken_ext/openai_public.py
    "r50k_base": "306cd27f03c1a714eca7108e03d66b7dc042abe8c258b44c199a7ed9838dd930",
    "cl100k_base": "223921b76ee99bde995b7ff738513eef100fb51d18c93597a113bcffe865b2a7",
    "o200k_base": "446a9538cb6c348e3516120d7c08b09f57c36495e2acfffe59a5bf8b0cfb1a2d",
}
TRICKY = ["I'M HERE", "hello\n\n\nworld", "it's 2024!!  ok\r\n\r\n", "ÀBC déjà-vu 東京 🙂",
          "x = [1, 2, 3]\n\tif y:\n        return 12345678", "CamelCaseWord's", "   \n  \n"]


def where(mod):
    """PYTHONPATH for a subprocess importing the very module files the tests use."""
    import bpe_fallback

    dirs = {os.path.dirname(os.path.abspath(m.__file__)) for m in (mod, bpe_fallback)}
    return os.pathsep.join(sorted(dirs) + [p for p in [os.environ.get("PYTHONPATH")] if p])


def run_fresh(mod, code, *args, timeout=120, env=None):
    """Run `code` in a fresh Python with the backend under test imported as m."""
    src = f"import sys\nimport {mod.__name__} as m\n" + textwrap.dedent(code)
    full = dict(os.environ, PYTHONPATH=where(mod), BPE_OFFLINE="1")
    full.update(env or {})
    return subprocess.run([sys.executable, "-c", src, *map(str, args)], capture_output=True,
                          text=True, timeout=timeout, env=full)


def cli(mod, *args, cwd=None, timeout=120):
    """`bpe ARGS...` (python -m bpe_fallback) on the backend under test."""
    env = dict(os.environ, PYTHONPATH=where(mod), BPE_OFFLINE="1",
               BPE_BACKEND="python" if mod.__name__ == "bpe_fallback" else "cython")
    env.pop("BPE_DEBUG", None)
    return subprocess.run([sys.executable, "-m", "bpe_fallback", *map(str, args)],
                          capture_output=True, text=True, timeout=timeout, env=env, cwd=cwd)


def one_line_error(result, *needles):
    assert result.returncode == 1, (result.returncode, result.stdout, result.stderr)
    lines = result.stderr.splitlines()
    assert len(lines) == 1 and lines[0].startswith("bpe: error: "), result.stderr
    for needle in needles:
        assert needle in lines[0], lines[0]
    return lines[0]


def tiktoken_reference(name, path):
    """tiktoken's own Encoding `name` (its pattern and special tokens from tiktoken_ext),
    with the ranks read by tiktoken's loader from the local file `path`."""
    import tiktoken
    import tiktoken.load
    from tiktoken_ext import openai_public

    real = openai_public.load_tiktoken_bpe
    openai_public.load_tiktoken_bpe = lambda *a, **k: tiktoken.load.load_tiktoken_bpe(str(path))
    try:
        spec = getattr(openai_public, name)()
    finally:
        openai_public.load_tiktoken_bpe = real
    return tiktoken.Encoding(**spec)


def official_file(name, directory, gz=False):
    """OpenAI's .tiktoken file for `name` under a name that says nothing about it: from
    tests/data (gzipped copies), or for r50k_base written from GPT-2's vocab.json."""
    path = directory / ("ranks.tiktoken.gz" if gz else "ranks.tiktoken")
    if name == "r50k_base":
        data = b"".join(base64.b64encode(t) + b" %d\n" % i
                        for t, i in sorted(gpt2_ranks().items(), key=lambda kv: kv[1]))
    else:
        data = gzip.decompress((DATA / f"{name}.tiktoken.gz").read_bytes())
    assert hashlib.sha256(data).hexdigest() == SHA256[name]
    path.write_bytes(gzip.compress(data, compresslevel=1) if gz else data)
    return path


def texts():
    return [read_data("corpus.en", 40000)] + TRICKY
