"""The command line's tokenizer options: `--pattern NAME|REGEX` and `--special TOKEN=ID` (or
a named set) complete a bare rank table wherever a tokenizer file is taken, and `bpe info`
describes every tokenizer the library loads, saying whether its pattern is a name or a regex.

Llama 3 as Meta ships it (`tokenizer.model`, a .tiktoken file: written here from quicktok's
copy of the ranks; skipped without quicktok) encodes to tiktoken's ids with the same ranks,
Meta's pattern string and the special token.  The tokenizer.json shapes (Qwen's NFC, DeepSeek
V3's Sequence of Splits, StarCoder2's Digits, a Split whose regex is a bare word) are written
by tokenizers itself."""

import base64
import types

import pytest
from test_dataprep import cli, read_ids, split_documents
from test_huggingface import hf_ids, hf_model, trained
from test_pattern_names import DEEPSEEK_V3

from helpers import LLAMA3
from test_cli import assert_ok, assert_one_line_error

EOT3 = "<|end_of_text|>"
DOCS = ["Hello world, it's 2024!\nSecond line: 12345 and café.", "日本語のテキスト 😀 done.  "]


def run(mod, argv, monkeypatch, capsys):
    """main(argv) in this process on backend `mod`: (returncode, stdout, stderr)."""
    import bpe_fallback

    monkeypatch.delenv("BPE_DEBUG", raising=False)
    monkeypatch.setenv("BPE_BACKEND", "python" if mod.__name__ == "bpe_fallback" else "cython")
    capsys.readouterr()
    code = bpe_fallback.main([str(a) for a in argv])
    out, err = capsys.readouterr()
    return types.SimpleNamespace(returncode=code, stdout=out, stderr=err)


@pytest.fixture(scope="module")
def llama3_model(tmp_path_factory):
    """Meta's tokenizer.model (Llama 3's ranks as a .tiktoken file) and its ranks."""
    from test_vocabularies import quicktok_ranks

    ranks = quicktok_ranks("llama3")
    path = tmp_path_factory.mktemp("llama3") / "tokenizer.model"
    path.write_text("".join(f"{base64.b64encode(t).decode()} {r}\n"
                            for t, r in sorted(ranks.items(), key=lambda kv: kv[1])))
    return path, ranks


def test_llama3_bare_table_with_pattern_and_special(mod, tmp_path, llama3_model):
    import tiktoken

    model, ranks = llama3_model
    inputs = []
    for k, text in enumerate(DOCS):
        inputs.append(tmp_path / f"doc{k}.txt")
        inputs[-1].write_text(text, encoding="utf-8")
    out = tmp_path / "train.bin"
    result = cli(mod, ["encode", "-t", model, "--pattern", "llama3", "--special",
                       f"{EOT3}=128001", "--eot", EOT3, *inputs, "-o", out, "-q"])
    assert_ok(result)
    ref = tiktoken.Encoding("llama3", pat_str=LLAMA3, mergeable_ranks=ranks,
                            special_tokens={EOT3: 128001})
    docs, meta = split_documents(out)
    assert meta["dtype"] == "uint32"
    assert docs == [ref.encode_ordinary(text) + [128001] for text in DOCS]
    assert read_ids(out, "uint32") == [i for d in docs for i in d]


@pytest.mark.slow
def test_llama3_named_set_decode_and_info(mod, tmp_path, llama3_model):
    model, _ = llama3_model
    doc = tmp_path / "doc.txt"
    doc.write_text(DOCS[0], encoding="utf-8")
    out = tmp_path / "ids.bin"
    assert_ok(cli(mod, ["encode", "-t", model, "--pattern", "llama3", "--special", "llama3",
                        "--eot", "<|eot_id|>", doc, "-o", out, "-q"]))
    docs, _ = split_documents(out)
    assert docs[0][-1] == 128009
    result = cli(mod, ["decode", "-t", model, "--pattern", "llama3", "--special", "llama3", out])
    assert_ok(result)
    assert result.stdout == DOCS[0] + "<|eot_id|>"
    result = cli(mod, ["info", model, "--pattern", "llama3", "--special", "llama3"])
    assert_ok(result)
    assert "256 special tokens" in result.stdout
    assert "pattern      name llama3, the regex " + LLAMA3 in result.stdout


def test_named_and_literal_patterns_in_the_cli(mod, tmp_path, monkeypatch, capsys):
    """--pattern takes the names and regexes; an unknown bare word is one line listing the
    names; bpe info tells a name from a regex."""
    from helpers import gpt2_ranks

    path = tmp_path / "bare.tiktoken"
    path.write_text("".join(f"{base64.b64encode(t).decode()} {r}\n"
                            for t, r in sorted(gpt2_ranks().items(), key=lambda kv: kv[1])))
    result = run(mod, ["info", path, "--pattern", "nanochat"], monkeypatch, capsys)
    assert_ok(result)
    assert "pattern      name nanochat, the regex " in result.stdout
    result = run(mod, ["info", path, "--pattern", "(?:nanochat)"], monkeypatch, capsys)
    assert_ok(result)
    assert "pattern      regex (?:nanochat)\n" in result.stdout
    result = run(mod, ["info", path, "--pattern", "deepseek_v3"], monkeypatch, capsys)
    assert_ok(result)
    assert "pattern      name deepseek_v3, the pipeline: split by the regex " in result.stdout
    result = run(mod, ["encode", "-t", path, "--pattern", "llama4", path, "-o",
                       tmp_path / "x.bin"], monkeypatch, capsys)
    assert_one_line_error(result, "bpe", "llama4", "gpt2, cl100k", "nanochat, deepseek_v3")
    assert not (tmp_path / "x.bin").exists()


