"""Gzipped files: a gzip bomb is refused with bounded memory, a huge file in tiktoken's
cache is not read whole, every loader reads a .gz like the plain file, and a broken one
is a ValueError naming it."""

import gzip
import hashlib
import os

import pytest
from fresh import OPENAI, POSIX, run_fresh

# ---- gzip: bombs, and gzipped files in every loader ----------------------------------

def write_bomb(path, gib=4):
    """A gzip file of a few MB that inflates to `gib` GiB of zeros (many members)."""
    member = gzip.compress(b"\0" * (1 << 20), compresslevel=9)
    with open(path, "wb") as f:
        for _ in range(gib << 10):
            f.write(member)


BOMB = """
    import resource, time
    resource.setrlimit(resource.RLIMIT_AS, (2 << 30, 2 << 30))
    P = sys.argv[1]
    t = time.monotonic()
    try:
        {call}
        print("loaded")
    except (ValueError, FileNotFoundError) as e:
        print(type(e).__name__, round(time.monotonic() - t), e)
"""


@POSIX
@pytest.mark.parametrize("call", [
    "m.get_encoding('cl100k_base', path=P)",
    "m.get_encoding('cl100k_base')",  # tiktoken's cache holds the bomb
    "m.Tokenizer.from_file(P)",
    "m.Tokenizer.from_tiktoken(P, pattern='gpt2')",
    "m.Tokenizer.load(P)",
])
def test_gzip_bomb_is_refused_with_bounded_memory(mod, tmp_path, call):
    cache = tmp_path / "cache"
    cache.mkdir()
    bomb = tmp_path / "cl100k_base.tiktoken.gz"
    write_bomb(bomb)
    os.link(bomb, cache / hashlib.sha1((OPENAI + "cl100k_base.tiktoken").encode()).hexdigest())
    r = run_fresh(mod, BOMB.format(call=call), bomb, timeout=120,
                  env={"TIKTOKEN_CACHE_DIR": str(cache)})
    assert r.returncode == 0, r.stderr[-2000:]
    kind, seconds = r.stdout.split()[:2]
    assert kind in ("ValueError", "FileNotFoundError") and int(seconds) <= 20, r.stdout


@POSIX
def test_huge_file_in_tiktoken_cache_is_not_read_whole(mod, tmp_path):
    cache = tmp_path / "cache"
    cache.mkdir()
    with open(cache / hashlib.sha1((OPENAI + "cl100k_base.tiktoken").encode()).hexdigest(),
              "wb") as f:
        f.truncate(3 << 30)  # sparse: no disk used
    r = run_fresh(mod, BOMB.format(call="m.get_encoding('cl100k_base')"), "-", timeout=120,
                  env={"TIKTOKEN_CACHE_DIR": str(cache)})
    assert r.returncode == 0, r.stderr[-2000:]
    assert r.stdout.split()[0] in ("ValueError", "FileNotFoundError"), r.stdout


def test_gzipped_files_read_like_plain_ones_in_every_loader(mod, small, tmp_path):
    def gz(path):
        with open(path, "rb") as f:
            data = f.read()
        with open(f"{path}.gz", "wb") as f:
            f.write(gzip.compress(data))
        return f"{path}.gz"

    small.save(tmp_path / "t.bpe")
    small.save_huggingface(tmp_path / "tokenizer.json")
    small.save_tiktoken(tmp_path / "t.tiktoken")
    small.save_gpt2(tmp_path / "g")
    T = mod.Tokenizer
    assert T.load(gz(tmp_path / "t.bpe")) == small
    assert T.from_huggingface(gz(tmp_path / "tokenizer.json")) == small
    assert T.from_tiktoken(gz(tmp_path / "t.tiktoken"), pattern=small.pattern,
                           special_tokens=small.special_tokens) == small
    assert T.from_file(tmp_path / "t.bpe.gz") == small
    assert T.from_file(tmp_path / "tokenizer.json.gz") == small
    vocab, merges = gz(tmp_path / "g" / "vocab.json"), gz(tmp_path / "g" / "merges.txt")
    assert T.from_gpt2(vocab, merges) == small


def test_broken_gzip_is_a_value_error_naming_the_file(mod, small, tmp_path):
    small.save(tmp_path / "t.bpe")
    data = gzip.compress((tmp_path / "t.bpe").read_bytes())
    for name, blob in (("cut.gz", data[: len(data) // 2]), ("bad.gz", data[:20] + b"x" * 40)):
        (tmp_path / name).write_bytes(blob)
        for call in (mod.Tokenizer.load, mod.Tokenizer.from_file,
                     lambda p: mod.get_encoding("cl100k_base", path=p)):
            with pytest.raises(ValueError) as e:
                call(tmp_path / name)
            assert name in str(e.value)
