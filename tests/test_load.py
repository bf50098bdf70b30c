"""Loading fast: the compiled core reads plain .tiktoken and native files in C and
derives the merges there; everything else goes through the reference readers.  Whatever the
path, both backends give the same tokenizer, or the same error, for the same input, and a
tokenizer read in C answers every question about its model (merges, vocab, files, pickling)
as one read the slow way does."""

import base64
import gzip
import pickle

import pytest

from helpers import DATA, EOT, PLAIN_TEXTS, read_data

TEXTS = [*PLAIN_TEXTS.values(), "héllo wörld 東京 🙂\r\n\t  x", ""]


@pytest.fixture(autouse=True)
def no_tiktoken_cache(monkeypatch):
    monkeypatch.setenv("TIKTOKEN_CACHE_DIR", "")


@pytest.fixture(scope="module")
def small(both):
    """A trained tokenizer (gpt2 pattern) of both backends' making: the same model."""
    text = read_data("tinystories_sample.txt") + read_data("german.txt")
    tok = both[1].Tokenizer.train(text, 256 + 300, special_tokens=[EOT, "<|pad|>"])
    return tok


def rank_split_oracle(ranks, token):
    """Byte-pair encode `token` with the tokens ranked below its own, the plainest way:
    join the adjacent pair whose join has the lowest rank, the leftmost first."""
    limit = ranks[token]
    parts = [token[i:i + 1] for i in range(len(token))]
    while len(parts) > 2:
        best = None
        for i in range(len(parts) - 1):
            r = ranks.get(parts[i] + parts[i + 1])
            if r is not None and r < limit and (best is None or r < best[0]):
                best = (r, i)
        if best is None:
            break
        i = best[1]
        parts[i:i + 2] = [parts[i] + parts[i + 1]]
    return tuple(parts)


def tiktoken_lines(tok):
    """The .tiktoken lines of a tokenizer, written here (base64 token, rank)."""
    specials = set(tok.special_tokens.values())
    return [f"{base64.b64encode(t).decode()} {i}" for i, t in sorted(tok.vocab.items())
            if i not in specials]


def outcome(load):
    """What a load gives: the model as the public API shows it, or the error."""
    try:
        tok = load()
    except Exception as e:  # noqa: BLE001 -- the type and message are what is compared
        return ("error", type(e).__name__, str(e))
    return ("ok", tok.pattern, tok.vocab, list(tok.vocab), tok.merges, tok.special_tokens,
            [tok.encode(t, allowed_special="all") for t in TEXTS])


def tiktoken_encoder(text_of_file, specials):
    """tiktoken itself, given the same file: the oracle for ids."""
    import tiktoken

    from bpe_fallback import PATTERNS

    ranks = {base64.b64decode(t): int(r)
             for t, r in (line.split() for line in text_of_file.splitlines() if line)}
    return tiktoken.Encoding("t", pat_str=PATTERNS["gpt2"], mergeable_ranks=ranks,
                             special_tokens=specials)


# ---------------------------------------------------------------------------------------
# .tiktoken: every variant loads alike in both backends (the C reader takes some, the
# reference reader the others), with the ids tiktoken gives


def _join(lines, sep="\n", end="\n"):
    return sep.join(lines) + end


LONG = base64.b64encode(b"a" * 5000).decode()
VARIANTS = {  # .tiktoken files from lines: plain ones and odd ones
    "plain": _join,
    "crlf": lambda lines: _join(lines, "\r\n", "\r\n"),
    "blank lines": lambda lines: _join(lines, "\n\n", "\n\n\n"),
    "no final newline": lambda lines: _join(lines, end=""),
    "lines out of order": lambda lines: _join(lines[::-1]),
    "leading zeros": lambda lines: _join([line.replace(" ", " 0", 1) for line in lines]),
    "ranks with gaps": lambda lines: _join([f"{t} {2 * int(r) + 1}"
                                            for t, r in (line.split() for line in lines)]),
    "byte order mark": lambda lines: "\ufeff" + _join(lines),
    "stray bits in base64": lambda lines: _join(lines).replace("IQ==", "IR=="),  # "!"
    "padding in the middle": lambda lines: _join(lines).replace("IQ==", "IQ==IQ=="),
    "two spaces": lambda lines: _join(lines).replace(" ", "  ", 1),
    "tab": lambda lines: _join(lines).replace(" ", "\t", 1),
    "repeated token": lambda lines: _join(lines + [lines[300].split()[0] + " 9999"]),
    "repeated rank": lambda lines: _join(lines + ["//// " + lines[300].split()[1]]),
    "missing byte": lambda lines: _join([line for line in lines if not line.startswith("IQ== ")]),
    "missing part": lambda lines: _join(lines[:256] + lines[300:]),
    "huge rank": lambda lines: _join(lines + ["//79 2147483648"]),
    "rank too long": lambda lines: _join(lines + ["//79 00000000001"]),
    "empty token": lambda lines: _join(lines + [" 9999"]),
    "non-ASCII": lambda lines: _join(lines + ["é 9999"]),
    "empty": lambda lines: "",
    "a long unmergeable token": lambda lines: _join(lines + [f"{LONG} 9999"]),
}


