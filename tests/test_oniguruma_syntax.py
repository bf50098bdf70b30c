"""A tokenizer.json's Split regex is Oniguruma's (Ruby) syntax: every construct the reader
accepts is read with the meaning tokenizers gives it.

Table-driven: each construct, in a pattern where it decides the pieces, on texts that probe
its edges (line ends at the start, in the middle and at the end of the text, case variants,
the characters next to a class's bounds), pre-tokenized by tokenizers' Split (Isolated) and by
this library's loaded tokenizer, on both backends.  Class escapes and properties are probed on
characters every Unicode version agrees on (which tables they follow is tested elsewhere)."""

import json

import pytest

from helpers import bytes_to_unicode

COMMON = ["", "a", "\n", "a\n", "\na", "a\nb", "a\n\n", "\n\n", "ab\ncd\n", "a\r\nb\r\n",
          " a b ", "aab aaab b", "AbC aBc", "x\x0b\x0c\x85\u2028y\u2029\r", "é e\u0301 É",
          "12 ab3 ٣4", "\t \u3000x", "a.b\n.c", "[a-c]^$|\\-", "{a}", "ſKkK s S k"]

CONSTRUCTS = {
    # anchors: Oniguruma's ^ is not after a "\n" that ends the text; $ is before every "\n"
    "line_start_after_newline": (r"\n^", ["a\n", "a\n\n", "\n", "a\nb\n"]),
    "line_start_first": (r"^\s*\S", ["a\n b\n", "\n\nx", "  x\n"]),
    "line_start_in_look_ahead": (r"\n(?=^)", ["a\n", "a\nb", "\n\n"]),
    "line_start_in_negative_look_ahead": (r"\n(?!^)", ["a\n", "a\n\n", "\n"]),
    "line_start_in_look_behind": (r"(?<=^)\s", ["a\n \n", "\n\n", " a"]),
    "line_start_or_letter": (r"(?:^|b)a", ["aba\na", "ba\n", "\na"]),
    "line_end": (r"\S$", ["a\nb", "ab\n", "a\n\n", "a\r\n"]),
    "line_end_before_newline": (r"$\n", ["a\n", "a\n\nb", "\n"]),
    "text_start": (r"\A\s*\S", [" a\nb", "\nb", "ab"]),
    "text_end_or_before_final_newline": (r"\S\Z", ["a\n", "a\n\n", "ab", "a\nb"]),
    "text_end_absolute": (r"\S\z", ["a\n", "ab", "a\nb"]),
    "newline_before_text_end": (r"\n\Z", ["a\n", "a\n\n", "\n"]),
    # any character but "\n"
    "any": (r"a.", ["a\na\ra\x85a\u2028a\x00a😀"]),
    "any_run": (r".+", ["ab\ncd\r\ne\u2028f\n"]),
    # quantifiers, greedy, lazy and possessive, Ruby's {n,m}+ and {n}?
    "optional": (r"ab?", ["a ab abb"]),
    "star": (r"ab*", ["a ab abbb"]),
    "plus": (r"ab+", ["a ab abbb"]),
    "exact": (r"b{2}", ["b bb bbb bbbb"]),
    "at_least": (r"b{2,}", ["b bb bbbbb"]),
    "between": (r"b{2,3}", ["b bb bbbb bbbbbbb"]),
    "at_most": (r"ab{,2}", ["a ab abbb"]),
    "lazy_optional": (r"ab??b", ["ab abb abbb"]),
    "lazy_star": (r"a.*?b", ["axxbxxb ab"]),
    "lazy_plus": (r"b+?", ["bbb b"]),
    "lazy_between": (r"b{2,3}?", ["bbbbbbb"]),
    "lazy_at_least": (r"b{2,}?", ["bbbbb"]),
    "ruby_exact_then_optional": (r"ab{1}?c|x(?:bc){2}?d", ["abc ac abbc xd xbcd xbcbcd"]),
    "comma_exact_then_lazy": (r"ab{2,2}?c|x(?:bc){1,1}?d", ["ac abbc abc xd xbcd"]),
    "ruby_between_then_plus": (r"b{2}+", ["b bb bbb bbbb bbbbbb"]),
    "ruby_range_then_plus": (r"cb{1,2}+", ["cb cbb cbbb cbbbb"]),
    "possessive_star": (r"a*+b", ["aab b aaa"]),
    "possessive_plus": (r"\s++\S", ["  a \n b"]),
    "possessive_optional": (r"b?+b", ["b bb"]),
    "possessive_gives_nothing_back": (r"a++a|a", ["aaa"]),
    "nested_repeats": (r"x(?:a+)?|y(?:a?)+|z(?:ab*)*?|w(?:a{1,2}?)+", [
        "xaaa x yaa y zabbab z waaa w"]),
    "nested_lazy": (r"x(?:a+?)?|y(?:a??)+|z(?:[ab]{2})??", ["xaa yaa zab"]),
    # groups
    "non_capturing": (r"(?:ab)+", ["abab aba"]),
    "capturing": (r"(a)(b)?", ["ab a b"]),
    "named": (r"(?<word>a+)b", ["aab ab b"]),
    "atomic": (r"(?>a+)b|a", ["aab aaa"]),
    "look_ahead": (r"a(?=b)", ["ab ac a"]),
    "negative_look_ahead": (r"a(?!b)", ["ab ac a"]),
    "look_behind": (r"(?<=a)b", ["ab cb b"]),
    "negative_look_behind": (r"(?<!a)b", ["ab cb b"]),
    "look_behind_alternatives": (r"(?<=a|bc)d", ["ad bcd cd d"]),
    "alternation_order": (r"a|ab", ["ab abab"]),
    "empty_group": (r"a()b", ["ab a b"]),
    "empty_first_alternative": (r"(?:|a)b", ["ab b"]),
    "comment": (r"(?#a comment)a|b(?#x\)y)", ["ab ba"]),
    # case-insensitive groups (ASCII letters; k, s fold with U+212A, U+017F in both)
    "icase_word": (r"(?i:ab)", ["ab AB aB Ab"]),
    "icase_k": (r"(?i:k)", ["k K \u212a"]),
    "icase_s": (r"(?i:s)", ["s S \u017f"]),
    "icase_class": (r"(?i:[ak])+", ["aAkK\u212a b"]),
    "icase_negated_class": (r"(?i:[^a])", ["aAb\u212a"]),
    # classes
    "range": (r"[b-d]+", ["abcde BCD"]),
    "negated": (r"[^b-d]+", ["abcde"]),
    "dash_last": (r"[a-]+", ["a-b"]),
    "dash_first": (r"[-a]+", ["a-b"]),
    "escaped_dash": (r"[a\-c]+", ["abc-"]),
    "escaped_bracket": (r"[\]a]+", ["a]b["]),
    "caret_not_first": (r"[a^]+", ["a^b"]),
    "metacharacters_in_class": (r"[.$|*+?(){}]+", ["a.$|*+?(){}b"]),
    "escapes_in_class": (r"[\t\n\x41\x{42}\u0043]+", ["\t\nABCD"]),
    "class_escape_in_class": (r"[\s\d]+", ["a 1\t2\nb ٣"]),
    "negated_class_escape_in_class": (r"[^\s]+", ["a b\tc"]),
    "non_ascii_range": (r"[à-ÿ]+", ["aàéÿĀ"]),
    "property_in_class": (r"[\p{Lu}\d]+", ["aAB1c"]),
    # class escapes and properties
    "space": (r"\s+", ["a \t\n\x0b\x0c\r\x85\xa0\u2028\u3000\x1c b"]),
    "not_space": (r"\S+", ["a \x85b\x1cc"]),
    "digit": (r"\d+", ["a12٣٤b１２"]),
    "not_digit": (r"\D+", ["a12٣b"]),
    "property": (r"\p{L}+", ["abc éÀ 12 日本"]),
    "negated_property": (r"\P{L}+", ["abc 12 日本"]),
    "caret_property": (r"\p{^L}+", ["abc 12 日本"]),
    "script": (r"\p{Han}+", ["日本語かな"]),
    # escapes
    "control_escapes": (r"[\t\n\r\f\v\a\e]", ["\t\n\r\f\x0b\x07\x1b\x00"]),
    "vertical_tab": (r"\v", ["\x0b\n"]),
    "bell_and_escape": (r"\a|\e", ["\x07\x1b"]),
    "one_hex_digit": (r"\x9", ["\t9"]),
    "two_hex_digits": (r"\x41", ["AB"]),
    "braced_hex": (r"\x{1F600}|\x{E9}", ["😀é"]),
    "unicode_escape": (r"\u00e9", ["éE"]),
    "escaped_punctuation": (r"\.\*\-\ ", [".*- a"]),
    "escaped_non_ascii": (r"\é", ["éa"]),
    "literal_brackets": (r"a]|}", ["a]}"]),
}


