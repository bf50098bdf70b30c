"""A tokenizer.json's added tokens, checked against Hugging Face `tokenizers` itself.

tokenizers does not take an added token's `id` as written: a token of the vocabulary keeps its
vocabulary id, the others are numbered from the vocabulary's size on, in file order.  It
matches the non-normalized added tokens first, then the normalized ones in what is left.
lstrip / rstrip / single_word change what is matched.  Every file here either loads with
tokenizers' ids on every text, or is refused with a ValueError naming the field."""

import json

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from helpers import bytes_to_unicode

B2U = bytes_to_unicode()
# merges of a small model: "ab", "cd", "abcd", "<s", "<s>"
MERGES = [("a", "b"), ("c", "d"), ("ab", "cd"), ("<", "s"), ("<s", ">")]


def added(content, i=0, **flags):
    entry = {"id": i, "content": content, "single_word": False, "lstrip": False,
             "rstrip": False, "normalized": False, "special": True}
    entry.update(flags)
    return entry


def document(entries, extra_vocab=None):
    vocab = {B2U[b]: b for b in range(256)}
    for k, (a, b) in enumerate(MERGES):
        vocab[a + b] = 256 + k
    vocab.update(extra_vocab or {})
    return {
        "version": "1.0", "truncation": None, "padding": None, "added_tokens": entries,
        "normalizer": None,
        "pre_tokenizer": {"type": "ByteLevel", "add_prefix_space": False, "trim_offsets": True,
                          "use_regex": True},
        "post_processor": None, "decoder": None,
        "model": {"type": "BPE", "dropout": None, "unk_token": None,
                  "continuing_subword_prefix": None, "end_of_word_suffix": None,
                  "fuse_unk": False, "byte_fallback": False, "ignore_merges": True,
                  "vocab": vocab, "merges": [list(m) for m in MERGES]},
    }


TEXTS = ["", "abcd <s> xy", "<a><b><c> <a>b<c", "<eot>ab<eot><eot>", "x <pad> y <pad>",
         "<|endoftext|>abcd<|endoftext|>", "abc abcd cdab", "a b  c\t<b>\n<c>  x",
         "<a<b>> <<a>> <ab> <abc>", "<s><s>> <s>"]


def load_both(mod, tmp_path, doc):
    """(ours or the ValueError, tokenizers' Tokenizer)."""
    import tokenizers

    text = json.dumps(doc, ensure_ascii=False)
    path = tmp_path / "tokenizer.json"
    path.write_text(text, encoding="utf-8")
    hf = tokenizers.Tokenizer.from_str(text)
    try:
        return mod.Tokenizer.from_huggingface(path), hf
    except ValueError as e:
        return e, hf


def assert_same_ids(tok, hf, texts=TEXTS):
    assert not isinstance(tok, Exception), tok
    for text in texts:
        assert tok.encode(text, allowed_special="all") == hf.encode(
            text, add_special_tokens=False).ids, text


NUMBERING = {
    # the ids as written are ignored: 261 is the vocabulary's size
    "in_order": [added("<a>", 261), added("<b>", 262)],
    "gap": [added("<a>", 300), added("<b>", 301), added("<c>", 400)],
    "swapped": [added("<a>", 262), added("<b>", 261)],
    "colliding_with_a_byte": [added("<a>", 5), added("<b>", 97)],
    "colliding_with_a_merged_token": [added("<a>", 256), added("<b>", 260)],
    "all_zero": [added("<a>", 0), added("<b>", 0), added("<c>", 0)],
    "not_special": [added("<a>", 9, special=False), added("<b>", 3)],
    # "<|endoftext|>" is in the vocabulary (no merge makes it): it keeps its id there
    "vocabulary_token_under_another_id": [added("<a>", 1), added("<|endoftext|>", 262),
                                          added("<b>", 2)],
    "normalized_apart": [added("<a>", 0, normalized=True), added("<b>", 0),
                         added("<pad>", 0, normalized=True, special=False)],
}


@pytest.mark.parametrize("name", sorted(NUMBERING))
def test_added_tokens_take_tokenizers_ids(mod, tmp_path, name):
    tok, hf = load_both(mod, tmp_path, document(NUMBERING[name], {"<|endoftext|>": 261}
                                                if "vocabulary" in name else None))
    assert_same_ids(tok, hf)
    for entry in NUMBERING[name]:
        assert tok.special_tokens[entry["content"]] == hf.token_to_id(entry["content"])


