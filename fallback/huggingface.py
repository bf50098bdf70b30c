"""Hugging Face tokenizer.json and transformers directories; reading any
format (from_file); the _FileFormats mixin."""

from __future__ import annotations as _annotations

import collections.abc as _abc
import os as _os

import regex as _regex

from .files import FileSet, _atomic_write, _read_file, _read_text, _text_of
from .formats import (
    _check_merges_rebuild,
    _check_tiktoken_exact,
    _gpt2_dump,
    _one_name_per_id,
    _tiktoken_dump,
    _tiktoken_pattern,
)
from .oniguruma import _digits_pattern, _pattern_from_onig, _pattern_to_onig
from .patterns import (
    _NORMALIZERS,
    PATTERNS,
    Pipeline,
    _check_pattern,
    _check_special_text,
    _compile_pattern,
    resolve_pattern,
)
from .ranks import _tiktoken_model
from .readers import (
    _NATIVE_MAGIC,
    _gpt2_parse,
    _is_id,
    _json,
    _json_ids,
    _json_type,
    _tiktoken_checked,
    _tiktoken_parse,
    str_to_token,
    token_to_str,
)
from .registry import _ENCODINGS, _KNOWN_RANKS
from .util import _MAX_ID, _check_int, _gc_paused, _short

_HF_FIELDS = frozenset(["version", "truncation", "padding", "added_tokens", "normalizer",
                        "pre_tokenizer", "post_processor", "decoder", "model"])
_HF_MODEL_FIELDS = frozenset(["type", "dropout", "unk_token", "continuing_subword_prefix",
                              "end_of_word_suffix", "fuse_unk", "byte_fallback", "ignore_merges",
                              "vocab", "merges"])
_HF_ADDED_FIELDS = frozenset(["id", "content", "single_word", "lstrip", "rstrip", "normalized",
                              "special"])
_HF_BYTE_LEVEL_FIELDS = frozenset(["type", "add_prefix_space", "trim_offsets", "use_regex"])
_HF_SPLIT_FIELDS = frozenset(["type", "pattern", "behavior", "invert"])


def _hf_dump(tok):
    import json

    vocab = {token_to_str(t): i for i, t in sorted(tok._tokens.items())}
    for s in tok._specials:
        if s in vocab:
            raise ValueError(f"special token {_short(s)} has the same text as token {vocab[s]} in "
                             "the byte-level vocabulary; tokenizers would give it that id")
    # tokenizers numbers the added tokens itself: the k-th (in the file's order, by id) gets
    # the model's vocabulary size + k, whatever id the file gives it
    for k, (s, i) in enumerate(sorted(tok._specials.items(), key=lambda kv: kv[1])):
        if i != len(vocab) + k:
            raise ValueError(f"tokenizer.json cannot give special token {_short(s)} its id {i}: "
                             f"tokenizers numbers added tokens on from its vocabulary's size "
                             f"({len(vocab)} tokens), so it would be {len(vocab) + k}")
    byte_level = {"type": "ByteLevel", "add_prefix_space": False, "trim_offsets": True,
                  "use_regex": False}
    pipeline = tok._pattern
    if not isinstance(pipeline, Pipeline):
        pipeline = Pipeline((), (pipeline,))
    pre = {
        "type": "Sequence",
        "pretokenizers": [
            {"type": "Split", "pattern": {"Regex": _pattern_to_onig(split)},
             "behavior": "Isolated", "invert": False}
            for split in pipeline.splits
        ] + [byte_level],
    }
    normalizer = [{"type": form} for form in pipeline.normalizers]
    if len(normalizer) > 1:
        normalizer = [{"type": "Sequence", "normalizers": normalizer}]
    doc = {
        "version": "1.0",
        "truncation": None,
        "padding": None,
        "added_tokens": [
            {"id": i, "content": s, "single_word": False, "lstrip": False, "rstrip": False,
             "normalized": False, "special": True}
            for s, i in sorted(tok._specials.items(), key=lambda kv: kv[1])
        ],
        "normalizer": normalizer[0] if normalizer else None,
        "pre_tokenizer": pre,
        "post_processor": None,
        "decoder": dict(byte_level),
        "model": {
            # ignore_merges: a pre-token that is itself a token is that token, as here
            "type": "BPE", "dropout": None, "unk_token": None, "continuing_subword_prefix": None,
            "end_of_word_suffix": None, "fuse_unk": False, "byte_fallback": False,
            "ignore_merges": True,
            "vocab": vocab,
            "merges": [[token_to_str(a), token_to_str(b)] for a, b in tok._merges],
        },
    }
    return json.dumps(doc, ensure_ascii=False, indent=1)


def _hf_parse(doc, where):
    """(pattern, tokens, merges, specials, ignore_merges) of a tokenizer.json's
    document: the reference reader, which names what it refuses."""
    c = _HfChecks(where)
    pattern, model = _hf_head(doc, c)
    vocab, merges, ignore_merges = _hf_model(model, c)
    made, joined = {a + b for a, b in merges}, {t for m in merges for t in m}
    specials = _hf_specials(doc, vocab, lambda t: "makes" if t in made else
                            "joins" if t in joined else None, pattern, c)
    special_ids = set(specials.values())
    tokens = {}
    for s, i in vocab.items():
        if i in special_ids:
            continue
        try:
            tokens[i] = str_to_token(s)
        except ValueError as e:
            c.fail(f"model.vocab: {e}")
    return pattern, tokens, merges, specials, ignore_merges


def _hf_head(doc, c):
    """(pattern, model object) of a tokenizer.json's document: its fields and
    everything around the model checked."""
    if not isinstance(doc, dict):
        c.fail(f"not a tokenizer.json: {_json_type(doc)}, not an object")
    model = doc.get("model")
    if not isinstance(model, dict):
        c.fail(f"not a tokenizer.json: 'model' must be an object, not {_json_type(model)}")
    c.check(doc, "", _HF_FIELDS)
    return _hf_pipeline(doc, c), model