def split_document(onig):
    b2u = bytes_to_unicode()
    return {
        "version": "1.0", "truncation": None, "padding": None, "added_tokens": [],
        "normalizer": None,
        "pre_tokenizer": {"type": "Sequence", "pretokenizers": [
            {"type": "Split", "pattern": {"Regex": onig}, "behavior": "Isolated",
             "invert": False},
            {"type": "ByteLevel", "add_prefix_space": False, "trim_offsets": True,
             "use_regex": False}]},
        "post_processor": None, "decoder": None,
        "model": {"type": "BPE", "dropout": None, "unk_token": None,
                  "continuing_subword_prefix": None, "end_of_word_suffix": None,
                  "fuse_unk": False, "byte_fallback": False, "ignore_merges": True,
                  "vocab": {b2u[b]: b for b in range(256)}, "merges": []},
    }


def tokenizers_pieces(onig, text):
    from tokenizers import Regex, pre_tokenizers

    split = pre_tokenizers.Split(Regex(onig), behavior="isolated", invert=False)
    return [piece for piece, _ in split.pre_tokenize_str(text)]


@pytest.mark.parametrize("name", sorted(CONSTRUCTS))
def test_construct_reads_as_tokenizers_reads_it(mod, tmp_path, name):
    onig, texts = CONSTRUCTS[name]
    path = tmp_path / "tokenizer.json"
    path.write_text(json.dumps(split_document(onig)), encoding="utf-8")
    tok = mod.Tokenizer.from_huggingface(path)
    for text in texts + COMMON:
        assert mod.Core.pretokenize(tok.pattern, text) == tokenizers_pieces(onig, text), (
            name, text)


