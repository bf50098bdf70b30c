"""Pre-tokenization patterns: the named patterns, resolving a name or a regex,
pipelines of normalizers and splits, the pre-tokenizer, special-token checks."""

from __future__ import annotations as _annotations

import collections as _collections
import collections.abc as _abc
import itertools as _itertools
import time as _time

import regex as _regex

from .normalization import _normalize
from .regex_syntax import _may_consume
from .unicode_tables import _class_char, _code_split, _spell_pattern
from .util import _short

PATTERNS = {
    "gpt2": r"""'(?:[sdmt]|ll|ve|re)| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S)|\s+""",
    "cl100k": (
        r"""'(?i:[sdmt]|ll|ve|re)|[^\r\n\p{L}\p{N}]?+\p{L}++|\p{N}{1,3}+"""
        r"""| ?[^\s\p{L}\p{N}]++[\r\n]*+|\s++$|\s*[\r\n]|\s+(?!\S)|\s"""
    ),
    "o200k": "|".join(
        [
            r"""[^\r\n\p{L}\p{N}]?[\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}]*[\p{Ll}\p{Lm}\p{Lo}\p{M}]+(?i:'s|'t|'re|'ve|'m|'ll|'d)?""",
            r"""[^\r\n\p{L}\p{N}]?[\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}]+[\p{Ll}\p{Lm}\p{Lo}\p{M}]*(?i:'s|'t|'re|'ve|'m|'ll|'d)?""",
            r"""\p{N}{1,3}""",
            r""" ?[^\s\p{L}\p{N}]+[\r\n/]*""",
            r"""\s*[\r\n]+""",
            r"""\s+(?!\S)""",
            r"""\s+""",
        ]
    ),
    "words": r"""\S+\s?|\s+""",
    "bytes": r"""[\s\S]+""",
    # the open models' pre-tokenizers (their published pattern strings, as data)
    "llama3": (r"""(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}{1,3}"""
               r"""| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+"""),
    "qwen2": (r"""(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}"""
              r"""| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+"""),
    "nanochat": (r"""'(?i:[sdmt]|ll|ve|re)|[^\r\n\p{L}\p{N}]?+\p{L}+|\p{N}{1,2}"""
                 r"""| ?[^\s\p{L}\p{N}]++[\r\n]*|\s*[\r\n]|\s+(?!\S)|\s+"""),
    # "deepseek_v3", a pipeline of splits, is added below Pipeline
}


# Where a file may be cut without changing its pre-tokens: a place no
# pre-token spans, whose left part ends the same way at the end of the text.
# GPT-2: after printable ASCII that a line break follows (a run of letters,
# digits or punctuation stops at white space).  cl100k/o200k: the same after an
# ASCII letter or digit only (their punctuation runs take the line breaks
# along).  words: after a line feed that printable ASCII follows.  Custom
# patterns of the GPT family: between an ASCII letter or digit and a line feed
# where _custom_cut finds that safe; other custom patterns and "bytes" are
# never cut inside a file.
_FILE_CUTS = {
    PATTERNS["gpt2"]: _regex.compile(rb"[\x21-\x7e](?=[\r\n])"),
    PATTERNS["cl100k"]: _regex.compile(rb"[0-9A-Za-z](?=[\r\n])"),
    PATTERNS["o200k"]: _regex.compile(rb"[0-9A-Za-z](?=[\r\n])"),
    PATTERNS["words"]: _regex.compile(rb"\n(?=[\x21-\x7e])"),
}


class Pipeline(_collections.namedtuple("Pipeline", "normalizers splits")):
    """A pre-tokenizer of several steps, as a Hugging Face tokenizer.json may
    have: the text is first normalized by each of `normalizers` in turn
    ("NFC", "NFD", "NFKC" or "NFKD", as tokenizers' normalizers give them:
    see normalize), then split by each regex of `splits` in turn, every
    piece of one split split again by the next (Hugging Face's Split with
    Isolated behaviour, as `pretokenizer` splits by one).  A tokenizer's
    `pattern` is a Pipeline where one regex cannot say it; give one wherever
    a pattern is taken.

    >>> p = resolve_pattern(Pipeline(["NFC"], [r"\\p{N}", "gpt2"]))
    >>> pretokenizer(p)("Cafe\u0301 2024")
    ['Café', ' ', '2', '0', '2', '4']
    """

    __slots__ = ()

    def normalize(self, text):
        """`text` normalized by each of `normalizers` in turn, exactly as
        tokenizers' normalizers give it (with their Unicode data, shipped
        here), whatever Python is installed.

        >>> Pipeline(["NFKC"], ["gpt2"]).normalize("\ufb01ne Cafe\u0301")
        'fine Café'
        """
        if not isinstance(text, str):
            raise TypeError(f"text must be a str, not {type(text).__name__}")
        for form in self.normalizers:
            text = _normalize(form, text)
        return text