def _hf_specials(doc, vocab, is_merged, pattern, c):
    """The special tokens of a document's added tokens (see _hf_added_tokens)."""
    specials = _hf_added_tokens(doc.get("added_tokens"), vocab, is_merged, c)
    if isinstance(pattern, Pipeline) and pattern.normalizers:
        for k, entry in enumerate(doc.get("added_tokens") or []):
            if entry.get("normalized"):
                c.fail(f"added_tokens[{k}] ({_short(entry['content'])}) is matched in normalized "
                       f"text (normalized true), which is not supported")
    return specials


class _HfChecks:
    """Checks of a tokenizer.json's fields; a ValueError names the file and the field."""

    def __init__(self, where):
        self.where = where

    def fail(self, what):
        raise ValueError(f"{self.where}: {what}")

    def check(self, obj, field, allowed):
        unknown = sorted(set(obj) - allowed)
        if unknown:
            self.fail(f"{field}{'.' if field else ''}{unknown[0]} is not a field this library "
                      f"knows; it might change the ids")

    def flag(self, obj, field, key):
        value = obj.get(key)
        if value is not None and not isinstance(value, bool):
            self.fail(f"{field}.{key} must be true or false, not {_short(value)}")
        return value


def _hf_pipeline(doc, c):
    """The pattern (a Pipeline where there is a normalizer or several
    splits); refuse what would change the ids around the model (truncation,
    padding, a normalizer other than Unicode's, a post-processor that adds or
    changes ids, a decoder other than ByteLevel)."""
    for key, effect in (("truncation", "cut"), ("padding", "pad")):
        if doc.get(key) is not None:
            c.fail(f"'{key}' is set: tokenizers would {effect} the ids, this library does not")
    forms = _hf_normalizers(doc.get("normalizer"), "normalizer", c)
    splits = _hf_splits(doc.get("pre_tokenizer"), c.fail)
    try:
        pattern = _check_pattern(Pipeline(forms, splits or [PATTERNS["bytes"]]))
    except ValueError as e:
        c.fail(f"pre_tokenizer: {e}")
    _hf_post_processor(doc.get("post_processor"), "post_processor", c)
    value = doc.get("decoder")
    if value is not None:
        if not isinstance(value, dict) or value.get("type") != "ByteLevel":
            c.fail(f"the decoder {_hf_kind(value)} is not supported (it would decode otherwise)")
        _hf_byte_level_flags(value, "decoder", c)
    return pattern


def _hf_byte_level_flags(value, field, c):
    c.check(value, field, _HF_BYTE_LEVEL_FIELDS)
    for name in ("add_prefix_space", "trim_offsets", "use_regex"):
        c.flag(value, field, name)


def _hf_post_processor(value, field, c):
    """Accept a post-processor that adds and changes no id, refuse any other:
    ByteLevel (it trims offsets only), a TemplateProcessing whose templates
    are `$A` and `$A $B` with no special token (type ids aside: transformers
    writes one on every save_pretrained), and a Sequence of these."""
    if value is None:
        return
    kind = value.get("type") if isinstance(value, dict) else None
    if kind == "ByteLevel":
        _hf_byte_level_flags(value, field, c)
    elif kind == "Sequence":
        c.check(value, field, frozenset(["type", "processors"]))
        steps = value.get("processors")
        if not isinstance(steps, list):
            c.fail(f"{field}.processors must be an array, not {_json_type(steps)}")
        for k, step in enumerate(steps):
            _hf_post_processor(step, f"{field}.processors[{k}]", c)
    elif kind == "TemplateProcessing":
        c.check(value, field, frozenset(["type", "single", "pair", "special_tokens"]))
        for key, want in (("single", ["A"]), ("pair", ["A", "B"])):
            pieces = value.get(key)
            if not isinstance(pieces, list) or [_hf_template_part(p) for p in pieces] != want:
                c.fail(f"{field}: a TemplateProcessing whose {key} template is not "
                       f"{' '.join('$' + x for x in want)} is not supported (it would add or move "
                       f"ids)")
        if not isinstance(value.get("special_tokens", {}), dict):
            c.fail(f"{field}.special_tokens must be an object, not "
                   f"{_json_type(value['special_tokens'])}")
    else:
        c.fail(f"the {field} {_hf_kind(value)} is not supported (it would add or change ids)")


def _hf_template_part(part):
    """"A" or "B" for a template's {"Sequence": {"id": "A", "type_id": n}}, else None."""
    if not (isinstance(part, dict) and list(part) == ["Sequence"]
            and isinstance(part["Sequence"], dict)):
        return None
    sequence = part["Sequence"]
    type_id = sequence.get("type_id", 0)
    if (set(sequence) <= {"id", "type_id"} and isinstance(type_id, int)
            and not isinstance(type_id, bool) and sequence.get("id") in ("A", "B")):
        return sequence["id"]
    return None


def _hf_model(model, c):
    """(vocab, merges, ignore_merges) of the model: a plain byte-level BPE."""
    ignore_merges = _hf_model_options(model, c)
    vocab = _json_ids(model.get("vocab"), c.where, "model.vocab")
    raw_merges = model.get("merges", [])
    if not isinstance(raw_merges, list):
        c.fail(f"model.merges must be an array, not {_json_type(raw_merges)}")
    merges = []
    for k, m in enumerate(raw_merges):
        if isinstance(m, str):
            m = m.split(" ")
        if not (isinstance(m, list) and len(m) == 2 and all(isinstance(x, str) for x in m)):
            c.fail(f"model.merges[{k}] is not a pair of tokens: {_short(m)}")
        try:
            merges.append((str_to_token(m[0]), str_to_token(m[1])))
        except ValueError as e:
            c.fail(f"model.merges[{k}]: {e}")
    return vocab, merges, ignore_merges