REFUSED = {
    # tokenizers would match "<b>" in "<a<b>>" first, then "<a" is left: one pass differs
    "normalized_overlapping": ([added("<a<b>>", 0, normalized=True), added("<b>", 0)],
                               None, r"added_tokens\[0\]\.normalized"),
    "normalized_inside": ([added("<b>", 0), added("x<b>", 0, normalized=True)],
                          None, r"added_tokens\[1\]\.normalized"),
    "normalized_prefix_suffix": ([added("<a>", 0, normalized=True), added(">x<", 0)],
                                 None, r"added_tokens\[0\]\.normalized"),
    "lstrip": ([added("<a>", 0, lstrip=True)], None, r"added_tokens\[0\]\.lstrip"),
    "rstrip": ([added("<b>", 0), added("<a>", 0, rstrip=True)], None,
               r"added_tokens\[1\]\.rstrip"),
    "single_word": ([added("<a>", 0, single_word=True)], None,
                    r"added_tokens\[0\]\.single_word"),
    # a merged token, a byte of the vocabulary made an added token: matched whole in text
    "merged_token": ([added("abcd", 258)], None, r"added_tokens\[0\]\.content"),
    "byte": ([added("<a>", 0), added("x", 120)], None, r"added_tokens\[1\]\.content"),
    # the vocabulary has a gap: the number tokenizers gives is a vocabulary token's id
    "numbered_onto_a_token": ([added("<a>", 0), added("<b>", 0)], {"zz": 263},
                              r"added_tokens\[1\]\.id"),
    # the vocabulary's entry of that text is other bytes (byte-level: "Ġ" is a space)
    "text_of_other_bytes": ([added("Ġab", 0)], {"Ġab": 261}, r"added_tokens\[0\]\.content"),
}


@pytest.mark.parametrize("name", sorted(REFUSED))
def test_what_tokenizers_matches_otherwise_is_refused(mod, tmp_path, name):
    entries, extra, field = REFUSED[name]
    tok, hf = load_both(mod, tmp_path, document(entries, extra))
    assert isinstance(tok, ValueError), name
    with pytest.raises(ValueError, match=field):
        raise tok


def test_an_added_token_that_a_merge_joins_is_refused_by_name(mod, tmp_path):
    """A vocabulary token that no merge makes but one joins ("xy" of ("xy", "z")), made an
    added token: tokenizers matches it whole in text and keeps the merge; here it is refused
    naming the added token and the merge, as one a merge makes is."""
    doc = document([added("<a>", 0), added("xy", 261)], {"xy": 261, "xyz": 262})
    doc["model"]["merges"].append(["xy", "z"])
    tok, hf = load_both(mod, tmp_path, doc)
    assert hf.encode("xyz", add_special_tokens=False).ids == [261, 122]   # "xy" whole
    with pytest.raises(ValueError, match=r"added_tokens\[1\]\.content 'xy' .*which a merge joins"):
        raise tok


@pytest.mark.parametrize("name", ["normalized_overlapping", "normalized_inside", "lstrip",
                                  "rstrip", "single_word"])
def test_refused_flags_change_tokenizers_ids(tmp_path, name):
    """Why each refused flag is refused: tokenizers gives other ids with it than without."""
    import tokenizers

    entries = REFUSED[name][0]
    plain = [dict(e, normalized=False, lstrip=False, rstrip=False, single_word=False)
             for e in entries]
    texts = ["<a<b>> x<b> <a> b", " <a>  <b> x<a>y", "<a<b>>x<b>"]

    def ids(doc):
        hf = tokenizers.Tokenizer.from_str(json.dumps(doc))
        return [hf.encode(t, add_special_tokens=False).ids for t in texts]

    assert ids(document(entries)) != ids(document(plain))


NAMES = ["<a>", "<b>", "<a<b>>", "b>", "<|endoftext|>", "x<", "<s>x", "ab", "<eot>", "c<a"]


@settings(max_examples=60, deadline=None, suppress_health_check=list(HealthCheck))
@given(
    entries=st.lists(
        st.tuples(st.sampled_from(NAMES), st.integers(0, 300), st.booleans(), st.booleans()),
        min_size=1, max_size=5, unique_by=lambda e: e[0]),
    texts=st.lists(st.text(st.sampled_from("<>abcdsx|eot ndfi"), max_size=24), max_size=4),
)
def test_random_added_tokens_give_tokenizers_ids_or_are_refused(mod, tmp_path_factory, entries,
                                                                texts):
    doc = document([added(c, i, normalized=n, special=s) for c, i, n, s in entries],
                   {"<|endoftext|>": 261})
    tok, hf = load_both(mod, tmp_path_factory.mktemp("added"), doc)
    if isinstance(tok, ValueError):
        assert "added_tokens[" in str(tok)
        return
    assert_same_ids(tok, hf, TEXTS + texts)