_NORMALIZERS = ("NFC", "NFD", "NFKC", "NFKD")

# DeepSeek V3's tokenizer.json: a Sequence of three Isolated Splits (then ByteLevel
# without its regex): runs of 1 to 3 digits; runs of CJK ideographs, hiragana and
# katakana; then a GPT-4-like pattern over \p{P} and \p{S}.
PATTERNS["deepseek_v3"] = Pipeline((), (
    r"\p{N}{1,3}",
    "[\u4e00-\u9fa5\u3040-\u309f\u30a0-\u30ff]+",
    r"""[!"#$%&'()*+,\-./:;<=>?@\[\\\]^_`{|}~][A-Za-z]+|[^\r\n\p{L}\p{P}\p{S}]?[\p{L}\p{M}]+"""
    r"""| ?[\p{P}\p{S}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+""",
))

# A bare identifier is a name or a mistake, never a regex (write a regex that is
# one word as a group: (?:word)).
_NAME_LIKE = _regex.compile(r"[A-Za-z_][A-Za-z0-9_]*")


def _unknown_name(what, name, names, hint=""):
    return ValueError(f"unknown {what} name {_short(name)}: the names are "
                      f"{', '.join(names)}{hint}")


def resolve_pattern(pattern):
    """Return the regex string for a pattern name, None, or a custom regex;
    a Pipeline with its splits resolved (the one regex where that is all).
    The names are PATTERNS' keys; a bare identifier that is none of them is
    a ValueError listing them, any other string is a regex.  (Only the API
    and the command line resolve names: a pattern read from a file is the
    regex it says.)

    >>> resolve_pattern("words")
    '\\\\S+\\\\s?|\\\\s+'
    >>> resolve_pattern(None) == resolve_pattern("bytes")
    True
    """
    if pattern is None:
        return PATTERNS["bytes"]
    if isinstance(pattern, Pipeline):
        return _resolve_pipeline(pattern, resolve_pattern)
    if not isinstance(pattern, str):
        raise TypeError(f"pattern must be a str, a Pipeline or None, not "
                        f"{type(pattern).__name__}")
    named = PATTERNS.get(pattern)
    if named is not None:
        return named
    if _NAME_LIKE.fullmatch(pattern):
        raise _unknown_name("pattern", pattern, PATTERNS, " (a regex that is one bare word: "
                            f"write it as a group, (?:{pattern}))")
    _compile_pattern(pattern)
    return pattern


def _check_pattern(pattern):
    """A pattern as a file (or tiktoken's pat_str) gives it: a regex, or a
    Pipeline of regexes, checked; never a name.  The Pipeline that is one
    regex is that regex."""
    if isinstance(pattern, Pipeline):
        return _resolve_pipeline(pattern, _check_pattern)
    if not isinstance(pattern, str):
        raise TypeError(f"pattern must be a str or a Pipeline, not {type(pattern).__name__}")
    _compile_pattern(pattern)
    return pattern


def _pattern_of_json(value):
    """A pattern as json.dumps wrote it (a worker's task, a pickled model's
    state): a str, or a Pipeline as its two lists; checked as a file's."""
    if isinstance(value, list) and len(value) == 2:
        value = Pipeline(*value)
    return _check_pattern(value)


