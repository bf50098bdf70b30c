"""Odd and hostile rank tables through the rank-table reader (Core.tiktoken_model, then
Core.from_model): whatever it takes, or leaves to the reference reader, gives the reference
reader's result or error (helpers.reference), and tiktoken's ids.  Dicts
with odd keys and values, .tiktoken texts off the plain case, special tokens that collide with
tokens, pre-tokens around the scan/heap threshold and of hundreds of bytes, every export of a
rank-table tokenizer, threads, and the caller's dict changed afterwards."""

import base64
import gzip
import pickle
import random
import threading

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import bpe_fallback
from helpers import reference

tiktoken = pytest.importorskip("tiktoken")

BYTES = {bytes([b]): b for b in range(256)}
TEXTS = ["the abc <s> xyz", "abababab abab", "a" * 24, "a" * 25, "ab" * 13, "x" * 300,
         "日本語 ab", ""]


class BytesSub(bytes):
    pass


class IntSub(int):
    pass


class DictSub(dict):
    pass


def with_bytes(extra):
    return {**BYTES, **extra}


DICTS = {
    "plain": with_bytes({b"ab": 256, b"abc": 257, b" a": 258, b"th": 259, b"the": 260}),
    "gaps": with_bytes({b"ab": 1000, b"abc": 5000}),
    "largest id": with_bytes({b"ab": 2**31 - 1}),
    "id too large": with_bytes({b"ab": 2**31}),
    "negative id": with_bytes({b"ab": -1}),
    "bool rank": {**BYTES, b"ab": True},
    "float rank": {**BYTES, b"ab": 256.0},
    "int subclass rank": {**BYTES, b"ab": IntSub(256)},
    "bytes subclass token": {**BYTES, BytesSub(b"ab"): 256},
    "bytes subclass bytes": {**{BytesSub(t): i for t, i in BYTES.items()}, b"ab": 256},
    "str token": {**BYTES, "ab": 256},
    "empty token": {**BYTES, b"": 256},
    "a byte missing": {t: i for t, i in with_bytes({b"ab": 256}).items() if t != b"q"},
    "a byte missing, ids dense": {**{t: i - (i > 113) for t, i in BYTES.items() if t != b"q"},
                                  b"ab": 255},
    "a rank twice": with_bytes({b"ab": 256, b"cd": 256}),
    "a byte's rank twice": with_bytes({b"ab": 97}),
    "unbuildable": with_bytes({b"abc": 256, b"ab": 300, b"bc": 299}),
    "out of order": with_bytes({b"abc": 256, b"ab": 257, b"bc": 258}),
    "bytes shuffled": {bytes([b]): (b * 7) % 256 for b in range(256)} | {b"ab": 256},
    "bytes ranked last": {bytes([b]): 1000 + b for b in range(256)} | {b"ab": 5},
    "dict subclass": DictSub(with_bytes({b"ab": 256})),
    "empty": {},
    "long tokens": with_bytes({b"a" * k: 254 + k for k in range(2, 40)}),
}
SPECIALS = {"none": None, "a name": ["<s>"], "an id after": {"<s>": 999},
            "a token's bytes": ["ab"], "a token's id and bytes": {"ab": 256},
            "a token's id": {"<s>": 97}, "a token's bytes, new id": {"ab": 999},
            "the largest id": {"<s>": 2**31 - 1}, "names, one a token's": ["<|x|>", "ab", "abc"]}
QUICK_SPECIALS = ["a name", "a token's bytes"]


