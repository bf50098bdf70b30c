"""tools/make_scale_corpus.py: a synthetic corpus for scale tests is the same bytes for the
same seed, a smaller size is a prefix of a larger one, it holds several scripts, digits and
documents, and its distinct pre-tokens keep growing with its size (Heaps' law: sublinearly),
unlike a repeated file's."""

import importlib.util
import sys
import unicodedata
from pathlib import Path

import pytest

pytest.importorskip("numpy")

TOOL = Path(__file__).resolve().parent.parent / "tools" / "make_scale_corpus.py"


def _tool():
    if "make_scale_corpus" not in sys.modules:
        spec = importlib.util.spec_from_file_location("make_scale_corpus", TOOL)
        module = importlib.util.module_from_spec(spec)
        sys.modules["make_scale_corpus"] = module
        spec.loader.exec_module(module)
    return sys.modules["make_scale_corpus"]


def _make(tmp_path, name, size, seed=0, **kw):
    out = tmp_path / name
    n = _tool().generate(str(out), size, seed=seed, quiet=True, scale=0.05, **kw)
    data = out.read_bytes()
    assert len(data) == n and size - 1000 < n <= size
    return data


def test_deterministic_prefixes_scripts_and_growth(tmp_path):
    import regex

    small = _make(tmp_path, "a.txt", 300_000)
    assert small == _make(tmp_path, "b.txt", 300_000)
    large = _make(tmp_path, "c.txt", 3_000_000)
    assert large.startswith(small) and small.endswith(b"\n")
    assert _make(tmp_path, "d.txt", 300_000, seed=1) != small
    text = large.decode("utf-8")
    scripts = {unicodedata.name(c).split()[0] for c in set(text) if c.isalpha()}
    assert {"LATIN", "CYRILLIC", "GREEK", "ARABIC", "CJK"} <= scripts
    assert regex.search(r"\d{4}", text) and "\n\n" in text and ", " in text
    # distinct pre-tokens (GPT-2's pattern) grow with the text, sublinearly
    from bpe import count_pretokens

    distinct = [len(count_pretokens(text[:n])) for n in (100_000, 300_000, 1_000_000, 2_900_000)]
    assert distinct == sorted(set(distinct))
    ratios = [b / a for a, b in zip(distinct, distinct[1:])]
    assert all(1.3 < r < 3 for r in ratios), distinct
    with_eot = _make(tmp_path, "e.txt", 300_000, eot="<|endoftext|>").decode("utf-8")
    assert "\n<|endoftext|>\n" in with_eot


@pytest.mark.slow
def test_full_vocabulary_has_a_million_words():
    langs = _tool().languages()
    words = [w for lang in langs for w in lang.words]
    assert len(set(words)) >= 1_000_000 and "" not in words