def _resolve_pipeline(pipeline, resolve):
    forms, splits = pipeline
    if any(isinstance(x, str) or not isinstance(x, _abc.Iterable) for x in pipeline):
        raise TypeError("a Pipeline's normalizers and splits are sequences of str")
    forms, splits = tuple(forms), tuple(splits)
    for form in forms:
        if not isinstance(form, str):
            raise TypeError(f"a Pipeline's normalizers are str, not {type(form).__name__}")
        if form not in _NORMALIZERS:
            raise ValueError(f"unknown normalizer {_short(form)} (known: "
                             f"{', '.join(_NORMALIZERS)})")
    if not splits:
        raise ValueError("a Pipeline needs at least one split (\"bytes\": none)")
    out = []
    for p in splits:
        p = resolve(p) if isinstance(p, str) else _not_str(p)
        if isinstance(p, Pipeline):  # a named pipeline among the splits: its splits
            if p.normalizers:
                raise ValueError("a named pipeline with normalizers cannot be a split")
            out.extend(p.splits)
        else:
            out.append(p)
    splits = tuple(out)
    if not forms and len(splits) == 1:
        return splits[0]
    return Pipeline(forms, splits)


def _not_str(value):
    raise TypeError(f"a Pipeline's splits are str, not {type(value).__name__}")


_compiled = {}

# Text that shows every class a pattern may care about: a pattern that finds
# nothing but empty matches in it matches the empty string everywhere.
_PROBE = "Hello, World! it's 2024\n\t  café 東京 🙂 ÀB_c-d.e/f\r\n"

# A custom pattern runs under a time budget, kept like a token bucket: each
# character of text earns PATTERN_TIME_PER_CHAR seconds (2 us: 0.5 MB/s, far
# below any sane pattern), and each split _PATTERN_TIME_PER_CALL (0.1 ms: a
# call's own cost, several us, is more than a short text earns, and a
# Pipeline's later splits run on every pre-token of the one before);
# unspent time carries over up to PATTERN_TIME_BASE.
# A split that overruns raises ValueError, so a catastrophic pattern costs at
# most about PATTERN_TIME_BASE plus 2 us per character (0.1 ms per split),
# whatever the input.
# Each thread has its own bucket, spent in its own CPU time: other threads'
# work and the machine's load drain nothing.
PATTERN_TIME_BASE = 2.0
PATTERN_TIME_PER_CHAR = 2e-6
_PATTERN_TIME_PER_CALL = 1e-4


def _compile_pattern(pattern):
    """The compiled regex of `pattern` as written; ValueError for a bad
    pattern.  What splits a text is _FAST_PATHS[pattern](text): this regex,
    or the pattern with the meaning the reference tables give its classes."""
    rx = _compiled.get(pattern)
    if rx is None:
        try:
            rx = _regex.compile(pattern)
        except (_regex.error, TypeError, ValueError, OverflowError, RecursionError) as e:
            raise ValueError(f"invalid pattern {_short(pattern)}: {e}") from None
        if rx.flags & _regex.REVERSE:
            raise ValueError(f"the pattern {_short(pattern)} searches backwards (?r): "
                             f"pre-tokens are read left to right")
        try:
            found = {bool(m.group()) for m in rx.finditer(_PROBE, timeout=PATTERN_TIME_BASE)}
        except TimeoutError:
            raise ValueError(f"the pattern {_short(pattern)} took too long on a short probe "
                             f"text (catastrophic backtracking?)") from None
        if (rx.match("") is not None or False in found) and True not in found \
                and not _may_consume(pattern):   # (the probe text may lack its characters:
            # b* is no empty pattern, though the probe holds no b)
            raise ValueError(f"the pattern {_short(pattern)} matches only the empty string")
        _FAST_PATHS[pattern] = _fast_path(pattern, rx)   # first: _compiled says both are set
        _compiled[pattern] = rx
    return rx


_FAST_PATHS = {}   # pattern -> text -> the compiled regex to split the text with