def outcome(cls, source, specials, texts=TEXTS):
    """Everything a Tokenizer from `source` gives (or its error): read, exported, pickled."""
    try:
        tok = cls.from_tiktoken(source, pattern="gpt2", special_tokens=specials)
    except (TypeError, ValueError) as e:
        return type(e).__name__, str(e)
    out = [tok.vocab, tok.merges, tok.special_tokens, tok.n_vocab, hash(tok)]
    ids = [tok.encode(t, allowed_special="all") for t in texts]
    out += [ids, [tok.decode(i) for i in ids], tok.encode_batch(texts, allowed_special="all")]
    out.append(tok.decode_bytes([i for i in (0, 97, 255, 256, 257, 999) if i in tok.vocab]))
    clone = pickle.loads(pickle.dumps(tok, protocol=pickle.HIGHEST_PROTOCOL))
    out += [clone.merges == tok.merges, clone == tok,
            clone.encode_batch(texts, allowed_special="all") == ids]
    return out


def exports(tok, tmp_path):
    """The text of each file `tok` writes (or the error), and to_tiktoken's ids."""
    out = []
    for name, save in [("t.bpe", tok.save), ("gpt2", tok.save_gpt2),
                       ("tokenizer.json", tok.save_huggingface),
                       ("t.tiktoken", lambda p: tok.save_tiktoken(p, sidecar=False))]:
        path = tmp_path / name
        try:
            save(path)
        except ValueError as e:
            out.append(str(e))
            continue
        files = sorted(path.iterdir()) if path.is_dir() else [path]
        out.append([f.read_bytes() for f in files])
    try:
        enc = tok.to_tiktoken()
        out.append([enc.encode(t, allowed_special="all") for t in TEXTS])
    except ValueError as e:
        out.append(str(e))
    return out


@pytest.mark.parametrize("case", sorted(DICTS))
def test_an_odd_rank_dict_reads_as_the_reference_reader_reads_it(mod, case):
    for specials in QUICK_SPECIALS:
        assert (outcome(mod.Tokenizer, DICTS[case], SPECIALS[specials])
                == outcome(reference(mod), DICTS[case], SPECIALS[specials])), specials


@pytest.mark.slow
@pytest.mark.parametrize("specials", sorted(SPECIALS))
@pytest.mark.parametrize("case", sorted(DICTS))
def test_an_odd_rank_dict_with_special_tokens_reads_as_the_reference_reader(mod, case,
                                                                            specials):
    assert (outcome(mod.Tokenizer, DICTS[case], SPECIALS[specials])
            == outcome(reference(mod), DICTS[case], SPECIALS[specials]))


@pytest.mark.parametrize("case", ["bytes subclass token", "bytes subclass bytes"])
def test_bytes_subclass_tokens_read_as_tiktoken_reads_them(mod, case):
    """tiktoken takes any bytes; the reference reader gave the core the subclass objects,
    which it refused ("a core's token ... must be bytes"), while the compiled reader read them."""
    ranks = DICTS[case]
    enc = tiktoken.Encoding("t", pat_str=r"[\s\S]+", mergeable_ranks=ranks, special_tokens={})
    for cls in (mod.Tokenizer, reference(mod)):
        tok = cls.from_tiktoken(ranks, pattern=r"[\s\S]+")
        assert tok.encode("abcab") == enc.encode("abcab")
        assert {type(t) for t in tok.vocab.values()} == {bytes}


def line(token, rank):
    return f"{base64.b64encode(token).decode()} {rank}"


PLAIN = "\n".join([line(t, i) for t, i in BYTES.items()] + [
    line(t, 256 + k) for k, t in enumerate([b"ab", b"abc", b" a", b"th", b"the", b" the"])]) + "\n"

