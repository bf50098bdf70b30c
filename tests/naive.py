"""A naive, obviously-correct reference for the training and encoding rules
(docs/training.md).

Slow on purpose: every merge step recounts every adjacent pair of every pre-token, and
encoding replays the merges one by one in training order.  Only for small inputs.
"""

import functools
from collections import Counter

import regex

# The patterns, spelled out here independently of the library.
GPT2_PATTERN = (
    r"""'(?:[sdmt]|ll|ve|re)| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S)|\s+"""
)
# tiktoken's cl100k_base and o200k_base patterns (tiktoken_ext/openai_public.py).
CL100K_PATTERN = (
    r"""'(?i:[sdmt]|ll|ve|re)|[^\r\n\p{L}\p{N}]?+\p{L}++|\p{N}{1,3}+| ?[^\s\p{L}\p{N}]++[\r\n]*+"""
    r"""|\s++$|\s*[\r\n]|\s+(?!\S)|\s"""
)
O200K_PATTERN = "|".join(
    [
        r"""[^\r\n\p{L}\p{N}]?[\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}]*[\p{Ll}\p{Lm}\p{Lo}\p{M}]+(?i:'s|'t|'re|'ve|'m|'ll|'d)?""",
        r"""[^\r\n\p{L}\p{N}]?[\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}]+[\p{Ll}\p{Lm}\p{Lo}\p{M}]*(?i:'s|'t|'re|'ve|'m|'ll|'d)?""",
        r"""\p{N}{1,3}""",
        r""" ?[^\s\p{L}\p{N}]+[\r\n/]*""",
        r"""\s*[\r\n]+""",
        r"""\s+(?!\S)""",
        r"""\s+""",
    ]
)
WORDS_PATTERN = r"\S+\s?|\s+"
BYTES_PATTERN = r"[\s\S]+"

NAMED = {
    "gpt2": GPT2_PATTERN,
    "cl100k": CL100K_PATTERN,
    "o200k": O200K_PATTERN,
    "words": WORDS_PATTERN,
    "bytes": None,
    None: None,
}


def resolve_pattern(pattern):
    """Pattern name or regex -> regex string, or None for no pre-tokenization."""
    if pattern in NAMED:
        return NAMED[pattern]
    return pattern


def split_on_specials(text, special_tokens):
    """The pieces of text between special tokens (longest special first)."""
    if not special_tokens:
        return [text]
    alternatives = sorted(special_tokens, key=len, reverse=True)
    return regex.split("|".join(regex.escape(s) for s in alternatives), text)


def pretokenize(piece, pattern):
    regex_string = resolve_pattern(pattern)
    if regex_string is None:
        return [piece] if piece else []
    return [m.group() for m in regex.finditer(reference_regex(regex_string), piece) if m.group()]


@functools.cache
def reference_regex(pattern):
    """`pattern` for `regex` with the reference's character classes (tiktoken's, which
    test_unicode_tables holds over every code point): each class escape of the named patterns
    spelled as the code points the library's public pattern_program gives it."""
    from bpe_fallback import pattern_program

    def ranges(escape):
        return "".join(f"\\U{a:08x}" + (f"-\\U{b:08x}" if b > a else "")
                       for a, b in pattern_program(escape + "+")["classes"][0])

    out, i, inside = [], 0, False
    while i < len(pattern):
        m = regex.match(r"\\(?:p\{\w+\}|[sS])", pattern[i:])
        if m is None:
            c = pattern[i:i + 2] if pattern[i] == "\\" else pattern[i]
            inside = (inside or c == "[") and c != "]"
            out.append(c)
            i += len(c)
            continue
        escape = m.group()
        if escape == "\\S":
            out.append(escape if inside else "[^" + ranges("\\s") + "]")
        else:
            out.append(ranges(escape) if inside else "[" + ranges(escape) + "]")
        i += len(escape)
    return "".join(out)


def count_pretokens(texts, pattern="gpt2", special_tokens=()):
    if isinstance(texts, str):
        texts = [texts]
    counts = Counter()
    for text in texts:
        for piece in split_on_specials(text, special_tokens):
            for pre in pretokenize(piece, pattern):
                counts[pre.encode("utf-8")] += 1
    return dict(counts)