def _fast_path(pattern, fast):
    """A function text -> the compiled regex to split it with: `fast`, the
    pattern as written (regex's tables), where the text holds none of the
    code points on which its classes mean otherwise than the reference
    tables say, else the pattern with those classes spelled out (see
    _spell_pattern; worked out at the first such text)."""
    ascii_safe = []   # worked out at the first text (start-up need not pay for it)
    exact = []

    def choose(text):
        if type(text) is not str:
            return fast   # (regex names a wrong type)
        if not ascii_safe:
            ascii_safe.append(not _spell_pattern(pattern, upto=0x80)[1])
        if ascii_safe[0] and text.isascii():
            return fast
        if not exact:
            spelled, differ = _spell_pattern(pattern, v1=pattern in _NAMED_PATTERNS)
            if not differ:
                exact.append((fast, None))
            else:
                chars = frozenset(chr(c) for a, b in differ for c in range(a, b + 1))
                # the runs of characters from the lowest such code point on, each
                # looked up (one class of one range is fast in regex; a set of many is not)
                runs = _regex.compile(f"[{_class_char(differ[0][0])}-\\U0010ffff]+").finditer

                def clean(text):
                    return all(chars.isdisjoint(m.group()) for m in runs(text))

                try:
                    exact.append((_regex.compile(spelled), clean))
                except (_regex.error, RecursionError):  # pragma: no cover (a reader's gap)
                    exact.append((fast, None))
        rx, clean = exact[0]
        return fast if clean is None or clean(text) else rx

    return choose


_NAMED_PATTERNS = frozenset(PATTERNS.values())


def pretokenizer(pattern):
    """The pre-tokenizer of a regex or a Pipeline (a resolved pattern: see
    resolve_pattern): a function text -> list of pre-tokens.

    >>> pretokenizer(resolve_pattern("gpt2"))("Hello world, it's 42!")
    ['Hello', ' world', ',', ' it', "'s", ' 42', '!']
    >>> pretokenizer(r"\\d+")("in 2024 or so")  # the text between matches is kept
    ['in ', '2024', ' or so']

    Named patterns match every character, so their matches are the
    pre-tokens.  For a custom pattern, the text between two matches (a gap)
    is a pre-token of its own (Hugging Face's Split with Isolated behaviour),
    empty matches are skipped, capture groups do not matter, and the split
    runs under a time limit: a catastrophic pattern raises ValueError."""
    if isinstance(pattern, Pipeline):   # checked as a file's: TypeError / ValueError naming
        pattern = _check_pattern(pattern)   # what is wrong, never a failure when it runs
        if isinstance(pattern, Pipeline):
            return _pipeline_split(pattern)
    rx = _compile_pattern(pattern)
    choose = _FAST_PATHS[pattern]
    if pattern in _NAMED_PATTERNS:
        split = _code_splitter(pattern)
        return split if split is not None else lambda text: choose(text).findall(text)

    import threading

    bucket = threading.local()  # .slack: this thread's unspent time
    groups = rx.groups  # findall would give the groups, not the whole matches

    def split(text):
        budget = (getattr(bucket, "slack", PATTERN_TIME_BASE) + _PATTERN_TIME_PER_CALL
                  + PATTERN_TIME_PER_CHAR * len(text))
        start = _time.thread_time()
        out = None
        use = choose(text)
        if not groups:
            try:  # regex's clock is the process's CPU time: never less than this thread's
                out = use.findall(text, timeout=budget)
            except TimeoutError:
                pass
        if out is None or sum(map(len, out)) != len(text) or "" in out:
            out = with_gaps(text, start + budget, use)
        bucket.slack = min(PATTERN_TIME_BASE, budget - (_time.thread_time() - start))
        return out

    def with_gaps(text, deadline, use):
        """The matches and the text between them, until this thread's CPU
        clock reaches `deadline`; where regex's clock (every thread's time)
        stops it first, matching goes on after the last match."""
        out, pos = [], 0
        append = out.append
        while True:
            left = deadline - _time.thread_time()
            if left <= 0:
                bucket.slack = PATTERN_TIME_BASE  # the error ends the call: the next starts afresh
                raise ValueError(
                    f"the pattern {_short(pattern)} took too long on a text of {len(text)} "
                    f"characters (catastrophic backtracking?); simplify it")
            try:
                for m in use.finditer(text, pos, timeout=left):
                    start, end = m.span()
                    if start == end:
                        continue
                    if start > pos:
                        append(text[pos:start])
                    append(text[start:end])
                    pos = end
                break
            except TimeoutError:
                continue
        if pos < len(text):
            append(text[pos:])
        return out

    return split


_CODE_SPLITS = {}