def _hf_model_options(model, c):
    """ignore_merges, once the model's other options are checked."""
    c.check(model, "model", _HF_MODEL_FIELDS)
    if model.get("type", "BPE") != "BPE":
        c.fail(f"model.type {_short(model.get('type'))} is not BPE")
    dropout = model.get("dropout")
    if dropout is not None:
        if isinstance(dropout, bool) or not isinstance(dropout, (int, float)):
            c.fail(f"model.dropout must be a number or null, not {_short(dropout)}")
        if dropout != 0:
            c.fail(f"model.dropout = {dropout}: tokenizers would drop merges at random")
    for key in ("unk_token", "continuing_subword_prefix", "end_of_word_suffix"):
        value = model.get(key)
        if value is not None and not isinstance(value, str):
            c.fail(f"model.{key} must be a string or null, not {_short(value)}")
        if key != "unk_token" and value:
            c.fail(f"model.{key} = {_short(value)} is not supported (byte-level BPE has no "
                   f"subword marks)")
    # unk_token, fuse_unk and byte_fallback act only on a character missing
    # from the vocabulary: a byte-level one has all 256 (checked when built)
    for key in ("fuse_unk", "byte_fallback"):
        c.flag(model, "model", key)
    return bool(c.flag(model, "model", "ignore_merges"))


def _hf_added_tokens(added, vocab, is_merged, c):
    """The added tokens, which are the special tokens: str -> the id
    tokenizers gives it, whatever id the file writes: a token of model.vocab
    keeps its vocabulary id, the others are numbered from the vocabulary's
    size on, in file order.  What tokenizers would match or number otherwise
    than this library can is refused, naming the field: lstrip, rstrip,
    single_word; a normalized token that can overlap a non-normalized one
    (tokenizers matches those first, then the normalized ones in what is
    left); an added token that is a byte of the vocabulary or a token a
    merge makes or joins, or whose number is a vocabulary token's id.
    `is_merged(bytes)`: "makes", "joins" or None."""
    if added is None:
        added = []
    if not isinstance(added, list):
        c.fail(f"added_tokens must be an array, not {_json_type(added)}")
    specials, fields, normalized = {}, {}, []
    vocab_ids = None  # id -> form, built when first asked
    numbered = 0
    for k, entry in enumerate(added):
        field = f"added_tokens[{k}]"
        if not isinstance(entry, dict):
            c.fail(f"{field} must be an object, not {_json_type(entry)}")
        c.check(entry, field, _HF_ADDED_FIELDS)
        content, i = entry.get("content"), entry.get("id")
        if not isinstance(content, str) or not content:
            c.fail(f"{field}.content must be a non-empty string, not {_short(content)}")
        if isinstance(i, bool) or not isinstance(i, int) or not 0 <= i < _MAX_ID:
            c.fail(f"{field}.id must be an int in [0, 2**31), not {_short(i)}")
        for key in ("single_word", "lstrip", "rstrip", "normalized", "special"):
            if c.flag(entry, field, key) and key in ("single_word", "lstrip", "rstrip"):
                c.fail(f"{field}.{key} ({_short(content)}): true is not supported (tokenizers "
                       f"would {_HF_STRIPS[key]})")
        try:
            _check_special_text(content)
        except ValueError as e:
            c.fail(f"{field}: {e}")
        if content in specials:
            c.fail(f"{field}: {_short(content)} is added twice")
        if content in vocab:
            i = vocab[content]
            try:
                t = str_to_token(content)
            except ValueError:
                t = None
            if t != content.encode("utf-8"):
                c.fail(f"{field}.content {_short(content)} is the model.vocab entry of id {i}, "
                       f"whose bytes are {_short(t)}: tokenizers gives the text "
                       f"{_short(content)} that id; not supported")
            merge = None if len(t) == 1 else is_merged(t)
            if len(t) == 1 or merge:
                c.fail(f"{field}.content {_short(content)} is token {i} of model.vocab, " +
                       ("a byte" if len(t) == 1 else f"which a merge {merge}") +
                       ": tokenizers matches it whole in text as an added token with that id; "
                       "not supported")
        else:
            i = len(vocab) + numbered
            numbered += 1
            if vocab_ids is None:  # (ids below the vocabulary's size cannot be met)
                vocab_ids = ({} if max(vocab.values(), default=-1) < len(vocab)
                             else {i: s for s, i in vocab.items()})
            if i in vocab_ids or i >= _MAX_ID:
                c.fail(f"{field}.id: tokenizers numbers the added tokens that are not in "
                       f"model.vocab from its size ({len(vocab)}) on, in file order, which gives "
                       f"{_short(content)} id {i}" +
                       (f", the id of model.vocab's {_short(vocab_ids[i])}" if i in vocab_ids
                        else "") + "; not supported")
        specials[content] = i
        fields[content] = field
        if entry.get("normalized"):
            normalized.append(content)
    plain = [s for s in specials if s not in normalized]
    pair = _overlapping(plain, normalized)
    if pair is not None:
        a, b = pair
        c.fail(f"{fields[b]}.normalized: {_short(b)} is matched in what is left once the "
               f"non-normalized added tokens are, and it can overlap {_short(a)} ({fields[a]}), "
               f"so tokenizers would match them otherwise than in one pass; not supported")
    return specials


_HF_STRIPS = {"lstrip": "take the whitespace before it into the token",
              "rstrip": "take the whitespace after it into the token",
              "single_word": "match it only between non-word characters"}