TEXTS_OFF_PLAIN = {
    "a byte order mark": lambda t: "\ufeff" + t,
    "a trailing space": lambda t: t.replace(" 256\n", " 256 \n"),
    "a leading space": lambda t: " " + t,
    "two spaces": lambda t: t.replace(" 256\n", "  256\n"),
    "a blank last line": lambda t: t + "\n",
    "'=' inside the base64": lambda t: t.replace("YWI= 256", "YW=I 256"),
    "'=' too many": lambda t: t.replace("YWI= 256", "YWI=== 256"),
    "unpadded base64": lambda t: t.replace("YWI= 256", "YWI 256"),
    "urlsafe base64": lambda t: t + line(b"\xfb\xff", 262).replace("/", "_") + "\n",
    "an empty token": lambda t: t + "= 999\n",
    "a fullwidth digit": lambda t: t.replace(" 259\n", " ２５９\n"),
    "a superscript digit": lambda t: t.replace(" 259\n", " ²59\n"),
    "a plus sign": lambda t: t.replace(" 256\n", " +256\n"),
    "a minus sign": lambda t: t.replace(" 256\n", " -256\n"),
    "an underscore": lambda t: t.replace(" 256\n", " 2_56\n"),
    "eleven digits, leading zeros": lambda t: t.replace(" 256\n", " 00000000256\n"),
    "eleven digits": lambda t: t.replace(" 261\n", " 21474836470\n"),
    "ten digits, too large": lambda t: t.replace(" 261\n", " 9999999999\n"),
    "a vertical tab": lambda t: t.replace(" 257\n", "\x0b257\n"),
    "a no-break space": lambda t: t.replace(" 257\n", "\xa0257\n"),
    "a line separator": lambda t: t.replace("\n", "\u2028", 1),
    "a next line": lambda t: t.replace("\n", "\x85", 1),
    "a form feed": lambda t: t.replace("\n", "\x0c", 1),
    "a file separator": lambda t: t.replace("\n", "\x1c", 1),
    "a NUL": lambda t: t.replace(" 256\n", " 256\x00\n"),
    "a token twice, same rank": lambda t: t + "YWI= 256\n",
    "a byte's rank twice": lambda t: t.replace("QQ== 65\n", "QQ== 66\n"),
    "nothing": lambda t: "",
    "a line feed only": lambda t: "\n",
}
PLAIN_TOO = {"ranks reversed": lambda t: "".join(reversed(t.splitlines(True))),
             "the largest id": lambda t: t.replace(" 261\n", " 2147483647\n"),
             "a token no merge makes": lambda t: t + line(b"xyz", 262) + "\n",
             "'+' and '/' in base64": lambda t: t + line(b"\xfb\xff\xbf", 262) + "\n"}


@pytest.mark.parametrize("gzipped", [False, pytest.param(True, marks=pytest.mark.slow)])
@pytest.mark.parametrize("case", sorted(TEXTS_OFF_PLAIN) + sorted(PLAIN_TOO))
def test_an_odd_rank_text_loads_as_the_reference_reader_loads_it(mod, case, gzipped, tmp_path):
    text = (TEXTS_OFF_PLAIN.get(case) or PLAIN_TOO[case])(PLAIN)
    data = text.encode("utf-8")
    path = tmp_path / "in.tiktoken"
    path.write_bytes(gzip.compress(data) if gzipped else data)
    assert outcome(mod.Tokenizer, path, ["<s>"]) == outcome(reference(mod), path, ["<s>"])
    if mod is bpe_fallback:
        assert (mod.Core.tiktoken_model(text) is None) == (case in TEXTS_OFF_PLAIN)


@pytest.mark.parametrize("case", ["plain", "gaps", "unbuildable", "bytes ranked last"])
def test_a_rank_table_tokenizer_exports_as_the_reference_one(mod, case, tmp_path):
    ranks = DICTS[case]
    ours = mod.Tokenizer.from_tiktoken(ranks, pattern="gpt2", special_tokens=["<s>"])
    ref = reference(mod).from_tiktoken(ranks, pattern="gpt2", special_tokens=["<s>"])
    (tmp_path / "ours").mkdir()
    (tmp_path / "ref").mkdir()
    assert exports(ours, tmp_path / "ours") == exports(ref, tmp_path / "ref")
    assert ours == ref and hash(ours) == hash(ref)
    chunks = ["the ab", "c <", "s> xy", "z" * 40, " ab" * 30]
    assert (list(ours.encode_iterable(iter(chunks), allowed_special="all"))
            == list(ref.encode_iterable(iter(chunks), allowed_special="all")))