def merge_word(word, pair, new):
    """Merge every non-overlapping occurrence of pair in word, left to right."""
    out = []
    i = 0
    while i < len(word):
        if i + 1 < len(word) and word[i] == pair[0] and word[i + 1] == pair[1]:
            out.append(new)
            i += 2
        else:
            out.append(word[i])
            i += 1
    return tuple(out)


def train_from_counts(counts, vocab_size, special_tokens=(), min_frequency=2, max_token_bytes=None,
                      tie_break="bytes"):
    """Returns the list of merges (pairs of bytes).  tie_break="rustbpe": of the pairs with
    the highest count, the one of the smallest (left id, right id) (rustbpe's rule)."""
    n_merges = vocab_size - 256 - len(special_tokens)
    if n_merges < 0:
        raise ValueError("vocab_size too small")
    if tie_break == "rustbpe":
        return _train_by_id(counts, n_merges, min_frequency, max_token_bytes)
    words = Counter()
    for token, count in counts.items():
        if isinstance(token, str):
            token = token.encode("utf-8")
        if token:
            words[tuple(bytes([b]) for b in token)] += count
    merges = []
    while len(merges) < n_merges:
        pairs = Counter()
        for word, count in words.items():
            for i in range(len(word) - 1):
                pairs[word[i], word[i + 1]] += count
        candidates = [
            (count, pair)
            for pair, count in pairs.items()
            if max_token_bytes is None or len(pair[0]) + len(pair[1]) <= max_token_bytes
        ]
        if not candidates:
            break
        count, best = max(candidates)
        if count < min_frequency:
            break
        merges.append(best)
        new = best[0] + best[1]
        merged = Counter()
        for word, c in words.items():
            merged[merge_word(word, best, new)] += c
        words = merged
    return merges


def _train_by_id(counts, n_merges, min_frequency, max_token_bytes):
    """The same loop with ids as symbols (id 256 + k is the k-th merge), ties going to the
    smallest pair of ids: two merges that make the same bytes stay two symbols."""
    tokens = [bytes([i]) for i in range(256)]
    words = Counter()
    for token, count in counts.items():
        if isinstance(token, str):
            token = token.encode("utf-8")
        if token:
            words[tuple(token)] += count
    merges = []
    while len(merges) < n_merges:
        pairs = Counter()
        for word, count in words.items():
            for i in range(len(word) - 1):
                pairs[word[i], word[i + 1]] += count
        candidates = [
            (count, -a, -b)
            for (a, b), count in pairs.items()
            if max_token_bytes is None or len(tokens[a]) + len(tokens[b]) <= max_token_bytes
        ]
        if not candidates:
            break
        count, a, b = max(candidates)
        if count < min_frequency:
            break
        best = (-a, -b)
        merges.append((tokens[best[0]], tokens[best[1]]))
        new = len(tokens)
        tokens.append(tokens[best[0]] + tokens[best[1]])
        merged = Counter()
        for word, c in words.items():
            merged[merge_word(word, best, new)] += c
        words = merged
    return merges


def train(
    texts, vocab_size, pattern="gpt2", special_tokens=(), min_frequency=2, max_token_bytes=None,
    tie_break="bytes",
):
    counts = count_pretokens(texts, pattern=pattern, special_tokens=special_tokens)
    return train_from_counts(
        counts,
        vocab_size,
        special_tokens=special_tokens,
        min_frequency=min_frequency,
        max_token_bytes=max_token_bytes,
        tie_break=tie_break,
    )


def vocab_of(merges, special_tokens=()):
    vocab = {i: bytes([i]) for i in range(256)}
    for k, (a, b) in enumerate(merges):
        vocab[256 + k] = a + b
    for j, s in enumerate(special_tokens):
        vocab[256 + len(merges) + j] = s.encode("utf-8")
    return vocab


def encode_ordinary(text, merges, pattern="gpt2"):
    """Replay the merges in training order on every pre-token."""
    ids_of = {bytes([i]): i for i in range(256)}
    for k, (a, b) in enumerate(merges):
        ids_of.setdefault(a + b, 256 + k)
    out = []
    for pre in pretokenize(text, pattern):
        word = tuple(bytes([b]) for b in pre.encode("utf-8"))
        for pair in merges:
            if len(word) < 2:
                break
            word = merge_word(word, pair, pair[0] + pair[1])
        out.extend(ids_of[sym] for sym in word)
    return out