def _overlapping(first, second):
    """(a, b), a of `first` and b of `second` whose occurrences can overlap
    in some text (one holds the other, or one ends as the other begins), or
    None."""
    if not first or not second:
        return None
    for xs, ys, flip in ((first, second, False), (second, first, True)):
        inside = _regex.compile("|".join(_regex.escape(x) for x in sorted(xs, key=len,
                                                                        reverse=True)))
        starts = {}
        for y in ys:
            m = inside.search(y)
            if m:
                return (y, m.group()) if flip else (m.group(), y)
            for n in range(1, len(y)):
                starts.setdefault(y[:n], y)
        for x in xs:
            for n in range(1, len(x)):
                y = starts.get(x[-n:])
                if y is not None:
                    return (y, x) if flip else (x, y)
    return None


def _hf_kind(value):
    if isinstance(value, dict):
        return _short(value.get("type"))
    return f"({_json_type(value)})"


def _hf_normalizers(value, field, c):
    """The Unicode normalization forms of a normalizer, in the order applied."""
    if value is None:
        return []
    kind = value.get("type") if isinstance(value, dict) else None
    if kind in _NORMALIZERS:
        c.check(value, field, frozenset(["type"]))
        return [kind]
    if kind == "Sequence":
        c.check(value, field, frozenset(["type", "normalizers"]))
        steps = value.get("normalizers")
        if not isinstance(steps, list):
            c.fail(f"{field}.normalizers must be an array, not {_json_type(steps)}")
        return [form for k, step in enumerate(steps)
                for form in _hf_normalizers(step, f"{field}.normalizers[{k}]", c)]
    c.fail(f"the {field} {_hf_kind(value)} is not supported (only {', '.join(_NORMALIZERS)} and "
           f"a Sequence of them)")


_HF_PRE_WANT = ("a ByteLevel pre-tokenizer, after any Splits and Digits of a Sequence")


def _hf_steps(pre, field, fail):
    """The steps of a pre-tokenizer, a Sequence's flattened: [(field, step)]."""
    if not isinstance(pre, dict):
        fail(f"{field} must be {_HF_PRE_WANT}, not {_json_type(pre)}")
    if pre.get("type") != "Sequence":
        return [(field, pre)]
    steps = pre.get("pretokenizers")
    if not isinstance(steps, list):
        fail(f"{field}.pretokenizers must be an array, not {_json_type(steps)}")
    return [x for k, step in enumerate(steps)
            for x in _hf_steps(step, f"{field}.pretokenizers[{k}]", fail)]


def _hf_splits(pre, fail):
    """The regexes a pre-tokenizer splits by, in order: its Splits and Digits,
    then GPT-2's pattern for a ByteLevel with use_regex (the last step; its
    byte-to-character map is what the vocabulary is written in)."""
    steps = _hf_steps(pre, "pre_tokenizer", fail)
    if not steps or steps[-1][1].get("type") != "ByteLevel":
        fail(f"the pre_tokenizer must end with a ByteLevel (want {_HF_PRE_WANT})")
    splits = []
    for field, step in steps[:-1]:
        kind = step.get("type")
        if kind == "Split":
            splits.append(_hf_split(step, field, fail))
        elif kind == "Digits":
            unknown = sorted(set(step) - {"type", "individual_digits"})
            if unknown:
                fail(f"{field}.{unknown[0]} is not a field this library knows; it might change "
                     f"the ids")
            individual = step.get("individual_digits", False)
            if not isinstance(individual, bool):
                fail(f"{field}.individual_digits must be true or false, not {_short(individual)}")
            splits.append(_digits_pattern(individual))
        else:
            fail(f"{field}: the pre-tokenizer {_short(kind)} is not supported (want "
                 f"{_HF_PRE_WANT})")
    if _hf_byte_level(steps[-1][1], steps[-1][0], fail):
        splits.append(_pattern_from_onig(PATTERNS["gpt2"]))   # with Oniguruma's classes
    return splits


def _hf_byte_level(pre, field, fail):
    """use_regex of a ByteLevel pre-tokenizer (add_prefix_space refused)."""
    unknown = sorted(set(pre) - _HF_BYTE_LEVEL_FIELDS)
    if unknown:
        fail(f"{field}.{unknown[0]} is not a field this library knows; it might change the ids")
    for key in ("add_prefix_space", "trim_offsets", "use_regex"):
        value = pre.get(key)
        if value is not None and not isinstance(value, bool):
            fail(f"{field}.{key} must be true or false, not {_short(value)}")
    if pre.get("add_prefix_space"):
        fail(f"{field}: ByteLevel with add_prefix_space=true is not supported")
    return pre.get("use_regex", True) is not False


def _hf_split(split, field, fail):
    unknown = sorted(set(split) - _HF_SPLIT_FIELDS)
    if unknown:
        fail(f"{field}.{unknown[0]} is not a field this library knows; it might change the ids")
    if split.get("behavior") != "Isolated" or split.get("invert") not in (False, None):
        fail(f"{field}: only a Split with behavior Isolated and invert false is supported, not "
             f"{_short(split.get('behavior'))} / invert {_short(split.get('invert'))}")
    pat = split.get("pattern")
    if not (isinstance(pat, dict) and len(pat) == 1 and next(iter(pat)) in ("Regex", "String")
            and isinstance(next(iter(pat.values())), str)):
        fail(f"{field}.pattern must be {{\"Regex\": string}} or {{\"String\": string}}, not "
             f"{_short(pat)}")
    if "String" in pat:
        if not pat["String"]:
            fail(f"{field}.pattern: an empty String matches nothing")
        return _regex.escape(pat["String"])
    try:
        return _pattern_from_onig(pat["Regex"])
    except ValueError as e:
        fail(f"{field}.pattern: {e}")


def _hf_tokenizer(cls, text, where, configs=()):
    """from_huggingface's tokenizer, from the text of a tokenizer.json (and
    the configs beside it: see _hf_config_specials)."""
    with _gc_paused():  # the document is gone when the block ends
        return _hf_tokenizer_of(cls, _json(text, where), where, configs)


