"""tiktoken's special-token policy holds however the text arrives: a disallowed special
token split across the chunks of encode_files or encode_iterable is still seen, streaming
applies the policy to the raw text, and the stream scans each character a bounded number
of times."""


import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

# ---- a policy that chunking can bypass -----------------------------------------------

BAD = "BAD\nTOKEN"


def test_disallowed_text_across_a_chunk_cut_is_seen(mod, small, tmp_path):
    path = tmp_path / "in.txt"
    path.write_text("hello world\n" * 3 + BAD + " and more text\n" * 3, encoding="utf-8")
    start = path.read_bytes().index(BAD.encode())
    cuts = [a for a, _ in mod.file_cuts(path, 2)]
    assert start + 3 in cuts  # a cut falls inside BAD
    with pytest.raises(ValueError, match="disallowed"):
        small.encode(path.read_text(), disallowed_special={BAD})
    for workers in (1, 2):
        with pytest.raises(ValueError, match="BAD"):
            small.encode_files([path], tmp_path / "out.bin", chunk_size=2, workers=workers,
                               disallowed_special={BAD})
        assert not (tmp_path / "out.bin").exists()
    # byte ranges of one document, cut inside BAD
    size = path.stat().st_size
    with pytest.raises(ValueError, match="BAD"):
        small.encode_files([(path, 0, start + 3), (path, start + 3, size)], tmp_path / "out.bin",
                           disallowed_special={BAD})
    # the text encodes when BAD is not disallowed, the same as encode
    meta = small.encode_files([path], tmp_path / "out.bin", chunk_size=2, workers=2)
    ids = list(memoryview((tmp_path / "out.bin").read_bytes()).cast("H"))
    assert ids == small.encode(path.read_text()) and meta["count"] == len(ids)


def test_disallowed_text_across_stream_chunks_is_seen(mod, small):
    text = "hello world\n" * 3 + BAD + " more\n"
    cut = text.index(BAD) + 3
    with pytest.raises(ValueError, match="BAD"):
        list(small.encode_iterable([text[:cut], text[cut:]], disallowed_special={BAD}))
    big = "hello world\n" * 20000
    with pytest.raises(ValueError, match="BAD"):
        list(small.encode_iterable([big + text[:cut], text[cut:] + big], disallowed_special={BAD}))


# ---- streaming applies the policy to the raw text -----------------------------------------

def test_streaming_cannot_bypass_the_policy(mod):
    tok = mod.Tokenizer.from_merges([], special_tokens=["<a>", "a>b"])
    text = "<a>b" + "x " * 20000
    with pytest.raises(ValueError, match="a>b"):
        tok.encode(text, allowed_special={"<a>"})
    for chunks in (
        [text],
        list(text[:100]) + [text[100:]],
        [text[i : i + 999] for i in range(0, len(text), 999)],
    ):
        with pytest.raises(ValueError, match="a>b"):
            list(tok.encode_iterable(chunks, allowed_special={"<a>"}))


SPECIALS = ["<a>", "a>b", "<a><a>", ">b", "x<"]


@settings(max_examples=80, deadline=None)
@given(parts=st.lists(st.sampled_from(["<a>", "a>b", ">", "<", "a", "b", "x", " ", "xx yy\n", "é"]),
                      max_size=60),
       cuts=st.lists(st.integers(0, 200), max_size=8),
       allowed=st.sets(st.sampled_from(SPECIALS)),
       disallow_all=st.booleans())
def test_random_chunkings_with_overlapping_specials(mod, parts, cuts, allowed, disallow_all):
    tok = mod.Tokenizer.from_merges([(b"x", b"x"), (b"<", b"a")], special_tokens=SPECIALS)
    tok._STREAM_BLOCK = 8  # tiny windows: many cuts (instance attribute, this test only)
    text = "".join(parts)
    kw = dict(allowed_special=allowed, disallowed_special="all" if disallow_all else ())
    cut_at = sorted(set(min(c, len(text)) for c in cuts))
    chunks = [text[a:b] for a, b in zip([0] + cut_at, cut_at + [len(text)])]
    try:
        expected = tok.encode(text, **kw)
    except ValueError:
        with pytest.raises(ValueError):
            list(tok.encode_iterable(chunks, **kw))
        return
    assert list(tok.encode_iterable(chunks, **kw)) == expected


@pytest.mark.parametrize("text", ["a" * 300_000, "é" * 100_000 + " x", "  " * 100_000])
def test_encode_iterable_scans_each_character_a_bounded_number_of_times(mod, text, monkeypatch):
    """No rescanning of the buffer: the characters handed to the window cutter stay within
    a small multiple of the input, even when nothing can be cut (one long pre-token)."""
    tok = mod.Tokenizer.from_merges([(b"a", b"a"), (b" ", b" ")])
    scanned = []
    real = type(tok)._stream_cut

    def counting(self, window, *args):
        scanned.append(len(window))
        return real(self, window, *args)

    monkeypatch.setattr(type(tok), "_stream_cut", counting)
    chunks = [text[i:i + 100] for i in range(0, len(text), 100)]
    assert list(tok.encode_iterable(chunks)) == tok.encode(text)
    assert sum(scanned) <= 4 * len(text) + 4 * tok._STREAM_BLOCK


@pytest.mark.parametrize("specials", [{"\n\n": 628}, ["\n\n"]])
def test_a_special_token_that_would_take_a_merged_token_is_named(mod, specials):
    """A special token with the bytes of a token that a merge makes (GPT-2's "\\n\\n") would
    have to stay a mergeable token too: refused, naming the special token and the merge."""
    from helpers import gpt2_ranks

    ranks = gpt2_ranks()
    with pytest.raises(ValueError, match=r"special token '\\n\\n' would take token 628 .*merge"):
        if isinstance(specials, dict):
            mod.Encoding("x", pat_str=mod.PATTERNS["gpt2"], mergeable_ranks=ranks,
                         special_tokens=specials)
        else:
            mod.Tokenizer.from_tiktoken(ranks, pattern="gpt2", special_tokens=specials)
    # a special token taking a token no merge touches is that token's id, as before
    vocab = {**{b: bytes([b]) for b in range(256)}, 256: b"hi", 257: b"<s>"}
    enc = mod.Tokenizer.from_merges([(b"h", b"i")], vocab=vocab, special_tokens=["<s>"])
    assert enc.special_tokens == {"<s>": 257} and enc.encode("<s>hi", allowed_special="all") \
        == [257, 256]


@pytest.mark.parametrize("specials", [{"\x00": 188}, ["\x00"]])
def test_a_special_token_that_would_take_a_single_byte_is_named(mod, specials):
    """A single byte stays a token (any text may need it): a special token with its bytes is
    refused, naming the special token, not as a vocabulary that lacks a byte."""
    from helpers import gpt2_ranks

    with pytest.raises(ValueError, match=r"special token '\\x00' would take token 188 .*single"):
        mod.Tokenizer.from_tiktoken(gpt2_ranks(), pattern="gpt2", special_tokens=specials)