def test_the_callers_dict_changed_afterwards_changes_nothing(mod):
    ranks = dict(DICTS["plain"])
    enc = tiktoken.Encoding("t", pat_str=r"[\s\S]+", mergeable_ranks=dict(ranks),
                            special_tokens={})
    toks = [mod.Tokenizer.from_tiktoken(ranks, pattern=r"[\s\S]+"),
            mod.Encoding("t", pat_str=r"[\s\S]+", mergeable_ranks=ranks, special_tokens={})]
    ranks[b"xy"] = 300
    ranks[b"ab"] = 5000
    del ranks[b"abc"]
    for tok in toks:
        for text in ("abc xy ab", "abcabcxy"):
            assert tok.encode(text) == enc.encode(text)
        assert tok.decode_single_token_bytes(257) == b"abc"
        assert len(tok.merges) == 5


@st.composite
def irregular_tables(draw):
    """Random tokens over few letters, ranked in random order (so many are made by no
    merge, or by a merge of a later token), single bytes maybe ranked anywhere, and texts
    of 1 to 400 bytes: pre-tokens either side of the scan/heap threshold (24 bytes)."""
    rng = random.Random(draw(st.integers(0, 2**32)))
    alphabet = rng.choice(["ab", "abc", "ab ", "aé"])
    letters = sorted(set("".join(alphabet).encode()))
    tokens = {bytes(rng.choice(letters) for _ in range(rng.randint(2, 9)))
              for _ in range(rng.randint(1, 40))}
    ids = list(range(256 + len(tokens)))
    rng.shuffle(ids)
    if rng.random() < 0.5:  # single bytes first, tokens shuffled after them
        ids = list(range(256)) + rng.sample(range(256, 256 + len(tokens)), len(tokens))
    ranks = dict(zip([bytes([b]) for b in range(256)] + sorted(tokens), ids))
    texts = ["".join(rng.choice(alphabet) for _ in range(n))
             for n in [rng.randint(1, 30), 24, 25, rng.choice([23, 26, 60, 400])]]
    return ranks, texts


def check_irregular(both, case):
    ranks, texts = case
    enc = tiktoken.Encoding("t", pat_str=r"[\s\S]+", mergeable_ranks=ranks, special_tokens={})
    want = [enc.encode_ordinary(t) for t in texts]
    for mod in both:
        for cls in (mod.Tokenizer, reference(mod)):
            tok = cls("t", pat_str=r"[\s\S]+", mergeable_ranks=ranks, special_tokens={})
            assert [tok.encode_ordinary(t) for t in texts] == want
        assert (mod.Tokenizer.from_tiktoken(ranks, pattern="gpt2").merges
                == reference(mod).from_tiktoken(ranks, pattern="gpt2").merges)


@settings(max_examples=15, deadline=None)
@given(case=irregular_tables())
def test_irregular_tables_merge_as_tiktoken(both, case):
    check_irregular(both, case)


@pytest.mark.slow
@settings(max_examples=400, deadline=None)
@given(case=irregular_tables())
def test_irregular_tables_merge_as_tiktoken_at_length(both, case):
    check_irregular(both, case)


