"""Bad input: ValueError for bad values and corrupt files, TypeError for wrong types."""

import json
import pickle
import random
import re

import pytest

from helpers import EOT, GPT2_MERGES, GPT2_VOCAB, PLAIN_TEXTS, SPECIALS, texts_with

TEXT = PLAIN_TEXTS["address"]


@pytest.fixture(scope="module")
def small(mod):
    return mod.Tokenizer.train(TEXT, 256 + 60 + 2, special_tokens=SPECIALS)


# ---------------------------------------------------------------------------------------
# training arguments


@pytest.mark.parametrize("vocab_size", [0, 1, 255, 256 + 1])
def test_vocab_size_too_small(mod, vocab_size):
    with pytest.raises(ValueError, match="vocab_size"):
        mod.Tokenizer.train(TEXT, vocab_size, special_tokens=SPECIALS)


def test_vocab_size_exactly_minimum(mod):
    tok = mod.Tokenizer.train(TEXT, 256 + 2, special_tokens=SPECIALS)
    assert tok.merges == []
    assert tok.vocab_size == 258
    assert tok.special_tokens == {EOT: 256, "<|pad|>": 257}
    assert tok.decode(tok.encode(TEXT)) == TEXT
    assert mod.Tokenizer.train(TEXT, 256).vocab_size == 256


def test_vocab_size_bad_type(mod):
    with pytest.raises(TypeError):
        mod.Tokenizer.train(TEXT, "300")
    with pytest.raises(TypeError):
        mod.Tokenizer.train(TEXT, 300.0)


def test_bad_training_options(mod):
    with pytest.raises(ValueError):
        mod.Tokenizer.train(TEXT, 300, max_token_bytes=0)
    with pytest.raises(ValueError):
        mod.Tokenizer.train(TEXT, 300, pattern="(unclosed")
    with pytest.raises(ValueError):
        mod.Tokenizer.train(TEXT, 300, special_tokens=[""])
    with pytest.raises(ValueError):
        mod.Tokenizer.train(TEXT, 300, special_tokens=["<a>", "<a>"])
    with pytest.raises(TypeError):
        mod.Tokenizer.train(TEXT, 300, special_tokens=[1])
    with pytest.raises(TypeError):
        mod.Tokenizer.train(12345, 300)
    with pytest.raises(TypeError):
        mod.Tokenizer.train(["ok", b"bytes"], 300)
    with pytest.raises(TypeError):
        mod.Tokenizer.train_from_counts({b"ab": "3"}, 300)
    with pytest.raises(ValueError):
        mod.Tokenizer.train_from_counts({b"ab": -3}, 300)


def test_train_files_missing(mod, tmp_path):
    with pytest.raises((OSError, ValueError)):
        mod.Tokenizer.train_files([tmp_path / "missing.txt"], 300)


def test_train_files_not_utf8(mod, tmp_path):
    path = tmp_path / "latin1.txt"
    path.write_bytes("caf\xe9 na\xefve".encode("latin-1"))
    # either refused, or read with U+FFFD for the bad bytes (with a warning)
    try:
        with pytest.warns(UserWarning):
            tok = mod.Tokenizer.train_files([path], 256 + 5, min_frequency=1)
    except ValueError:
        return
    assert tok == mod.Tokenizer.train(
        [path.read_bytes().decode("utf-8", "replace")], 256 + 5, min_frequency=1
    )


def test_count_pretokens_wrong_type(mod):
    with pytest.raises(TypeError):
        mod.count_pretokens([b"bytes"])


# ---------------------------------------------------------------------------------------
# the tokenizer object


def test_vocab_and_specials(small):
    assert small.vocab_size == 256 + 60 + 2 == len(small.vocab)
    assert sorted(small.vocab) == list(range(small.vocab_size))
    for name, i in small.special_tokens.items():
        assert small.vocab[i] == name.encode("utf-8")
        assert small.token_bytes(i) == name.encode("utf-8")
    assert list(small.special_tokens) == SPECIALS
    for i in range(256):
        assert small.vocab[i] == bytes([i])
    for k, (a, b) in enumerate(small.merges):
        assert small.vocab[256 + k] == a + b


