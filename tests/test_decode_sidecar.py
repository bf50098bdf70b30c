"""`bpe decode` reads an array's sidecar: an array encoded with another tokenizer than the
one given is refused, naming both (it would decode to plausible garbage); the same model in
another file format decodes, since the sidecar names the model (its tokens, merges,
pattern and special tokens), not a file."""


from test_dataprep import cli

from helpers import EOT, read_data
from test_cli import assert_ok, assert_one_line_error

TEXT = read_data("tinystories_sample.txt").replace(EOT, "")[:20000]




def _encode(mod, tmp_path):
    (tmp_path / "a.txt").write_text(TEXT, encoding="utf-8")
    tok = mod.Tokenizer.train(TEXT, 300, special_tokens=[EOT])
    tok.save(str(tmp_path / "tok.bpe"))
    tok.encode_files([str(tmp_path / "a.txt")], str(tmp_path / "ids.bin"), eot=EOT)
    return tok


def test_decode_with_another_tokenizer_is_refused(mod, tmp_path):
    _encode(mod, tmp_path)
    other = mod.Tokenizer.train(TEXT, 290, special_tokens=[EOT])
    other.save(str(tmp_path / "other.bpe"))
    for dtype in ([], ["--dtype", "uint16"]):  # an explicit dtype still reads the sidecar
        result = cli(mod, ["decode", "-t", tmp_path / "other.bpe", tmp_path / "ids.bin",
                           *dtype])
        line = assert_one_line_error(result, "bpe", "ids.bin", "other.bpe", "another tokenizer")
        assert "sha256" in line
    assert not (tmp_path / "out.txt").exists()
    result = cli(mod, ["decode", "-t", tmp_path / "other.bpe", tmp_path / "ids.bin",
                       "-o", tmp_path / "out.txt"])
    assert_one_line_error(result, "bpe", "another tokenizer")
    assert not (tmp_path / "out.txt").exists()


def test_the_same_model_in_another_format_decodes(mod, tmp_path):
    tok = _encode(mod, tmp_path)
    tok.save_tiktoken(str(tmp_path / "tok.tiktoken"))
    tok.save_huggingface(str(tmp_path / "tokenizer.json"))
    tok.save_gpt2(str(tmp_path / "gpt2"))
    for t in ("tok.bpe", "tok.tiktoken", "tokenizer.json", "gpt2"):
        result = cli(mod, ["decode", "-t", tmp_path / t, tmp_path / "ids.bin"])
        assert_ok(result)
        assert result.stdout == TEXT + EOT, t