def _hf_tokenizer_of(cls, doc, where, configs):
    tok = _hf_plain(cls, doc, where, configs)
    if tok is not None:
        return tok
    pattern, tokens, merges, specials, ignore_merges = _hf_parse(doc, where)
    if configs:
        forms = {token_to_str(t): i for i, t in tokens.items()}
        specials = _hf_config_specials(configs, forms, specials)
    tok = cls._create(pattern, tokens, merges, specials)
    if not ignore_merges:
        _check_merges_rebuild(tok, where)
    return tok


def _hf_plain(cls, doc, where, configs):
    """_hf_tokenizer through the core's C reader of model.vocab and
    model.merges (the plain case: no added token of the vocabulary), or None
    where it does not take the file: _hf_parse then reads it, and names
    what it refuses."""
    model = doc.get("model") if isinstance(doc, dict) else None
    if not isinstance(model, dict):
        return None
    vocab, added = model.get("vocab"), doc.get("added_tokens") or []
    if not isinstance(vocab, dict) or not isinstance(added, list) or any(
            isinstance(e, dict) and isinstance(e.get("content"), str) and e["content"] in vocab
            for e in added):
        return None
    got = cls.core_class.hf_model(vocab, model.get("merges", []))
    if got is None:
        return None
    c = _HfChecks(where)
    try:
        pattern, _ = _hf_head(doc, c)
        ignore_merges = _hf_model_options(model, c)
        specials = _hf_specials(doc, vocab, None, pattern, c)  # (no added token is a merge's)
        if configs:
            specials = _hf_config_specials(configs, vocab, specials)
        tok = cls._from_model(pattern, got, specials)
        if tok is not None and not ignore_merges:
            _check_merges_rebuild(tok, where)
    except ValueError:
        return None
    return tok


_HF_ROLES = ("bos_token", "eos_token", "unk_token", "sep_token", "pad_token", "cls_token",
             "mask_token")


def _hf_configs(directory):
    """[(doc, where)] of a model directory's tokenizer_config.json and
    special_tokens_map.json (those present), which transformers reads beside
    its tokenizer.json."""
    configs = []
    for name in ("tokenizer_config.json", "special_tokens_map.json"):
        where = _os.path.join(directory, name)
        if _os.path.lexists(where):
            doc = _json(_read_text(where), where)
            if not isinstance(doc, dict):
                raise ValueError(f"{where}: not a JSON object but a {_json_type(doc)}")
            configs.append((doc, where))
    return configs


def _hf_config_specials(configs, forms, specials):
    """The special tokens transformers has once it has read the configs: the
    tokenizer.json's, then each token the configs name (added_tokens_decoder,
    bos_token, ..., additional_special_tokens) that it lacks, which
    transformers adds as an added token at the next id (whatever id the
    config gives it), matched whole in text as a special token is here.  What
    changes ids otherwise (split_special_tokens, stripping flags, lower case,
    a prefix space, a vocabulary token made an added one) is a ValueError
    naming the field.  `forms`: the vocabulary's tokens but the special
    ones, GPT-2's printable form -> id."""
    specials = dict(specials)
    order = []

    def fail(where, field, what):
        raise ValueError(f"{where}: {field}: {what}; not supported")

    def add(content, where, field, adds=True):
        if isinstance(content, dict):
            for flag in ("lstrip", "rstrip", "single_word"):
                if content.get(flag) is True:
                    fail(where, f"{field}.{flag}", "true (transformers strips or checks the "
                         "text around the token)")
            content = content.get("content")
        if content is None:
            return
        if not isinstance(content, str) or not content:
            fail(where, field, f"{_short(content)} is not a token's text")
        if content in specials or content in order:
            return
        if content in forms:
            fail(where, field, f"{_short(content)} is a token of the vocabulary, which "
                 "transformers would match whole in any text, as an added token")
        if not adds:
            fail(where, field, f"{_short(content)} is not in tokenizer.json (transformers "
                 "versions differ on whether this file adds it)")
        order.append(content)

    for doc, where in configs:
        adds = _os.path.basename(where) == "tokenizer_config.json"
        if doc.get("split_special_tokens") is True:
            fail(where, "split_special_tokens", "true (transformers encodes the special tokens' "
                 "text as ordinary text; here that is encode(text, disallowed_special=()))")
        if doc.get("do_lower_case") is True:
            fail(where, "do_lower_case", "true")
        if doc.get("add_prefix_space") is True and doc.get("tokenizer_class") not in (
                None, "PreTrainedTokenizerFast"):
            fail(where, "add_prefix_space", f"true for {_short(doc.get('tokenizer_class'))}")
        decoder = doc.get("added_tokens_decoder", {})
        if not isinstance(decoder, dict):
            fail(where, "added_tokens_decoder", "not a JSON object")
        for key, entry in sorted(decoder.items(), key=lambda kv: (not _is_id(kv[0]),
                                                                   len(kv[0]), kv[0])):
            if not isinstance(entry, dict):
                fail(where, f"added_tokens_decoder.{key}", "not a JSON object")
            add(entry, where, f"added_tokens_decoder.{key}")
        for role in _HF_ROLES:
            add(doc.get(role), where, role, adds)
        lists = {}  # transformers 5 reads extra_special_tokens (and then not the other)
        for field in ("extra_special_tokens", "additional_special_tokens"):
            extra = doc.get(field, [])
            lists[field] = list(extra.values()) if isinstance(extra, dict) else extra
            if not isinstance(lists[field], list):
                fail(where, field, "not a JSON list")
        chosen, other = ("extra_special_tokens", "additional_special_tokens")[
            ::1 if lists["extra_special_tokens"] else -1]
        names = {e.get("content") if isinstance(e, dict) else e for e in lists[chosen]}
        for e in lists[other]:
            if (e.get("content") if isinstance(e, dict) else e) not in names | specials.keys():
                fail(where, other, f"{_short(e)} is in neither tokenizer.json nor {chosen} "
                     "(transformers versions read one or the other)")
        for k, entry in enumerate(lists[chosen]):
            add(entry, where, f"{chosen}[{k}]", adds)
    next_id = len(forms) + len(specials)  # transformers: its vocabulary's size on
    taken = set(forms.values()) | set(specials.values())
    for content in order:
        if next_id in taken:
            raise ValueError(f"{configs[0][1]}: transformers would give the added token "
                             f"{_short(content)} id {next_id}, which another token has; "
                             "not supported")
        specials[content] = next_id
        next_id += 1
    return specials


