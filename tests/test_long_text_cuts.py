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


# A tokenizer.json's Pipeline (Qwen's NFC normalizer and split): cut where its first split is,
# between an ASCII letter or digit and a line feed, with the characters that normalize or
# compose on both sides of every such place.
QWEN_SPLIT = (r"(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}"
              r"| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+")
LINES = ["Cafe\u0301 au lait 1\n", "x\n\u0301y e\u0301\n", "\ufb01ne \uff71\uff9e 2\n",
         "\u1100\u1161 \uac00\u11a8 3\n", "A\u030a \u212b 4\n", "naive\u0308 5\n", "\n", "\r\n"]


@pytest.mark.parametrize("forms", [["NFC"], ["NFKC"], ["NFD"], ["NFKD", "NFC"]])
def test_a_pipeline_is_cut_as_its_first_split_and_gives_tokenizers_ids(small_limits, forms,
                                                                          tmp_path):
    tokenizers = pytest.importorskip("tokenizers")
    mod = small_limits
    text = "".join(LINES[k * 7 % len(LINES)] for k in range(60))
    trained = mod.Tokenizer.train(text * 3, 300, pattern=mod.Pipeline(forms, [QWEN_SPLIT]))
    path = tmp_path / "tokenizer.json"
    trained.save_huggingface(path)
    want = tokenizers.Tokenizer.from_file(str(path)).encode(text, add_special_tokens=False).ids
    scanned = []

    class Core(mod.Core):
        def scan_ids(self, text):
            scanned.append(len(text))
            return super().scan_ids(text)

    class Tokenizer(mod.Tokenizer):
        core_class = Core

    tok = Tokenizer.from_huggingface(path)
    assert tok.encode_ordinary(text) == want
    assert tok.encode_batch([text, text[:50]]) == [want, tok.encode_ordinary(text[:50])]
    assert list(tok.encode_iterable(text[k:k + 37] for k in range(0, len(text), 37))) == want
    if mod.BACKEND == "cython":   # cut into pieces (the pure-Python core holds the GIL)
        assert len(scanned) > 2 and sum(scanned) == len(text)


def test_files_of_a_pipeline_are_cut_and_give_the_ids_of_one_text(mod, tmp_path):
    """train_files and encode_files cut a Pipeline's files into chunks: the merges and the
    ids of one whole text."""
    text = "".join(LINES[k * 5 % len(LINES)] for k in range(400))
    corpus = tmp_path / "corpus.txt"
    corpus.write_text(text, encoding="utf-8", newline="")
    pattern = mod.Pipeline(["NFC"], [QWEN_SPLIT])
    whole = mod.Tokenizer.train(text, 320, pattern=pattern)
    cut = mod.Tokenizer.train_files([corpus], 320, pattern=pattern, chunk_size=256, workers=2)
    assert cut.merges == whole.merges
    out = tmp_path / "ids.bin"
    whole.encode_files([corpus], out, chunk_size=256, workers=2)
    import array
    ids = array.array("H", out.read_bytes())
    assert ids.tolist() == whole.encode_ordinary(text)


class _OwnSlicing(str):
    """A str subclass whose own slicing and iteration say other things than its characters
    (the core reads the characters, as tiktoken's does)."""

    def __getitem__(self, key):
        return "Z"

    def __iter__(self):
        return iter("Z")


@pytest.mark.parametrize("pattern", ["gpt2", "pipeline"])
def test_a_long_str_subclass_is_cut_by_its_characters(small_limits, pattern):
    """A long text of a str subclass gives the ids of its characters, as a short one does:
    the cuts slice its characters, not whatever its own slicing returns."""
    mod = small_limits
    tok = mod.Tokenizer.from_tiktoken(gpt2_ranks(), pattern="gpt2")
    if pattern == "pipeline":
        tok = mod.Tokenizer.from_tiktoken(gpt2_ranks(), pattern=mod.Pipeline(["NFC"], ["gpt2"]))
    text = "hello world 12\nfoo bar\n" * 20
    want = tiktoken_of(mod.Tokenizer.from_tiktoken(gpt2_ranks(), pattern="gpt2")).encode(text)
    odd = _OwnSlicing(text)
    assert tok.encode(odd) == want
    assert tok.encode_ordinary(odd) == want
    assert tok.encode(odd, allowed_special="all") == want
    assert tok.encode_batch([odd]) == [want]
    assert tok.encode_to_numpy(odd).tolist() == want


# Random tokenizer.json files (normalizers, Splits, ByteLevel's regex, added tokens) over texts
# with many places to cut: tokenizers' ids from every entry point that cuts.
JOINS = ["a\n", "9\n", "Z\r\n", "x\n\u0301", "b\n\ufb01", "c\n\n", "d\n\u2028", "e\n\uff71\uff9e"]


@pytest.mark.slow
def test_random_tokenizer_json_cut_everywhere_gives_tokenizers_ids(small_limits, tmp_path):
    import array
    import json

    from hypothesis import HealthCheck, given, settings
    from hypothesis import strategies as st

    import differential as D
    import strategies as S

    tokenizers = pytest.importorskip("tokenizers")
    mod = small_limits
    fam = S.families("normalizers,splits,digits,byte_level_regex,gpt_parts,added_tokens,"
                     "recent_unicode")

    @settings(max_examples=40, deadline=None, suppress_health_check=list(HealthCheck))
    @given(case=D.hf_cases(fam), joins=st.lists(st.sampled_from(JOINS), min_size=3, max_size=6))
    def check(case, joins):
        text_json, texts = case
        try:
            ref = tokenizers.Tokenizer.from_str(text_json)
            text = "".join(t + j for t, j in zip(texts * 3, joins))
            want = ref.encode(text, add_special_tokens=False).ids
        except BaseException:   # noqa: BLE001 - the reference refuses it (a Rust panic too)
            return
        path = tmp_path / "tokenizer.json"
        path.write_text(text_json, encoding="utf-8")
        try:
            tok = mod.Tokenizer.from_huggingface(path)
        except ValueError:
            return
        assert tok.encode(text, allowed_special="all") == want
        assert tok.encode_batch([text], allowed_special="all") == [want]
        assert tok.encode_to_numpy(text, allowed_special="all").tolist() == want
        tok._STREAM_BLOCK, tok._STREAM_MARGIN = 8, 4   # this instance only
        chunks = [text[k:k + 5] for k in range(0, len(text), 5)]
        assert list(tok.encode_iterable(chunks, allowed_special="all")) == want
        corpus = tmp_path / "corpus.txt"
        corpus.write_text(text, encoding="utf-8", newline="")
        out = tmp_path / "ids.bin"
        tok.encode_files([corpus], out, chunk_size=8, workers=2, allowed_special="all",
                         dtype="uint32")
        assert array.array("I", out.read_bytes()).tolist() == want, json.dumps(text)

    check()