@pytest.mark.parametrize("special,needle", [
    (["<s>"], "want TOKEN=ID"),
    (["<s>=x"], "must be an integer"),
    (["llama4"], "llama3, qwen2, nanochat"),
    (["<s>=1", "<s>=2"], "two ids"),
    (["nanochat", "<s>=1"], "give it alone"),
])
def test_bad_special_options(mod, tmp_path, monkeypatch, capsys, special, needle):
    from helpers import gpt2_ranks

    path = tmp_path / "bare.tiktoken"
    path.write_text("".join(f"{base64.b64encode(t).decode()} {r}\n"
                            for t, r in sorted(gpt2_ranks().items(), key=lambda kv: kv[1])))
    args = [a for s in special for a in ("--special", s)]
    result = run(mod, ["info", path, "--pattern", "gpt2", *args], monkeypatch, capsys)
    assert_one_line_error(result, "bpe", needle)


def test_special_refused_where_the_file_holds_its_own(mod, tmp_path, monkeypatch, capsys):
    tok = trained(mod, "gpt2")
    native = tmp_path / "tok.bpe"
    tok.save(native)
    result = run(mod, ["info", native, "--special", "<s>=1"], monkeypatch, capsys)
    assert_one_line_error(result, "bpe", "holds its own special tokens")
    result = run(mod, ["info", "gpt2", "--special", "<s>=1"], monkeypatch, capsys)
    assert_one_line_error(result, "bpe", "has its own special tokens")


def shapes():
    """tokenizer.json pre-tokenizers as the hub's models have them: name -> (build, what
    bpe info's pattern line starts with)."""
    from tokenizers import Regex, normalizers, pre_tokenizers

    def nfc(hf):
        hf.normalizer = normalizers.NFC()

    def deepseek(hf):
        hf.pre_tokenizer = pre_tokenizers.Sequence(
            [pre_tokenizers.Split(Regex(r), behavior="isolated", invert=False)
             for r in DEEPSEEK_V3]
            + [pre_tokenizers.ByteLevel(add_prefix_space=False, use_regex=False)])

    def digits(hf):
        hf.pre_tokenizer = pre_tokenizers.Sequence([
            pre_tokenizers.Digits(individual_digits=True),
            pre_tokenizers.ByteLevel(add_prefix_space=False, use_regex=True)])

    def literal(hf):
        hf.pre_tokenizer = pre_tokenizers.Sequence([
            pre_tokenizers.Split(Regex("llama3"), behavior="isolated", invert=False),
            pre_tokenizers.ByteLevel(add_prefix_space=False, use_regex=False)])

    def bytelevel(hf):
        hf.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False, use_regex=True)

    return {
        "qwen_nfc": (nfc, "pipeline: normalize NFC; then split by the regex (?i:'s|"),
        "deepseek_v3": (deepseek, "pipeline: split by the regex \\p{N}{1,3}; then split by "
                                  "the regex ["),
        # Digits: Rust's is_numeric, \p{N} with the code points of a newer Unicode added
        "starcoder2_digits": (digits, "pipeline: split by the regex [\\p{N}\\U"),
        "literal_word": (literal, "regex llama3\n"),
        "gpt2_bytelevel": (bytelevel, "name gpt2, the regex '(?:[sdmt]"),
    }


@pytest.mark.parametrize("shape", sorted(shapes()))
def test_info_on_every_tokenizer_json_shape(mod, tmp_path, monkeypatch, capsys, shape):
    build, want = shapes()[shape]
    hf = hf_model(trained(mod, "gpt2"))
    build(hf)
    path = tmp_path / "tokenizer.json"
    hf.save(str(path))
    tok = mod.Tokenizer.from_huggingface(path)
    text = "Cafe\u0301 llama3 2024 東京ひらがな #include <x> it's"
    assert tok.encode_ordinary(text) == hf_ids(hf, text)   # the shape loads as tokenizers runs it
    result = run(mod, ["info", path], monkeypatch, capsys)
    assert_ok(result)
    line = next(x for x in result.stdout.splitlines(True) if x.startswith("pattern "))
    assert line[len("pattern      "):].startswith(want), line
    native = tmp_path / "tok.bpe"
    tok.save(native)
    again = run(mod, ["info", native], monkeypatch, capsys)
    assert_ok(again)
    assert line in again.stdout


def test_train_special_takes_a_named_set(mod, tmp_path, monkeypatch, capsys):
    """bpe train --special nanochat: the set's tokens, in order, their ids after the merges,
    as Tokenizer.train_files gives them for the same list."""
    from helpers import DATA

    out = tmp_path / "tok.bpe"
    result = run(mod, ["train", DATA / "german.txt", "--vocab-size", 300, "--special", "nanochat",
                       "--workers", 1, "-o", out, "-q"], monkeypatch, capsys)
    assert_ok(result)
    want = mod.Tokenizer.train_files([DATA / "german.txt"], 300, workers=1,
                                     special_tokens=list(mod.SPECIAL_TOKENS["nanochat"]))
    assert mod.Tokenizer.load(out) == want
    assert list(want.special_tokens) == mod.SPECIAL_TOKENS["nanochat"]