def _code_splitter(pattern):
    """The split of a named pattern (which matches every character and never
    the empty string) by the standard library's `re` over class codes (see
    _code_split), faster than `regex` over the text; None where `re` cannot
    run it.  The matches' lengths cut the text into its pre-tokens."""
    if pattern not in _CODE_SPLITS:
        _CODE_SPLITS[pattern] = _code_split(pattern)
    found = _CODE_SPLITS[pattern]
    if found is None:
        return None
    codes, rx, ascii_rx = found
    findall, ascii_findall = rx.findall, ascii_rx.findall
    lengths, cut = _itertools.accumulate, slice

    def split(text):
        if not isinstance(text, str):
            raise TypeError(f"expected str, not {type(text).__name__}")
        if text.isascii():
            return ascii_findall(text)
        ends = list(lengths(map(len, findall(text.translate(codes))), initial=0))
        return list(map(text.__getitem__, map(cut, ends, ends[1:])))

    return split


def _pipeline_split(pipeline):
    forms = pipeline.normalizers
    steps = [pretokenizer(p) for p in pipeline.splits]

    def split(text):
        pieces = steps[0](pipeline.normalize(text) if forms else text)
        for step in steps[1:]:
            pieces = [q for piece in pieces for q in step(piece)]
        return pieces

    return split


_LINE_CUTS = {}


def _line_cut(kind, last=False):
    """The custom patterns' cut, between an ASCII letter or digit and a line
    feed, as a regex over `kind` (bytes or str); compiled at first use.
    `last`: one that searches from the end (its match is the last cut)."""
    key = (kind, last)
    if key not in _LINE_CUTS:
        text = ("(?r)" if last else "") + r"[0-9A-Za-z](?=\n)"
        _LINE_CUTS[key] = _regex.compile(text.encode("ascii") if kind is bytes else text)
    return _LINE_CUTS[key]


def _special_regex(specials):
    """A regex matching any of `specials`, the longest first at each place:
    written as a trie of them (at each place the characters are followed
    down it, whatever the number of specials: Llama 3 has 256, some models
    thousands), else, where that nests too deep, as their alternation."""
    if not specials:
        return None
    alts = sorted(set(specials), key=lambda s: (-len(s), s))
    if len(alts) > 1:
        trie = _special_trie(alts)
        if trie is not None:
            try:
                return _regex.compile(trie)
            except (_regex.error, RecursionError, OverflowError):
                pass
    return _regex.compile("|".join(_regex.escape(s) for s in alts))


def _special_trie(words, depth_limit=64):
    """A regex of the trie of `words`: one group where they branch, a greedy
    optional group past a word that longer ones continue (so the longest
    matches first); None past `depth_limit` nested groups."""
    root = {}
    for word in words:
        node = root
        for c in word:
            node = node.setdefault(c, {})
        node[None] = None   # a word ends here

    def emit(node, depth):
        if depth > depth_limit:
            raise RecursionError
        ends, kids = None in node, sorted((c, n) for c, n in node.items() if c is not None)
        if not kids:
            return ""
        alts = []
        for c, sub in kids:
            run = [c]
            while None not in sub and len(sub) == 1:   # a run with no branch: one literal
                (c, sub), = sub.items()
                run.append(c)
            alts.append(_regex.escape("".join(run)) + emit(sub, depth + 1))
        body = alts[0] if len(alts) == 1 else "(?:" + "|".join(alts) + ")"
        return f"(?:{body})?" if ends else body

    try:
        return emit(root, 0)
    except RecursionError:
        return None