def test_two_threads_encode_with_one_rank_table_tokenizer(mod):
    rng = random.Random(3)
    ranks = dict(BYTES)
    while len(ranks) < 1200:
        ranks.setdefault(bytes(rng.choice(b"abc ") for _ in range(rng.randint(2, 9))), len(ranks))
    pattern = r"[\s\S]{1,300}"
    enc = tiktoken.Encoding("t", pat_str=pattern, mergeable_ranks=ranks, special_tokens={})
    tok = mod.Encoding("t", pat_str=pattern, mergeable_ranks=ranks, special_tokens={})
    texts = ["".join(rng.choice("abc ") for _ in range(rng.randint(1, 600))) for _ in range(200)]
    want = [enc.encode_ordinary(t) for t in texts]
    got = {}

    def work(k):
        got[k] = [tok.encode_ordinary(t) for t in texts[k::2]]
        tok.merges, tok.decode(want[k])

    threads = [threading.Thread(target=work, args=(k,)) for k in (0, 1)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert got[0] == want[0::2] and got[1] == want[1::2]


def fresh(mod):
    """A Tokenizer class with a core class of its own: get_encoding builds its model anew
    (the registry keeps one model per core class and name)."""
    core = type("FreshCore", (mod.Core,), {})
    return type("Fresh", (mod.Tokenizer,), {"core_class": core})


@pytest.mark.slow
@pytest.mark.parametrize("name,pattern", [("cl100k_base", "cl100k"), ("o200k_base", "o200k")])
def test_a_pinned_file_by_every_route_reads_as_the_reference_reader(mod, name, pattern,
                                                                    tmp_path):
    """OpenAI's file (read unchecked where get_encoding knows it by its sha256) gzipped, in
    a folder, or read by from_file / from_tiktoken (checked): the reference reader's model."""
    from test_rank_model import pinned_text  # noqa: PLC0415 (a slow test's helper)

    data = pinned_text(name).encode()
    plain = tmp_path / f"{name}.tiktoken"
    plain.write_bytes(data)
    (tmp_path / "gz").mkdir()
    packed = tmp_path / "gz" / f"{name}.tiktoken.gz"
    packed.write_bytes(gzip.compress(data))
    specials = fresh(mod).get_encoding(name, path=plain).special_tokens
    ref = reference(mod).from_tiktoken(plain, pattern=pattern, special_tokens=specials)
    text = "hello world 日本語 " + "x" * 300 + " <|endoftext|>"
    want = ref.encode(text, allowed_special="all")
    loaded = [fresh(mod).get_encoding(name, path=p) for p in (plain, tmp_path / "gz", packed)]
    loaded += [fresh(mod).from_file(plain), fresh(mod).from_file(packed),
               fresh(mod).from_tiktoken(plain, pattern=pattern, special_tokens=ref.special_tokens)]
    for tok in loaded:
        assert tok == ref and tok.merges == ref.merges and tok.vocab == ref.vocab
        assert tok.encode(text, allowed_special="all") == want
    other = "o200k_base" if name == "cl100k_base" else "cl100k_base"
    with pytest.raises(ValueError, match="not the ranks of"):
        fresh(mod).get_encoding(other, path=plain)


def core_outcome(core):
    ids = [0, 97, 256, 257, 258, 300, 301]
    return ([core.decode_bytes([i]) for i in ids], core.decode_bytes(ids[:5]),
            core.encode_text("hi a zz hi"), core.tokens(), core.merges())


def change(ranks, specials):
    specials["<s>"] = 256
    specials["<t>"] = 300
    ranks[b"zz"] = 301
    ranks[b"hi"] = 999
    del ranks[b"a"]


@pytest.mark.parametrize("build", ["Core", "Core.from_model"])
def test_a_core_is_what_it_was_built_from_whatever_the_callers_dicts_become(mod, build):
    """bpe.Core copies the dicts it is built from; so does the pure-Python core (it decoded
    with the caller's changed dicts once it built its decoder on first use)."""
    def make():
        ranks = with_bytes({b"hi": 256, b"zz": 258})
        specials = {"<s>": 257}
        if build == "Core":
            core = mod.Core(mod.PATTERNS["gpt2"], ranks, [(104, 105, 256), (122, 122, 258)],
                            specials)
        else:
            model = mod.Core.tiktoken_model(ranks)
            if model is None:
                pytest.skip(f"{mod.__name__}.Core reads no rank dict")
            core = mod.Core.from_model(mod.PATTERNS["gpt2"], model, specials)
        return core, ranks, specials

    want = core_outcome(make()[0])
    core, ranks, specials = make()
    change(ranks, specials)
    assert core_outcome(core) == want