def test_pickle(mod, small, gpt2):
    for tok in (small, gpt2):
        back = pickle.loads(pickle.dumps(tok))
        assert back == tok
        assert type(back) is type(tok)
        for text in texts_with(list(tok.special_tokens)).values():
            assert back.encode(text, allowed_special="all") == tok.encode(
                text, allowed_special="all"
            )


def test_equality(mod, small):
    same = mod.Tokenizer.train(TEXT, 256 + 60 + 2, special_tokens=SPECIALS)
    assert same == small
    assert not (same != small)
    assert mod.Tokenizer.train(TEXT, 256 + 59 + 2, special_tokens=SPECIALS) != small
    assert mod.Tokenizer.train(TEXT, 256 + 60 + 2, special_tokens=SPECIALS[::-1]) != small
    assert (
        mod.Tokenizer.train(TEXT, 256 + 60 + 2, special_tokens=SPECIALS, pattern="cl100k") != small
    )
    assert small != "not a tokenizer"
    assert small != None  # noqa: E711


def test_from_merges(mod, small):
    tok = mod.Tokenizer.from_merges(small.merges, special_tokens=SPECIALS)
    assert tok == small
    tok = mod.Tokenizer.from_merges(small.merges, vocab=small.vocab, special_tokens=SPECIALS)
    assert tok == small
    with pytest.raises(ValueError):  # a merge of tokens that do not exist
        mod.Tokenizer.from_merges([(b"xy", b"z")])


# ---------------------------------------------------------------------------------------
# corrupt files