# Reading any format (Tokenizer.from_file)

def _read_sidecar(path, digest):
    """(pattern, special tokens) from the sidecar beside a .tiktoken file
    (`path`.json, as save_tiktoken writes it), or None where there is none.
    Anything else, or a sidecar written for another file (its sha256 is not
    `digest`, the .tiktoken file's), is a ValueError naming it."""
    side = path + ".json"
    if not _os.path.lexists(side):
        return None
    meta = _json(_read_text(side), side)

    def fail(what):
        return ValueError(f"{side}: {what}; the sidecar of {path} is what save_tiktoken writes: "
                          f'{{"pattern": str, "special_tokens": {{str: id}}, "sha256": '
                          f"the sha256 of {_os.path.basename(path)}}}")

    if not isinstance(meta, dict):
        raise fail(f"a JSON {_json_type(meta)}, not an object")
    pattern, specials = meta.get("pattern"), meta.get("special_tokens", {})
    if not isinstance(pattern, str):
        raise fail(f'"pattern" is {_short(pattern)}, not a string')
    if not isinstance(specials, dict):
        raise fail(f'"special_tokens" is a JSON {_json_type(specials)}, not an object')
    try:
        _compile_pattern(pattern)  # a regex: names are resolved only for pattern=
        for name, i in specials.items():
            _check_special_text(name)
            if isinstance(i, bool) or not isinstance(i, int) or not 0 <= i < _MAX_ID:
                raise ValueError(f"the id of special token {_short(name)} must be an int in "
                                 f"[0, 2**31), not {_short(i)}")
    except ValueError as e:
        raise ValueError(f"{side}: {e}") from None
    if "sha256" in meta:
        sha = meta["sha256"]
        if not (isinstance(sha, str) and len(sha) == 64
                and all(c in "0123456789abcdef" for c in sha.lower())):
            raise fail(f'"sha256" is {_short(sha)}, not 64 hex digits')
        if sha.lower() != digest:
            raise ValueError(f"{side}: the sidecar of another file: it gives sha256 {sha[:16]}..., "
                             f"{path} has sha256 {digest[:16]}... (a save cut short between the "
                             f"two files?); save the tokenizer again, or give its pattern and "
                             f"special tokens to Tokenizer.from_tiktoken")
    return pattern, specials


def _load_any(cls, path, pattern, special_tokens=None):
    import hashlib

    def holds_pattern(what):
        if pattern is not None:
            raise ValueError(f"{path}: {what} holds its own pattern; do not give one")
        if special_tokens is not None:
            raise ValueError(f"{path}: {what} holds its own special tokens; do not give them")

    if _os.path.isdir(path):
        hf = _os.path.join(path, "tokenizer.json")
        if _os.path.lexists(hf):  # a FIFO or a device there is refused, not skipped
            holds_pattern("tokenizer.json")
            if not _os.path.isfile(hf):
                return cls.from_huggingface(hf)  # refused, naming what it is
            return cls.from_huggingface(path)  # the directory, as transformers reads it
        vocab, merges = _os.path.join(path, "vocab.json"), _os.path.join(path, "merges.txt")
        if _os.path.lexists(vocab) and _os.path.lexists(merges):
            return cls.from_gpt2(vocab, merges, pattern=pattern or "gpt2",
                                 special_tokens=special_tokens)
        raise ValueError(f"{path} is a directory without tokenizer.json, or vocab.json and "
                         "merges.txt")
    data = _read_file(path)  # a regular file, checked before its first byte is read
    head = data[:64].lstrip(b"\xef\xbb\xbf \t\r\n")
    if head.startswith(_NATIVE_MAGIC.encode()):
        holds_pattern("the native format")
        return cls._from_native_text(_text_of(data, path), path)
    if head.startswith(b"{"):
        holds_pattern("tokenizer.json")
        return _hf_tokenizer(cls, _text_of(data, path), path)
    # a .tiktoken file: its pattern and special tokens come from its sidecar, from
    # pattern=, or from the encoding whose file it is; never from a guess
    if pattern is not None:
        pattern = resolve_pattern(pattern)
    digest = hashlib.sha256(data).hexdigest()
    side = _read_sidecar(path, digest)
    specials = special_tokens
    if side is not None:
        specials = side[1] if specials is None else specials
        pattern = side[0] if pattern is None else pattern
    elif digest in _KNOWN_RANKS:
        known, named, _ = _ENCODINGS[_KNOWN_RANKS[digest]]
        pattern = PATTERNS[known] if pattern is None else pattern
        specials = dict(named) if specials is None else specials
    elif pattern is None:
        raise ValueError(
            f"{path}: a .tiktoken file holds neither its pattern nor its special tokens, and "
            f"this one has no sidecar ({_os.path.basename(path)}.json, which save_tiktoken "
            f"writes) and is none of OpenAI's files: pass pattern= (bpe encode: --pattern), or "
            f"load it with Tokenizer.from_tiktoken(path, pattern=..., special_tokens=...)")
    return cls._from_ranks(pattern, _text_of(data, path), path, specials)


# The file formats as Tokenizer methods