REFUSED = {
    # Oniguruma drops a group's {1}, and the ? or + after it then repeats the group's last
    # atom alone: (?:bc){1}? is bc?, not (?:bc)?
    "group_once_then_optional": r"a(?:bc){1}?d",
    "group_once_then_plus": r"a(?:bc){1}+d",
    "group_once_comma_then_plus": r"a(?: c){1,1}+",
}


@pytest.mark.parametrize("name", sorted(REFUSED))
def test_construct_read_otherwise_is_refused(mod, tmp_path, name):
    onig = REFUSED[name]
    tokenizers_pieces(onig, "a")  # tokenizers loads it
    path = tmp_path / "tokenizer.json"
    path.write_text(json.dumps(split_document(onig)), encoding="utf-8")
    with pytest.raises(ValueError, match=r"pre_tokenizer.*Split regex.*\{1\}"):
        mod.Tokenizer.from_huggingface(path)


def test_group_once_then_optional_is_its_last_atom_optional():
    """What the refused forms mean in tokenizers (so a translation would be wrong)."""
    assert tokenizers_pieces(r"a(?:bc){1}?d", "ad abd abcd") == ["ad ", "abd", " ", "abcd"]
    assert tokenizers_pieces(r"a(?:bc){1}+d", "abcbcd abccd") == ["abcbcd ", "abccd"]


@pytest.mark.parametrize("onig", [
    r"'(?i:[sdmt]|ll|ve|re)|[^\r\n\p{L}\p{N}]?+\p{L}++|\p{N}{1,3}+| ?[^\s\p{L}\p{N}]++[\r\n]*+"
    r"|\s++$|\s*[\r\n]|\s+(?!\S)|\s",   # cl100k's pattern, as a tokenizer.json may spell it
    r"\p{N}+$|\p{L}+|\p{N}+|\s|[^\s\p{L}\p{N}]+",
])
def test_a_line_end_leaves_the_classes_to_the_tables(mod, tmp_path, onig):
    """A Split regex with $ (Oniguruma's line end) reads its classes by the same tables as one
    without it: recently assigned code points (U+11DE0, a digit of Unicode 17 that Oniguruma
    does not know) split as tokenizers splits them, whatever Unicode the installed regex has.
    ($ written as a flag group, regex's (?m:$), left the whole pattern to regex's tables.)"""
    from strategies import RECENT

    path = tmp_path / "tokenizer.json"
    path.write_text(json.dumps(split_document(onig)), encoding="utf-8")
    tok = mod.Tokenizer.from_huggingface(path)
    for c in map(chr, RECENT):
        text = f"{c}\u00e9t 1{c} a{c}1\n{c}2\n{c}"
        assert mod.Core.pretokenize(tok.pattern, text) == tokenizers_pieces(onig, text), (
            f"U+{ord(c):04X}")
