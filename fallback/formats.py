"""Writing GPT-2's and tiktoken's files, and the checks that an export is exact
(a file that another library reads must give this tokenizer's ids)."""

from __future__ import annotations as _annotations

import regex as _regex

from .oniguruma import _onig_body
from .patterns import _NAMED_PATTERNS, Pipeline, _compile_pattern
from .ranks import _tiktoken_model
from .readers import _TIKTOKEN_PROBES, _gpt2_fingerprint, token_to_str
from .regex_syntax import _from_fancy, _nullable, _RegexReader
from .util import _short


def _one_name_per_id(tok, target):
    """ValueError where special tokens share an id: `target` gives an id one name."""
    seen = {}
    for s, i in tok._specials.items():
        if seen.setdefault(i, s) != s:
            raise ValueError(f"special tokens {_short(seen[i])} and {_short(s)} share id {i}, "
                             f"which {target} cannot hold (it gives an id one token)")


def _gpt2_dump(tok):
    import json

    found = _unrebuilt_token(tok)  # GPT-2's readers apply the merges only
    if found is not None:
        i, t, ids = found
        raise ValueError(f"GPT-2's merges.txt cannot express token {_short(t)} (id {i}): merges "
                         f"alone make {_short(ids)} of its text, this tokenizer gives the token")

    vocab = {token_to_str(t): i for i, t in tok._tokens.items()}
    for s, i in tok._specials.items():
        if s in vocab:
            raise ValueError(f"special token {_short(s)} has the same text as token {vocab[s]} in "
                             "vocab.json")
        vocab[s] = i
    vocab = dict(sorted(vocab.items(), key=lambda kv: kv[1]))
    lines = [f"{token_to_str(a)} {token_to_str(b)}" for a, b in tok._merges]
    head = f"#version: 0.2 bpe-pair:{_gpt2_fingerprint(vocab, lines)}\n"
    return json.dumps(vocab, ensure_ascii=False), head + "".join(line + "\n" for line in lines)


def _check_rank_order(tok):
    if isinstance(tok._pattern, Pipeline):
        raise ValueError("tiktoken splits by one regex and normalizes nothing; this tokenizer's "
                         "pattern is a Pipeline: save_huggingface or save can hold it")
    ids = tok._rank_id
    for k, (a, b) in enumerate(zip(ids, ids[1:])):
        if a >= b:
            raise ValueError(f"tiktoken uses ids as merge ranks, but this tokenizer's merge "
                             f"results do not have increasing ids: merge {k + 1} makes "
                             f"{_short(tok._tokens[b])} (id {b}) after merge {k} made "
                             f"{_short(tok._tokens[a])} (id {a})")


_BACKREFERENCE = _regex.compile(r"\\(?:[1-9]|k<|g)|\(\?P=")


def _tiktoken_pattern(pattern):
    r"""`pattern` for tiktoken's regex engine, with this library's meaning.
    tiktoken drops the text between two matches; here it is a pre-token of
    its own.  A named pattern leaves no such text; another is written as
    ``(?:P)|(?:(?!(?:P))[\s\S])+`` (a run of characters where no match
    starts), P in the form written for Oniguruma where it has one (explicit
    code point ranges, possessive repeats as atomic groups), which tiktoken's
    engine reads alike.  A back-reference would refer to the wrong copy: a
    ValueError."""
    if pattern in _NAMED_PATTERNS:
        return pattern
    if _BACKREFERENCE.search(pattern):
        raise ValueError(f"cannot write the pattern {_short(pattern)} for tiktoken, which "
                         "drops the text between matches, with a back-reference in it")
    try:
        nullable = _nullable(_RegexReader(pattern, onig=False).parse())
    except RecursionError:
        nullable = False
    except ValueError as e:  # syntax this library's reader does not parse: tiktoken reads it,
        if "repeated anchor" in str(e):  # but for a repeated anchor, otherwise than regex
            raise ValueError(f"cannot write the pattern {_short(pattern)} for tiktoken: {e}; "
                             "tiktoken's regex engine reads it otherwise") from None
        nullable = False
    if nullable:
        raise ValueError(f"cannot write the pattern {_short(pattern)} for tiktoken: it can "
                         "match the empty string")
    try:
        # tiktoken's engine reads \Z as "before any final run of newlines": write regex's
        # end-or-before-a-final-newline out (an export's only "\Z" is that anchor)
        body = _onig_body(pattern).replace("\\Z", "(?=\\n?\\z)")
    except ValueError:
        body = pattern
        if "$" in pattern or "\\Z" in pattern:
            raise ValueError(f"cannot write the pattern {_short(pattern)} for tiktoken, whose "
                             "regex engine reads $ and \\Z otherwise than regex") from None
        rx = _compile_pattern(pattern)
        if rx.fullmatch("") is not None or any(
                m.start() == m.end() for text in _TIKTOKEN_PROBES for m in rx.finditer(text)):
            raise ValueError(f"cannot write the pattern {_short(pattern)} for tiktoken: it can "
                             "match the empty string (tiktoken fails on an empty match)") from None
        try:   # as tiktoken's engine reads it, it means what regex reads only if unchanged
            alike = _from_fancy(pattern) == pattern
        except ValueError:
            alike = False
        if not alike:
            raise ValueError(f"cannot write the pattern {_short(pattern)} for tiktoken, whose "
                             "regex engine reads some of it otherwise than regex (a POSIX or "
                             "nested class, a set operation, \\h, \\x{...} or a flag)") from None
    return f"(?:{body})|(?:(?!(?:{body}))[\\s\\S])+"


