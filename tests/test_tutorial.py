"""The classic BPE tutorials' examples, in byte-level form."""

import pytest

import naive

# Sennrich et al.'s toy vocabulary: low x5, lower x2, newest x6, widest x3.
SENNRICH = ["low "] * 5 + ["lower "] * 2 + ["newest "] * 6 + ["widest "] * 3
CAT = "the cat sat on the mat " * 6 + "the cat sat " * 3


def one_id(tok, text):
    ids = tok.encode(text)
    return len(ids) == 1 and tok.decode(ids) == text


def falls_back(tok, text):
    ids = tok.encode(text)
    assert len(ids) > 1
    assert all(isinstance(i, int) and 0 <= i < tok.vocab_size for i in ids)
    assert tok.decode(ids) == text
    assert b"".join(tok.token_bytes(i) for i in ids) == text.encode()
    return ids


@pytest.mark.parametrize("as_docs", [False, True])
def test_sennrich_words(mod, as_docs):
    corpus = SENNRICH if as_docs else "".join(SENNRICH)
    tok = mod.Tokenizer.train(corpus, 256 + 30, pattern="words")
    assert tok.merges == naive.train(SENNRICH, 256 + 30, pattern="words")
    tokens = set(tok.vocab.values())
    # whole words with their end-of-word space, and the shared pieces
    for word in (b"low ", b"newest ", b"widest ", b"lower ", b"low", b"est "):
        assert word in tokens, word
    for word in ("low ", "newest ", "widest ", "lower "):
        assert one_id(tok, word), word
    # byte-level form of the classic first merges: the suffix "est" + end of word (count 9)
    # comes first (ties broken towards the greatest pair: "t " before "es" and "st")
    assert [a + b for a, b in tok.merges[:3]] == [b"t ", b"st ", b"est "]
    # unseen words fall back to the learned pieces and to bytes
    ids = falls_back(tok, "lowest ")
    assert [tok.token_bytes(i) for i in ids] == [b"low", b"est "]
    falls_back(tok, "newer ")
    falls_back(tok, "wider")
    falls_back(tok, "ölig ")  # bytes never seen
    text = "low lower lowest newest widest newer slowest\n"
    assert tok.decode(tok.encode(text)) == text
    # training stops when no pair is frequent enough
    assert tok.vocab_size < 256 + 30


def test_sennrich_gpt2_pattern(mod):
    tok = mod.Tokenizer.train(" " + "".join(SENNRICH), 256 + 40)
    tokens = set(tok.vocab.values())
    assert b" newest" in tokens and b" low" in tokens and b" widest" in tokens
    assert one_id(tok, " newest")
    ids = falls_back(tok, " lowest")
    assert tok.token_bytes(ids[0]) == b" low"


def test_cat_sat_on_the_mat(mod):
    tok = mod.Tokenizer.train(CAT, 256 + 40, pattern="words")
    assert tok.merges == naive.train(CAT, 256 + 40, pattern="words")
    for word in ("the ", "cat ", "sat "):
        assert one_id(tok, word), word
    falls_back(tok, "cats ")
    falls_back(tok, "the bat sat on the hat")
    falls_back(tok, "dog ")
    text = "the cat sat on the mat, then the cats sat on the mats.\n"
    assert tok.decode(tok.encode(text)) == text


def test_cat_with_document_separator(mod):
    docs = ["the cat sat on the mat"] * 4 + ["the dog sat on the log"] * 2
    corpus = "<|endoftext|>".join(docs)
    tok = mod.Tokenizer.train(corpus, 256 + 1 + 30, special_tokens=["<|endoftext|>"])
    eot = tok.special_tokens["<|endoftext|>"]
    assert eot == tok.vocab_size - 1
    assert tok.vocab[eot] == b"<|endoftext|>"
    ids = tok.encode(corpus, allowed_special="all")
    assert ids.count(eot) == len(docs) - 1
    assert tok.decode(ids) == corpus
    for a, b in tok.merges:
        assert b"<|" not in a + b
    assert one_id(tok, " cat")
    ids = falls_back(tok, " cats")
    assert tok.token_bytes(ids[0]) == b" cat"
