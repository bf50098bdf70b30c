"""Long texts cut into pieces for threads: a disallowed name with a line break (any str may
be disallowed, as in tiktoken) must be found even where a cut falls inside it, and
encode_batch of one long text cuts it as encode does.  Both backends; tiktoken the oracle."""

import pytest

from helpers import gpt2_ranks, tiktoken_of

tiktoken = pytest.importorskip("tiktoken")


@pytest.fixture
def small_limits(mod, monkeypatch):
    """Texts over 64 characters cut into pieces of 8 or more, on two threads."""
    monkeypatch.setattr(mod.Tokenizer, "_LONG_TEXT", 64)
    monkeypatch.setattr(mod.Tokenizer, "_LONG_PIECE", 8)
    mod.set_num_threads(2)
    yield mod
    mod.set_num_threads(None)


# the only cut GPT-2's pattern allows here is between "a" and the line feed
TEXT = "x " * 100 + "a\nb" + " y" * 100


@pytest.mark.parametrize("name", ["a\nb", "a\r\nb"])
def test_disallowed_name_across_a_cut_is_reported(small_limits, name):
    mod = small_limits
    text = TEXT.replace("a\nb", name)
    tok = mod.Tokenizer.from_tiktoken(gpt2_ranks(), pattern="gpt2")
    enc = tiktoken_of(tok)
    with pytest.raises(ValueError, match="disallowed special token"):
        enc.encode(text, disallowed_special={name})
    for call in (lambda: tok.encode(text, disallowed_special={name}),
                 lambda: tok.encode_to_numpy(text, disallowed_special={name}),
                 lambda: tok.encode_batch([text], disallowed_special={name}, num_threads=2)):
        with pytest.raises(ValueError, match="disallowed special token"):
            call()
    want = enc.encode(text, disallowed_special=())
    assert tok.encode(text, disallowed_special={"<|nothing|>"}) == want


def test_one_long_text_in_encode_batch_is_cut(small_limits):
    mod = small_limits
    scanned = []

    class Core(mod.Core):
        def scan_ids(self, text):
            scanned.append(len(text))
            return super().scan_ids(text)

    class Tokenizer(mod.Tokenizer):
        core_class = Core

    tok = Tokenizer.from_tiktoken(gpt2_ranks(), pattern="gpt2")
    text = "hello world\n" * 40
    want = tiktoken_of(tok).encode_ordinary(text)
    assert tok.encode_batch([text]) == [want]
    assert tok.encode_batch([text], num_threads=2) == [want]
    if mod.BACKEND == "cython":   # cut as encode cuts it, then
        assert len(scanned) > 2 and sum(scanned) == 2 * len(text)