@pytest.mark.parametrize("name", VARIANTS)
def test_tiktoken_variants_load_alike(both, small, tmp_path, name):
    text = VARIANTS[name](tiktoken_lines(small))
    path = tmp_path / "v.tiktoken"
    path.write_bytes(text.encode("utf-8"))
    results = [outcome(lambda m=m: m.Tokenizer.from_tiktoken(path, pattern="gpt2",
                                                              special_tokens=[EOT]))
               for m in both]
    assert results[0] == results[1]
    if name == "plain":
        assert results[0][0] == "ok"
        enc = tiktoken_encoder(text, {EOT: results[0][5][EOT]})
        assert results[0][6] == [enc.encode(t, allowed_special="all") for t in TEXTS]


def test_tiktoken_merges_are_the_rank_split(both, small, tmp_path):
    """Each merge of a .tiktoken file is what byte-pair encoding of the token with the
    lower-ranked tokens leaves (the plainest oracle), in rank order."""
    path = tmp_path / "v.tiktoken"
    path.write_text("\n".join(tiktoken_lines(small)) + "\n")
    ranks = {base64.b64decode(t): int(r)
             for t, r in (line.split() for line in path.read_text().splitlines())}
    expected = [rank_split_oracle(ranks, t) for t, _ in sorted(ranks.items(), key=lambda kv: kv[1])
                if len(t) > 1]
    for m in both:
        assert m.Tokenizer.from_tiktoken(path, pattern="gpt2").merges == expected


@pytest.mark.parametrize("specials", [
    {}, [EOT], [EOT, "<|pad|>"], {EOT: 5000, "<|x|>": 5001}, {EOT: 300}, {"!": 0}, ["!", EOT],
    {EOT: 5000, "<|x|>": 5000}, {EOT: -1}, {EOT: True}, [EOT, EOT], ["a b"],
], ids=str)
def test_tiktoken_specials_alike(both, small, tmp_path, specials):
    path = tmp_path / "v.tiktoken"
    path.write_text("\n".join(tiktoken_lines(small)) + "\n")
    results = [outcome(lambda m=m: m.Tokenizer.from_tiktoken(path, pattern="gpt2",
                                                              special_tokens=specials))
               for m in both]
    assert results[0] == results[1]


def test_ranks_dict_alike(both, small):
    """from_tiktoken of a dict: as of the file (the C reader takes an ascending dict)."""
    ranks = {t: i for i, t in sorted(small.vocab.items()) if i not in small.special_tokens.values()}
    odd = dict(reversed(list(ranks.items())))
    for source in (ranks, odd, {**ranks, b"": 9999}, {**ranks, b"xyz": True}):
        results = [outcome(lambda m=m, s=source: m.Tokenizer.from_tiktoken(s, pattern="gpt2"))
                   for m in both]
        assert results[0] == results[1]


# ---------------------------------------------------------------------------------------
# the native format


def _merges_at(text):
    return next(i for i, line in enumerate(text.split("\n")) if line.startswith("merges "))


def _swap_first_merges(text):
    lines = text.split("\n")
    first = _merges_at(text) + 1
    return "\n".join(lines[:first] + [lines[first + 1], lines[first]] + lines[first + 2:])


NATIVE_VARIANTS = {  # native files from a saved one: plain and odd
    "plain": lambda text: text,
    "crlf": lambda text: text.replace("\n", "\r\n"),
    "no final newline": lambda text: text.rstrip("\n"),
    "trailing blank lines": lambda text: text + "\n\n",
    "truncated": lambda text: "\n".join(text.split("\n")[:_merges_at(text) + 20]),
    "repeated merge line": lambda text: "\n".join(
        text.split("\n")[:_merges_at(text) + 2] + text.split("\n")[_merges_at(text) + 1:]),
    "merges out of order": _swap_first_merges,
    "bad char": lambda text: text.replace("Ġ", " ", 1),
    "space in a token": lambda text: text.replace("\n3 ", "\n3 a b", 1),
    "empty token": lambda text: text.replace("\n3 $", "\n3 ", 1),
    "id too large": lambda text: text.replace("\n3 $", "\n3000000000 $", 1),
    "leading zeros": lambda text: text.replace("\n3 $", "\n003 $", 1),
    "count too large": lambda text: text.replace("\nmerges ", "\nmerges 9999999", 1),
    "special id taken": lambda text: text.replace(f"\n{256 + 300 - 2} ", "\n300 ", 1),
}