class _FileFormats:
    """Reading and writing the files of GPT-2, tiktoken and Hugging Face."""

    @classmethod
    def from_gpt2(cls, vocab_json, merges_txt, *, special_tokens=None, pattern="gpt2"):
        """Read GPT-2's vocab.json and merges.txt, keeping their ids.

        The two must belong together: every vocab.json entry is a single
        byte, the result of a merge, or a special token.  With
        ``special_tokens=None`` the entries no merge makes are the special
        tokens: for a pair save_gpt2 wrote, all of them (merges.txt's first
        line holds a fingerprint of the pair, checked here); for other files,
        each must look like a special token (``<...>`` or ``[...]``, such as
        GPT-2's ``<|endoftext|>``) or be no join of two other entries -- one
        that is, is a token whose merge line is missing (merges.txt cut short
        or from another vocabulary): ValueError.  `special_tokens`: a list of
        names (their vocab.json ids, or new ids after the largest), or a dict
        name -> id; they must cover every entry no merge makes."""
        pattern = resolve_pattern(pattern)
        return cls._create(pattern, *_gpt2_parse(_read_text(vocab_json), _read_text(merges_txt),
                                                 special_tokens, vocab_json, merges_txt))

    def save_gpt2(self, directory):
        """Write directory/vocab.json and directory/merges.txt, each
        atomically; merges.txt's first line (``#version: 0.2 bpe-pair:...``,
        which other readers skip) holds a fingerprint of both files, so that
        a vocab.json beside a merges.txt of another save is refused on load."""
        _one_name_per_id(self, "GPT-2's vocab.json")
        vocab, merges = _gpt2_dump(self)
        _os.makedirs(directory, exist_ok=True)
        with FileSet() as files:
            files.text(_os.path.join(directory, "vocab.json"), vocab)
            files.text(_os.path.join(directory, "merges.txt"), merges)
            files.publish()

    @classmethod
    def from_tiktoken(cls, path_or_ranks, *, pattern, special_tokens=None):
        """Read a .tiktoken file (or a dict bytes -> rank); ranks become ids
        and the merges are recovered from the ranks.  `special_tokens`: a
        dict str -> id, or names that take the ids after the largest rank."""
        pattern = resolve_pattern(pattern)
        if isinstance(path_or_ranks, _abc.Mapping):
            return cls._from_ranks(pattern, dict(path_or_ranks), "ranks", special_tokens)
        return cls._from_ranks(pattern, _read_text(path_or_ranks), path_or_ranks, special_tokens)

    @classmethod
    def _from_ranks(cls, pattern, ranks, where, special_tokens):
        """from_tiktoken of ranks: a dict bytes -> rank, or a .tiktoken file's
        text (read by the core's C reader when it takes it, see CoreProtocol)."""
        if special_tokens is None:
            special_tokens = {}
        model = cls.core_class.tiktoken_model(ranks)
        if model is not None:
            tok = cls._from_model(pattern, model, special_tokens)
            if tok is not None:
                return tok
        if isinstance(ranks, str):
            ranks = _tiktoken_parse(ranks, where)
        tokens, merges = _tiktoken_model(ranks, where)
        return cls._with_specials(pattern, tokens, merges, special_tokens)

    def save_tiktoken(self, path, *, sidecar=True):
        """Write tiktoken's format: one ``base64(token) id`` line per token.
        A .tiktoken file holds neither the pattern nor the special tokens:
        they, and the file's sha256 (for tiktoken's ``load_tiktoken_bpe(path,
        expected_hash=...)``; tiktoken caches files by path), go to the sidecar
        ``<path>.json`` (unless ``sidecar=False``) and are returned.

        >>> import json, os, tempfile
        >>> tok = Tokenizer.from_merges([(b"h", b"i")], special_tokens=["<s>"])
        >>> path = os.path.join(tempfile.mkdtemp(), "tok.tiktoken")
        >>> meta = tok.save_tiktoken(path)
        >>> sorted(meta), meta["special_tokens"]
        (['pattern', 'sha256', 'special_tokens'], {'<s>': 257})
        >>> json.load(open(path + ".json", encoding="utf-8")) == meta
        True
        >>> Tokenizer.from_tiktoken(path, pattern=meta["pattern"],
        ...                         special_tokens=meta["special_tokens"]) == tok
        True
        """
        import hashlib
        import json

        text = _tiktoken_dump(self)
        _tiktoken_pattern(self._pattern)  # one tiktoken can be given, or refused before writing
        meta = {"pattern": self._pattern, "special_tokens": self.special_tokens,
                "sha256": hashlib.sha256(text.encode("utf-8")).hexdigest()}
        with FileSet() as files:  # the file and its sidecar as a set
            files.text(path, text)
            if sidecar:
                files.text(_os.fspath(path) + ".json",
                           json.dumps(meta, ensure_ascii=False, indent=1) + "\n", describes=True)
            files.publish()
        return meta

    def to_tiktoken(self, name="bpe"):
        """A ``tiktoken.Encoding`` with the same ids (needs tiktoken)."""
        try:
            import tiktoken
        except ImportError:
            raise ImportError("to_tiktoken needs tiktoken: pip install tiktoken") from None
        _check_tiktoken_exact(self)
        for a in self._specials:
            for b in self._specials:
                if a != b and b.startswith(a):
                    raise ValueError(f"special tokens {a!r} and {b!r} start alike; tiktoken does "
                                     "not "
                                     f"match them longest first, so it would encode differently")
        pat_str = _tiktoken_pattern(self._pattern)
        try:
            enc = tiktoken.Encoding(name=name, pat_str=pat_str,
                                    mergeable_ranks={t: i for i, t in self._tokens.items()},
                                    special_tokens=dict(self._specials))
        except ValueError as e:
            raise ValueError(f"tiktoken's regex engine refuses the pattern {_short(pat_str)} "
                             f"(written for it from {_short(self._pattern)}): "
                             f"{_short(str(e))}") from None
        return _tiktoken_checked(self, enc)

    def save_huggingface(self, path):
        """Write a tokenizer.json that Hugging Face ``tokenizers`` loads and
        encodes to the same ids.  The pattern is written for its regex engine
        (Oniguruma): classes and Unicode properties as the explicit code
        point ranges this library matches, possessive repeats as atomic
        groups; a pattern that cannot be written with the same meaning (a
        back-reference, \\b, a pattern that can match the empty string, ...) is
        a ValueError."""
        _one_name_per_id(self, "a tokenizer.json")
        _atomic_write(path, _hf_dump(self))

    @classmethod
    def from_huggingface(cls, path):
        """Read a byte-level BPE tokenizer.json (what save_huggingface writes,
        GPT-2's, or a Split-regex + ByteLevel pre-tokenizer), or the
        tokenizer.json of a directory (what save_pretrained writes); anything
        this library cannot reproduce exactly raises ValueError saying what: a
        normalizer, a post-processor or decoder other than ByteLevel,
        truncation, padding, dropout, subword prefixes or suffixes, unknown
        fields, a Split regex whose meaning differs between the engines, and,
        with ``ignore_merges: false``, a token its own merges do not rebuild.
        A directory is read as transformers reads it: the tokens its
        tokenizer_config.json names that tokenizer.json lacks become special
        tokens at the ids transformers gives them; what would change ids
        otherwise (``split_special_tokens: true``, stripping flags, ...) raises
        ValueError naming the field."""
        configs = ()
        if _os.path.isdir(path):
            configs = _hf_configs(path)  # transformers' view of the directory's tokenizer
            path = _os.path.join(path, "tokenizer.json")
            if not _os.path.isfile(path):
                raise ValueError(f"{_os.path.dirname(path)}: a directory without a tokenizer.json "
                                 f"(not a regular file)")
        return _hf_tokenizer(cls, _read_text(path), path, configs)

    def save_pretrained(self, directory, *, bos_token=None, eos_token=None, pad_token=None,
                        unk_token=None, model_max_length=None):
        """Write what a model repository holds for its tokenizer:
        tokenizer.json (see save_huggingface), tokenizer_config.json and
        special_tokens_map.json, so that
        ``transformers.AutoTokenizer.from_pretrained(directory)`` gives a fast
        tokenizer with these ids.  The roles (`bos_token`, ...) name special
        tokens of this tokenizer; `model_max_length` is where
        ``truncation=True`` cuts.  No token is added around a text (no
        template): transformers gives ``encode(text, allowed_special="all")``.

        >>> import os, tempfile
        >>> tok = Tokenizer.from_merges([(b"h", b"i")], special_tokens=["<|endoftext|>", "<pad>"])
        >>> directory = tempfile.mkdtemp()
        >>> tok.save_pretrained(directory, eos_token="<|endoftext|>", pad_token="<pad>")
        >>> sorted(os.listdir(directory))
        ['special_tokens_map.json', 'tokenizer.json', 'tokenizer_config.json']
        >>> Tokenizer.from_huggingface(directory) == tok
        True
        """
        import json

        roles = {}
        for role, value in (("bos_token", bos_token), ("eos_token", eos_token),
                            ("pad_token", pad_token), ("unk_token", unk_token)):
            if value is None:
                continue
            if not isinstance(value, str):
                raise TypeError(f"{role} must be a str or None, not {type(value).__name__}")
            if value not in self._specials:
                raise ValueError(f"{role} {value!r} is not a special token of this tokenizer "
                                 f"(its special tokens: {sorted(self._specials)!r})")
            roles[role] = value
        if model_max_length is not None:
            _check_int("model_max_length", model_max_length, 1)
        _one_name_per_id(self, "a tokenizer.json")
        tokenizer_json = _hf_dump(self)
        config = {
            "tokenizer_class": "PreTrainedTokenizerFast",
            **roles,
            "clean_up_tokenization_spaces": False,
            "padding_side": "right",
            "truncation_side": "right",
            "added_tokens_decoder": {
                str(i): {"content": s, "lstrip": False, "normalized": False, "rstrip": False,
                         "single_word": False, "special": True}
                for s, i in sorted(self._specials.items(), key=lambda kv: kv[1])
            },
        }
        if model_max_length is not None:
            config["model_max_length"] = model_max_length
        _os.makedirs(directory, exist_ok=True)
        with FileSet() as files:  # the three files as a set: a failure leaves the old ones
            files.text(_os.path.join(directory, "tokenizer.json"), tokenizer_json)
            for name, doc in (("tokenizer_config.json", config),
                              ("special_tokens_map.json", roles)):
                files.text(_os.path.join(directory, name),
                           json.dumps(doc, ensure_ascii=False, indent=2) + "\n")
            files.publish()

    @classmethod
    def from_file(cls, path, *, pattern=None, special_tokens=None):
        """Read a tokenizer in any of the formats this library writes, plain
        or gzipped, told apart by their content: the native format, a
        tokenizer.json, a directory holding one (or GPT-2's vocab.json and
        merges.txt), or a .tiktoken file.  A .tiktoken file holds neither
        pattern nor special tokens: they come from its sidecar ``path +
        ".json"`` (which must name this file by its sha256), or, for OpenAI's
        files (gpt2, p50k_base, cl100k_base, o200k_base: known by their
        sha256), from their encoding; any other needs `pattern` (ValueError
        otherwise: nothing is read with a guessed pattern).  `pattern` (a
        name or a regex) and `special_tokens` (as from_tiktoken takes them,
        or a set's name: SPECIAL_TOKENS): for the formats that hold none
        (GPT-2 files: default "gpt2"; .tiktoken, where they replace the
        sidecar's or the encoding's).

        >>> import os, tempfile
        >>> tok = Tokenizer.from_merges([(b"h", b"i")], special_tokens=["<s>"])
        >>> path = os.path.join(tempfile.mkdtemp(), "tokenizer.json")
        >>> tok.save_huggingface(path); Tokenizer.from_file(path) == tok
        True
        """
        return _load_any(cls, _os.fspath(path), pattern, special_tokens)