def _tiktoken_dump(tok):
    import base64

    _check_tiktoken_exact(tok)
    return "".join(f"{base64.b64encode(t).decode('ascii')} {i}\n"
                   for i, t in sorted(tok._tokens.items()))


def _check_merges_rebuild(tok, where):
    """With ignore_merges false, tokenizers encodes a pre-token by its merges
    only, this library (as tiktoken, and tokenizers with ignore_merges true)
    takes a pre-token that is itself a token as that token: the same ids
    exactly when every token's own merges rebuild it."""
    found = _unrebuilt_token(tok)
    if found is not None:
        i, t, ids = found
        raise ValueError(f"{where}: with model.ignore_merges false, tokenizers never gives "
                         f"token {_short(t)} (id {i}) for its own text (its merges make "
                         f"{_short(ids)}), and this library would; not supported")


def _unrebuilt_token(tok):
    """(id, bytes, ids) of the first token (by id) that merges alone, by rank
    (GPT-2's rule: no whole-token rule), do not rebuild from its bytes, or
    None (see Core.unrebuilt).  A token whose bytes are not UTF-8 is never a
    whole pre-token, a single byte always rebuilds."""
    found = tok._core.unrebuilt()
    if found is None:
        return None
    i, ids = found
    return i, tok._tokens[i], ids


def _check_tiktoken_exact(tok):
    """tiktoken keeps ranks only and rebuilds the merges from them (a token
    is the join of the two pieces that byte-pair encoding with the lower
    ranks leaves; ids are ranks): the export is exact when the merges it
    rebuilds from this tokenizer's ids are this tokenizer's merges, in
    order.  Else a ValueError naming the first token it cannot express."""
    _check_rank_order(tok)
    ranks = {t: i for i, t in tok._tokens.items()}
    what = "tiktoken's format (ranks only) cannot express this tokenizer"
    try:
        derived = _rebuilt_merges(tok, ranks)
    except ValueError as e:
        raise ValueError(f"{what}: {str(e).split(': ', 1)[-1]}") from None
    if derived == tok._merges:
        return
    ours = {a + b: (a, b) for a, b in tok._merges}
    theirs = {a + b: (a, b) for a, b in derived}
    for i, t in sorted(tok._tokens.items()):
        if ours.get(t) != theirs.get(t):
            mine, other = ours.get(t), theirs.get(t)
            raise ValueError(
                f"{what}: token {_short(t)} (id {i}) " +
                (f"is made by merging {_short(mine[0])} and {_short(mine[1])} here"
                 if mine else "is made by no merge here") + ", but tiktoken would " +
                (f"merge {_short(other[0])} and {_short(other[1])} into it" if other
                 else "never build it by a merge"))
    raise ValueError(f"{what}: its merges are not in the order of their ids")  # pragma: no cover


def _rebuilt_merges(tok, ranks):
    """The merges (pairs of bytes, by rank) that tiktoken's rule implies for
    `ranks`: read by the core's C reader where it has one, else by
    _tiktoken_model."""
    core_class = type(tok._core)
    model = core_class.tiktoken_model(ranks)
    if model is not None:
        core = core_class.from_model(tok._pattern, model, {})
        tokens = core.tokens()
        return [(tokens[a], tokens[b]) for a, b, _ in core.merges()]
    return _tiktoken_model(ranks, "this tokenizer")[1]
