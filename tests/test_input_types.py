"""str subclasses are strings, and encode_batch takes any thread count."""

import os

import pytest

# ---- str subclasses and threads ----------------------------------------------------------

class Shouty(str):
    def __str__(self):
        return "SHOUT"


def test_str_subclasses_are_strings(mod, gpt2):
    np = pytest.importorskip("numpy")
    text = "Hello, wörld! 👍"
    expected = gpt2.encode(text)
    for t in (Shouty(text), np.str_(text)):
        assert gpt2.encode(t) == expected
        assert gpt2.encode_ordinary(t) == expected
        assert gpt2.encode_batch([t, t], num_threads=2) == [expected, expected]
        assert list(gpt2.encode_iterable([t])) == expected
        assert mod.count_pretokens([t]) == mod.count_pretokens([text])
    assert mod.Tokenizer.train([Shouty(text)] * 3, 260) == mod.Tokenizer.train([text] * 3, 260)


def test_encode_batch_with_absurd_thread_counts(gpt2, monkeypatch):
    import concurrent.futures

    started = []
    real = concurrent.futures.ThreadPoolExecutor

    class Counting(real):
        def __init__(self, max_workers=None, **kw):
            started.append(max_workers)
            super().__init__(max_workers=max_workers, **kw)

    monkeypatch.setattr(concurrent.futures, "ThreadPoolExecutor", Counting)
    texts = [f"hello world {i}" for i in range(50)]
    expected = [gpt2.encode(t) for t in texts]
    assert gpt2.encode_batch(texts, num_threads=20000) == expected
    assert gpt2.encode_batch(texts, num_threads=20000) == expected
    assert all(n <= (os.cpu_count() or 1) for n in started)  # never more threads than CPUs