def corruptions(good):
    """(name, bytes) pairs of damaged versions of a good file."""
    text = good.decode("utf-8")
    lines = text.splitlines(keepends=True)
    rng = random.Random(1234)
    header = lines[0]
    yield "empty", b""
    yield "truncated_half", good[: len(good) // 2]
    yield "truncated_lines", "".join(lines[: len(lines) // 2]).encode()
    yield "truncated_last_line", "".join(lines[:-1]).encode()
    yield "random_bytes", rng.randbytes(2000)
    yield "header_only", header.encode()
    yield "wrong_header", ("not a tokenizer file\n" + "".join(lines[1:])).encode()
    bumped = re.sub(r"\d+", "999", header)
    if bumped != header:
        yield "wrong_version", (bumped + "".join(lines[1:])).encode()
    yield "json", json.dumps({"a": 1}).encode()
    yield "not_utf8", good[:40] + b"\xff\xfe\xfd" + good[40:]


def test_native_corrupt_files(mod, small, tmp_path):
    good_path = tmp_path / "good.bpe"
    small.save(good_path)
    good = good_path.read_bytes()
    names = []
    for name, data in corruptions(good):
        path = tmp_path / f"{name}.bpe"
        path.write_bytes(data)
        with pytest.raises(ValueError):
            mod.Tokenizer.load(path)
            pytest.fail(f"{name}: loaded without error")
        names.append(name)
    assert "wrong_version" in names


def test_native_corrupt_fields(mod, small, tmp_path):
    """Every single line dropped or duplicated: an error or the same model, never another."""
    path = tmp_path / "good.bpe"
    small.save(path)
    lines = path.read_bytes().decode().splitlines(keepends=True)
    for i in range(len(lines)):
        for variant in (lines[:i] + lines[i + 1 :], lines[: i + 1] + lines[i:]):
            bad = tmp_path / "bad.bpe"
            bad.write_bytes("".join(variant).encode())
            try:
                loaded = mod.Tokenizer.load(bad)
            except ValueError:
                continue
            assert loaded == small, f"line {i} changed: {lines[i]!r}"


def test_load_missing_file(mod, tmp_path):
    with pytest.raises(OSError):
        mod.Tokenizer.load(tmp_path / "nope.bpe")


def test_load_foreign_files(mod, small, tmp_path):
    small.save_huggingface(tmp_path / "tokenizer.json")
    small.save_tiktoken(tmp_path / "x.tiktoken")
    for p in (tmp_path / "tokenizer.json", tmp_path / "x.tiktoken", GPT2_VOCAB, GPT2_MERGES):
        with pytest.raises(ValueError):
            mod.Tokenizer.load(p)


def test_gpt2_corrupt(mod, tmp_path):
    vocab = tmp_path / "vocab.json"
    merges = tmp_path / "merges.txt"
    vocab.write_text(json.dumps({"a": 0, "b": 1, "ab": 2}))
    cases = {
        "not json": ("{not json", "a b\n"),
        "merge of unknown token": (None, "x y\n"),
        "one-token merge line": (None, "a\n"),
        "vocab not an object": ("[1, 2]", "a b\n"),
        "non-int id": (json.dumps({"a": "0"}), ""),
    }
    full = {bytes([b]): b for b in range(256)}
    from helpers import bytes_to_unicode

    m = bytes_to_unicode()
    full_json = {"".join(m[c] for c in k): v for k, v in full.items()}
    for name, (v, mtext) in cases.items():
        vocab.write_text(v if v is not None else json.dumps(full_json), encoding="utf-8")
        merges.write_text(mtext, encoding="utf-8")
        with pytest.raises(ValueError):
            mod.Tokenizer.from_gpt2(vocab, merges)
            pytest.fail(name)


def test_tiktoken_corrupt(mod, small, tmp_path):
    path = tmp_path / "m.tiktoken"
    small.save_tiktoken(path)
    good = path.read_bytes()
    bad_cases = {
        "bad base64": b"!!!notbase64 0\n" + good,
        "bad rank": good.replace(b" 1\n", b" one\n", 1),
        "missing rank": good.replace(b" 1\n", b"\n", 1),
        "random": random.Random(7).randbytes(500),
        "truncated": good[: len(good) // 2] + b"\n",  # ranks then have gaps or lack merges' parts
    }
    for name, data in bad_cases.items():
        path.write_bytes(data)
        if name == "truncated":
            # a prefix of a valid rank file is itself a valid (smaller) model: only check no crash
            try:
                mod.Tokenizer.from_tiktoken(path, pattern="gpt2")
            except ValueError:
                pass
            continue
        with pytest.raises(ValueError):
            mod.Tokenizer.from_tiktoken(path, pattern="gpt2")
            pytest.fail(name)
    with pytest.raises((ValueError, TypeError)):
        mod.Tokenizer.from_tiktoken({b"a": 0}, pattern="gpt2")  # bytes missing


def test_huggingface_corrupt(mod, small, tmp_path):
    path = tmp_path / "tokenizer.json"
    small.save_huggingface(path)
    good = json.loads(path.read_text(encoding="utf-8"))

    def variant(fn):
        data = json.loads(json.dumps(good))
        fn(data)
        return json.dumps(data)

    cases = {
        "not json": "{",
        "truncated": path.read_text(encoding="utf-8")[:1000],
        "wordpiece": variant(lambda d: d["model"].__setitem__("type", "WordPiece")),
        "no model": variant(lambda d: d.pop("model")),
        "lowercase normalizer": variant(
            lambda d: d.__setitem__("normalizer", {"type": "Lowercase"})
        ),
        "merge of unknown token": variant(
            lambda d: (
                d["model"]["merges"].append(["zzzq", "qqqz"])
                if isinstance(d["model"]["merges"][0], list)
                else d["model"]["merges"].append("zzzq qqqz")
            )
        ),
        "dropout": variant(lambda d: d["model"].__setitem__("dropout", 0.5)),
    }
    for name, text in cases.items():
        path.write_text(text, encoding="utf-8")
        with pytest.raises(ValueError):
            mod.Tokenizer.from_huggingface(path)
            pytest.fail(name)


def test_bad_paths_types(mod, small):
    with pytest.raises(TypeError):
        small.save(12345.5)
    with pytest.raises(TypeError):
        mod.Tokenizer.load(None)


def test_properties_are_copies(small):
    v = small.vocab
    v[0] = b"changed"
    m = small.merges
    m.append((b"x", b"y"))
    s = small.special_tokens
    s["<new>"] = 999
    assert small.vocab[0] == b"\x00"
    assert len(small.merges) == 60
    assert "<new>" not in small.special_tokens
    assert small.encode("<new>", allowed_special="all") != [999]


def test_count_pretokens_str_is_one_document(mod):
    assert mod.count_pretokens("ab ab") == mod.count_pretokens(["ab ab"]) == {b"ab": 1, b" ab": 1}


def test_empty_corpus(mod):
    for corpus in ("", [], [""], iter([])):
        tok = mod.Tokenizer.train(corpus, 300, special_tokens=[EOT])
        assert tok.merges == [] and tok.vocab_size == 257
        assert tok.special_tokens == {EOT: 256}
    assert mod.Tokenizer.train_from_counts({}, 300).vocab_size == 256


def test_from_merges_keeps_vocab_ids(mod, gpt2):
    vocab = gpt2.vocab
    tok = mod.Tokenizer.from_merges(gpt2.merges, vocab=vocab, special_tokens=[EOT])
    assert tok.special_tokens == {EOT: 50256}
    assert tok == gpt2
    text = PLAIN_TEXTS["german"] + EOT
    assert tok.encode(text, allowed_special="all") == gpt2.encode(text, allowed_special="all")


def test_from_tiktoken_special_id_collision(mod, small):
    ranks = {b: i for i, b in small.vocab.items() if i < 256 + 60}
    with pytest.raises(ValueError):
        mod.Tokenizer.from_tiktoken(ranks, pattern="gpt2", special_tokens={EOT: 5})


def test_native_crlf_or_trailing_changes(mod, small, tmp_path):
    """Edited in an editor: CRLF line ends, a trailing newline added or removed: the same
    model or a ValueError, never a different model."""
    path = tmp_path / "m.bpe"
    small.save(path)
    text = path.read_bytes().decode("utf-8")
    for variant in (text.replace("\n", "\r\n"), text.rstrip("\n"), text + "\n", "\ufeff" + text):
        path.write_bytes(variant.encode("utf-8"))
        try:
            loaded = mod.Tokenizer.load(path)
        except ValueError:
            continue
        assert loaded == small


# ---------------------------------------------------------------------------------------
# construction arguments: TypeError/ValueError naming the argument, alike on both backends


@pytest.mark.parametrize("call, error, words", [
    (lambda T: T.from_merges([], special_tokens={5: 300}), TypeError, "special_tokens"),
    (lambda T: T.from_merges([], special_tokens={"<s>": "300"}), TypeError, "special_tokens"),
    (lambda T: T.from_merges([], special_tokens={"<s>": 2**31}), ValueError, "2**31"),
    (lambda T: T.from_merges([], special_tokens={"<s>": -1}), ValueError, "<s>"),
    (lambda T: T.from_merges([], special_tokens={"": 300}), ValueError, "empty"),
    (lambda T: T.from_merges(5), TypeError, "merges"),
    (lambda T: T.from_merges(["ab"]), TypeError, "merge 0"),
    (lambda T: T.from_merges([(b"a", "b")]), TypeError, "merge 0"),
    (lambda T: T.from_merges([], vocab=[b"a"]), TypeError, "vocab"),
    (lambda T: T.from_merges([], vocab={"0": b"a"}), TypeError, "vocab"),
    (lambda T: T.train_from_counts([("ab", 3)], 300), TypeError, "counts"),
    (lambda T: T.train_from_counts("abc", 300), TypeError, "counts"),
    (lambda T: T.train_from_counts(None, 300), TypeError, "counts"),
    (lambda T: T.from_tiktoken({"a": 0}, pattern="gpt2"), TypeError, "ranks"),
    (lambda T: T.from_tiktoken({b"a": "0"}, pattern="gpt2"), TypeError, "ranks"),
    (lambda T: T.from_tiktoken({b"": 0}, pattern="gpt2"), ValueError, "non-empty"),
    (lambda T: T.from_tiktoken({b"a": 2**31}, pattern="gpt2"), ValueError, "2**31"),
    (lambda T: T.train("abc", 300, special_tokens=5), TypeError, "special_tokens"),
    (lambda T: T.train("abc", 300, special_tokens=b"<s>"), TypeError, "special_tokens"),
])
def test_construction_arguments(both, call, error, words):
    for mod in both:
        with pytest.raises(error) as err:
            call(mod.Tokenizer)
        assert words in str(err.value), (mod.__name__, str(err.value))


@pytest.mark.parametrize(
    "specials", [{"<a>", "<b>"}, frozenset(["<a>"]), {"<a>": 1}.keys() & {"<a>"}]
)
def test_special_tokens_as_a_set_are_refused(both, specials, tmp_path):
    """A set has no order: the ids it would give change with PYTHONHASHSEED. Every entry
    point that takes names refuses it, saying to pass a list; dict keys (ordered) are fine."""
    for mod in both:
        T = mod.Tokenizer
        calls = [
            lambda: T.train("abc abc", 300, special_tokens=specials),
            lambda: T.train_from_counts({b"ab": 3}, 300, special_tokens=specials),
            lambda: T.from_merges([], special_tokens=specials),
            lambda: T.from_tiktoken(
                {bytes([b]): b for b in range(256)}, pattern="gpt2", special_tokens=specials
            ),
            lambda: T.from_gpt2(GPT2_VOCAB, GPT2_MERGES, special_tokens=specials),
            lambda: mod.count_pretokens("abc", special_tokens=specials),
        ]
        for call in calls:
            with pytest.raises(TypeError, match="list"):
                call()
        tok = T.train("abc <b> <a>", 300, special_tokens={"<b>": 0, "<a>": 1}.keys())
        assert list(tok.special_tokens) == ["<b>", "<a>"]


@pytest.mark.parametrize("special", ["<\ud800>", "\udfff", "a\udc80b"])
def test_special_token_with_a_lone_surrogate(both, special, tmp_path):
    """A lone surrogate has no UTF-8 bytes: ValueError naming the token, from arguments and
    from files (a JSON \\ud800 escape)."""
    for mod in both:
        T = mod.Tokenizer
        for call in (lambda: T.train("abc", 300, special_tokens=[special]),
                     lambda: T.from_merges([], special_tokens=[special]),
                     lambda: T.from_merges([], special_tokens={special: 300}),
                     lambda: T.from_tiktoken({bytes([b]): b for b in range(256)}, pattern="gpt2",
                                             special_tokens={special: 300})):
            with pytest.raises(ValueError, match="surrogate"):
                call()
        tok = T.from_merges([], special_tokens=["<x>"])
        tok.save(tmp_path / "t.bpe")
        text = (
            (tmp_path / "t.bpe").read_text(encoding="utf-8").replace('"<x>"', json.dumps(special))
        )
        (tmp_path / "t.bpe").write_text(text, encoding="utf-8")
        with pytest.raises(ValueError, match="surrogate"):
            T.load(tmp_path / "t.bpe")
        tok.save_huggingface(tmp_path / "t.json")
        doc = json.loads((tmp_path / "t.json").read_text(encoding="utf-8"))
        doc["added_tokens"][0]["content"] = special
        (tmp_path / "t.json").write_text(json.dumps(doc), encoding="utf-8")
        with pytest.raises(ValueError, match="surrogate"):
            T.from_huggingface(tmp_path / "t.json")