@pytest.mark.parametrize("name", NATIVE_VARIANTS)
def test_native_variants_load_alike(both, small, tmp_path, name):
    small.save(tmp_path / "m.bpe")
    text = NATIVE_VARIANTS[name]((tmp_path / "m.bpe").read_text())
    (tmp_path / "v.bpe").write_bytes(text.encode("utf-8"))
    results = [outcome(lambda m=m: m.Tokenizer.load(tmp_path / "v.bpe")) for m in both]
    assert results[0] == results[1]
    if name == "plain":
        assert results[0][:6] == outcome(lambda: small)[:6]


def test_native_plain_tokens_and_sparse_ids(both, tmp_path):
    """A vocabulary with tokens no merge makes and ids out of merge order loads alike."""
    vocab = {i: bytes([i]) for i in range(256)}
    vocab.update({1000: b"zz", 300: b"ab", 299: b"abc", 70000: b"q" * 40})
    merges = [(b"a", b"b"), (b"ab", b"c")]
    for m in both:
        tok = m.Tokenizer.from_merges(merges, vocab=vocab, special_tokens=[EOT])
        tok.save(tmp_path / f"{m.__name__}.bpe")
    results = [outcome(lambda m=m, n=n: m.Tokenizer.load(tmp_path / f"{n.__name__}.bpe"))
               for m in both for n in both]
    assert all(r == results[0] for r in results) and results[0][0] == "ok"


# ---------------------------------------------------------------------------------------
# a tokenizer read in C: its model on demand, equal to one read the slow way


@pytest.fixture(scope="module")
def cl100k(both):
    return [m.get_encoding("cl100k_base", path=DATA / "cl100k_base.tiktoken.gz") for m in both]


@pytest.mark.slow
def test_get_encoding_model_alike(cl100k):
    fast, slow = cl100k
    assert fast.merges == slow.merges
    assert fast.vocab == slow.vocab and list(fast.vocab) == list(slow.vocab)
    assert fast.special_tokens == slow.special_tokens
    assert fast.n_vocab == slow.n_vocab and fast.max_token_value == slow.max_token_value
    assert fast == slow


@pytest.mark.slow
def test_read_in_c_then_files_and_pickles(both, cl100k, tmp_path):
    fast, slow = cl100k
    for tok, name in ((fast, "fast"), (slow, "slow")):
        tok.save(tmp_path / f"{name}.bpe")
        tok.save_tiktoken(tmp_path / f"{name}.tiktoken", sidecar=False)
        tok.save_gpt2(tmp_path / name)
    for suffix in (".bpe", ".tiktoken", "/vocab.json", "/merges.txt"):
        fast_file, slow_file = tmp_path / f"fast{suffix}", tmp_path / f"slow{suffix}"
        assert fast_file.read_bytes() == slow_file.read_bytes(), suffix
    again = pickle.loads(pickle.dumps(both[0].Tokenizer.load(tmp_path / "fast.bpe")))
    assert again == slow
    text = PLAIN_TEXTS["code"]
    assert again.encode(text) == slow.encode(text) == fast.encode(text)


@pytest.mark.slow
def test_gzipped_and_plain_files_alike(both, tmp_path):
    plain = tmp_path / "cl100k_base.tiktoken"
    plain.write_bytes(gzip.decompress((DATA / "cl100k_base.tiktoken.gz").read_bytes()))
    a = both[0].get_encoding("cl100k_base", path=plain)
    b = both[0].Tokenizer.from_tiktoken(plain, pattern="cl100k",
                                        special_tokens=a.special_tokens)
    assert a == b and a.encode(PLAIN_TEXTS["code"]) == b.encode(PLAIN_TEXTS["code"])


def test_subclass_core_class_kept(mod, small, tmp_path):
    """A Tokenizer subclass's core class builds the core on every path, the C readers' too."""
    class Watching(mod.Core):
        pass

    class Tok(mod.Tokenizer):
        core_class = Watching

    small.save(tmp_path / "m.bpe")
    (tmp_path / "m.tiktoken").write_text("\n".join(tiktoken_lines(small)) + "\n")
    for tok in (Tok.load(tmp_path / "m.bpe"),
                Tok.from_tiktoken(tmp_path / "m.tiktoken", pattern="gpt2")):
        assert type(tok.core) is Watching and type(tok) is Tok