# The open models' special tokens by name (special_tokens="llama3", bpe --special
# llama3): a dict of fixed ids, or a list whose tokens take the ids after the
# vocabulary, in order.
SPECIAL_TOKENS = {
    # Meta's Llama 3 (tokenizer.py): 256 specials after the 128,000 ranks
    "llama3": {s: 128000 + i for i, s in enumerate(
        ["<|begin_of_text|>", "<|end_of_text|>"]
        + [f"<|reserved_special_token_{k}|>" for k in range(4)]
        + ["<|start_header_id|>", "<|end_header_id|>", "<|reserved_special_token_4|>",
           "<|eot_id|>"]
        + [f"<|reserved_special_token_{k}|>" for k in range(5, 251)])},
    # Qwen 3's added tokens (Qwen 2.5's are the first 22, Qwen 2's the first 3)
    "qwen2": {s: 151643 + i for i, s in enumerate([
        "<|endoftext|>", "<|im_start|>", "<|im_end|>", "<|object_ref_start|>",
        "<|object_ref_end|>", "<|box_start|>", "<|box_end|>", "<|quad_start|>", "<|quad_end|>",
        "<|vision_start|>", "<|vision_end|>", "<|vision_pad|>", "<|image_pad|>", "<|video_pad|>",
        "<tool_call>", "</tool_call>", "<|fim_prefix|>", "<|fim_middle|>", "<|fim_suffix|>",
        "<|fim_pad|>", "<|repo_name|>", "<|file_sep|>", "<tool_response>", "</tool_response>",
        "<think>", "</think>"])},
    # nanochat's SPECIAL_TOKENS: after the merges of the vocabulary it trains
    "nanochat": ["<|bos|>", "<|user_start|>", "<|user_end|>", "<|assistant_start|>",
                 "<|assistant_end|>", "<|python_start|>", "<|python_end|>",
                 "<|output_start|>", "<|output_end|>"],
}


def _special_set(special_tokens):
    """special_tokens as given, or a copy of the named set of SPECIAL_TOKENS; a
    bare identifier that names none is a ValueError listing them."""
    if isinstance(special_tokens, str):
        named = SPECIAL_TOKENS.get(special_tokens)
        if named is not None:
            return named.copy()
        if _NAME_LIKE.fullmatch(special_tokens):
            raise _unknown_name("special-token set", special_tokens, SPECIAL_TOKENS)
    return special_tokens


def _check_specials(special_tokens):
    """The special tokens as a tuple of str, in the order given (a sequence, or
    a mapping's keys, or a set's name: SPECIAL_TOKENS).  A set has no order,
    so the ids it would give change from run to run: TypeError."""
    special_tokens = _special_set(special_tokens)
    if special_tokens is None:
        return ()
    if isinstance(special_tokens, (str, bytes)):
        raise TypeError("special_tokens must be a sequence of str, not a "
                        f"{type(special_tokens).__name__}")
    if isinstance(special_tokens, _abc.Set) and not isinstance(special_tokens, _abc.KeysView):
        raise TypeError("special_tokens must be a list (or another sequence), not a "
                        f"{type(special_tokens).__name__}: a set has no order, so the ids it "
                        "gives would change from run to run")
    try:
        specials = tuple(special_tokens)
    except TypeError:
        raise TypeError(f"special_tokens must be a sequence of str, not "
                        f"{type(special_tokens).__name__}") from None
    seen = set()
    for s in specials:
        _check_special_text(s)
        if s in seen:
            raise ValueError(f"special token {_short(s)} is given twice")
        seen.add(s)
    return specials


def _check_special_text(s):
    if not isinstance(s, str):
        raise TypeError(f"special_tokens must hold str, not {type(s).__name__}: {_short(s)}")
    if not s:
        raise ValueError("special tokens must not be empty")
    if not s.isascii():
        try:
            s.encode("utf-8")
        except UnicodeEncodeError as e:
            raise ValueError(f"special token {_short(s)} holds a lone surrogate "
                             f"(U+{ord(s[e.start]):04X}), which has no UTF-8 bytes") from None


def _special_items(mapping):
    """The (str, id) pairs of a mapping of special tokens to ids, each checked:
    a special token's text, and an int id (TypeError otherwise)."""
    items = []
    for s, i in mapping.items():
        _check_special_text(s)
        if isinstance(i, bool) or not isinstance(i, int):
            raise TypeError(f"special_tokens must map str to int ids, not {_short(s)} -> "
                            f"{_short(i)}")
        items.append((s, i))
    return items


def _repair(text):
    """Replace lone surrogates by U+FFFD (as tiktoken does); check the type.
    A str subclass (numpy.str_, ...) is read as the plain str it holds."""
    if type(text) is not str:
        if not isinstance(text, str):
            raise TypeError(f"expected str, not {type(text).__name__}")
        text = str.__str__(text)
    if text.isascii():
        return text
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        return text.encode("utf-16", "surrogatepass").decode("utf-16", "replace")
    return text
