"""tools/train_dask.py: pre-tokens counted on a Dask cluster give exactly the merges of
Tokenizer.train_files (text files) and Tokenizer.train(documents) (JSON lines); shards
encoded on the cluster are exactly the array of Tokenizer.encode_files.

Needs dask[distributed] (`pip install '.[dask]'`); skipped without it.  One local cluster
of two worker processes serves the whole module.  The library does this work itself now
(train_files(dask=...), encode_files(dask=...): tests/test_dask_cluster.py, in the quick
loop); the script stays for its shards, so its tests are all slow."""

import gzip
import importlib.util
import json
import logging
import os
import subprocess
import sys
from pathlib import Path

import pytest

pytestmark = pytest.mark.slow

pytest.importorskip("dask.bag")
distributed = pytest.importorskip("distributed")

ROOT = Path(__file__).resolve().parent.parent
TOOL = ROOT / "tools" / "train_dask.py"
DATA = ROOT / "tests" / "data"
CORPORA = [DATA / "corpus.en", DATA / "tinystories_sample.txt", DATA / "german.txt"]
SPECIAL = ["<|endoftext|>"]
VOCAB = 500
BLOCK = 16384


def _load_tool():
    if "train_dask" not in sys.modules:
        spec = importlib.util.spec_from_file_location("train_dask", TOOL)
        module = importlib.util.module_from_spec(spec)
        sys.modules["train_dask"] = module
        spec.loader.exec_module(module)
    return sys.modules["train_dask"]


td = _load_tool()


@pytest.fixture(scope="module")
def client():
    # the workers import train_dask by name (the functions they run come from it), whatever
    # this process imported before them (the tests run in several worker processes)
    # (kept until both have started: the cluster starts its worker processes in the background;
    # a spawned process takes this one's sys.path, a forked server's its PYTHONPATH)
    path = os.environ.get("PYTHONPATH")
    os.environ["PYTHONPATH"] = os.pathsep.join(p for p in (str(TOOL.parent), path) if p)
    sys.path.insert(0, str(TOOL.parent))
    try:
        cluster = distributed.LocalCluster(n_workers=2, threads_per_worker=1, processes=True,
                                           dashboard_address=":0", silence_logs=logging.ERROR)
        client = distributed.Client(cluster)
        client.wait_for_workers(2, timeout=120)
    finally:
        sys.path.remove(str(TOOL.parent))
        if path is None:
            del os.environ["PYTHONPATH"]
        else:
            os.environ["PYTHONPATH"] = path
    try:
        yield client
    finally:
        client.close()
        cluster.close()


def _read(path):
    return Path(path).read_text(encoding="utf-8")


@pytest.fixture(scope="module")
def text_files(tmp_path_factory):
    """The three corpora plus a variant of corpus.en that the GPT-2 rule can cut (lines
    ending in a letter), with special tokens, blank-line runs and spaces before line
    breaks (pre-tokens that span lines: counting line by line would be wrong)."""
    lines = _read(DATA / "corpus.en").splitlines()
    out = []
    for i, line in enumerate(lines[:1500]):
        if line.endswith(" ."):
            line = line[:-2]
        if i % 40 == 0:
            line += "<|endoftext|>"
        elif i % 7 == 0:
            line += "   "
        out.append(line)
        if i % 11 == 0:
            out.append("\n")
    variant = tmp_path_factory.mktemp("text") / "variant.txt"
    variant.write_text("\n".join(out) + "\n", encoding="utf-8")
    return [str(p) for p in CORPORA] + [str(variant)]


def _whole_counts(mod, paths, pattern):
    total = {}
    for p in paths:
        for k, v in mod.count_pretokens(_read(p), pattern=pattern, special_tokens=SPECIAL).items():
            total[k] = total.get(k, 0) + v
    return total


def test_test_corpus_is_sensitive(text_files, mod):
    """Counting the lines separately (what a naive read_text would do) differs."""
    text = _read(text_files[-1])
    by_line = mod.count_pretokens(text.splitlines(keepends=True), special_tokens=SPECIAL)
    assert by_line != mod.count_pretokens(text, special_tokens=SPECIAL)


def test_plan_cuts_where_the_library_cuts(text_files):
    import bpe_fallback

    for pattern in ("gpt2", "words", "cl100k", r"\w+|\W"):
        rx = bpe_fallback.resolve_pattern(pattern)
        ours = [(j[3], j[4], j[5]) for j in
                td.plan_jobs(td.resolve_inputs(text_files), BLOCK, rx, SPECIAL, bpe_fallback)]
        lib = [
            (os.path.abspath(p), a, b)
            for p in text_files
            for a, b in bpe_fallback.file_cuts(p, BLOCK, pattern=pattern, special_tokens=SPECIAL)
        ]
        assert ours == lib
        assert len(lib) > len(text_files) or pattern == r"\w+|\W"


def test_plan_cuts_keep_a_literal_word_pattern(text_files):
    """A tokenizer's pattern that is a bare word (a tokenizer.json Split of regex "gpt2") is
    that regex, not the pattern name: the ranges it cuts split text as the whole does."""
    import bpe_fallback

    path = text_files[-1]
    whole = _read(path).replace("the", "gpt2")
    literal = Path(path).with_name("gpt2_words.txt")
    literal.write_text(whole, encoding="utf-8")
    split = bpe_fallback.pretokenizer("gpt2")   # the regex /gpt2/ and the text between
    jobs = td.plan_jobs(td.resolve_inputs([str(literal)]), BLOCK, "gpt2", [], bpe_fallback)
    data = literal.read_bytes()
    pieces = [p for j in jobs for p in split(data[j[4]:j[5]].decode("utf-8"))]
    assert pieces == split(whole)


@pytest.mark.parametrize("pattern", ["gpt2", "words"])
def test_text_files_equal_train_files(client, mod, text_files, pattern):
    counted = td.count_on_dask(text_files, client=client, pattern=pattern,
                               special_tokens=SPECIAL, blocksize=BLOCK, backend=mod.__name__)
    assert counted.tasks >= len(text_files) + 4  # several ranges per large file
    assert counted.files == len(text_files) and not counted.notes
    assert counted.counts == _whole_counts(mod, text_files, pattern)

    tok, _ = td.train_on_dask(text_files, VOCAB, client=client, pattern=pattern,
                              special_tokens=SPECIAL, blocksize=BLOCK, backend=mod.__name__)
    ref = mod.Tokenizer.train_files(text_files, VOCAB, pattern=pattern, special_tokens=SPECIAL,
                                    chunk_size=BLOCK, workers=1)
    assert len(ref.merges) == VOCAB - 256 - len(SPECIAL)
    assert tok.merges == ref.merges
    assert tok == ref


def test_small_files_share_tasks(client, tmp_path):
    import bpe

    docs = _paragraphs(DATA / "tinystories_sample.txt", 2)
    paths = []
    for i, doc in enumerate(docs):
        paths.append(tmp_path / f"doc{i:03d}.txt")
        paths[-1].write_text(doc, encoding="utf-8")
    counted = td.count_on_dask([str(tmp_path / "doc*.txt")], client=client, blocksize=1000)
    assert counted.files == len(docs) > 10
    assert 1 < counted.tasks < len(docs)
    assert counted.counts == bpe.count_pretokens(docs)


def _paragraphs(path, size=6):
    lines = _read(path).splitlines(keepends=True)
    return ["".join(lines[i:i + size]) for i in range(0, len(lines), size)]


@pytest.fixture(scope="module")
def jsonl_files(tmp_path_factory):
    """Two JSON lines files (one gzip-compressed) with one record per paragraph and
    extra fields; returns (paths, documents in order)."""
    d = tmp_path_factory.mktemp("jsonl")
    docs = []
    for p in CORPORA:
        docs += _paragraphs(p)
    docs.insert(3, "line one\n\n\nline two  \n<|endoftext|>  x\u2028y\r\n")
    docs.insert(9, "")
    half = len(docs) * 3 // 4
    plain, packed = d / "part-0.jsonl", d / "part-1.jsonl.gz"
    with open(plain, "w", encoding="utf-8") as f:
        for i, doc in enumerate(docs[:half]):
            rec = {"id": i, "text": doc, "meta": {"source": "corpus", "n": len(doc)}}
            f.write(json.dumps(rec, ensure_ascii=i % 2 == 0) + "\n")
            if i % 13 == 0:
                f.write("\n")  # blank lines are skipped
    with gzip.open(packed, "wt", encoding="utf-8") as f:
        for i, doc in enumerate(docs[half:], half):
            f.write(json.dumps({"meta": None, "text": doc, "id": i}, ensure_ascii=False) + "\n")
    return [str(plain), str(packed)], docs


def test_jsonl_equals_train_on_documents(client, mod, jsonl_files):
    paths, docs = jsonl_files
    counted = td.count_on_dask(paths, client=client, special_tokens=SPECIAL, blocksize=BLOCK,
                               backend=mod.__name__)
    assert counted.tasks > 5
    assert counted.counts == mod.count_pretokens(docs, special_tokens=SPECIAL)
    tok, _ = td.train_on_dask(paths, VOCAB, client=client, special_tokens=SPECIAL,
                              blocksize=BLOCK, backend=mod.__name__)
    ref = mod.Tokenizer.train(docs, VOCAB, special_tokens=SPECIAL)
    assert tok.merges == ref.merges
    assert tok == ref


def test_jsonl_other_field_and_errors(client, tmp_path):
    path = tmp_path / "a.jsonl"
    path.write_text('{"body": "hello hello world", "text": 1}\n{"body": "hello"}\n')
    counted = td.count_on_dask([path], client=client, text_field="body")
    assert counted.counts == {b"hello": 2, b" hello": 1, b" world": 1}
    with pytest.raises(
        ValueError, match=r"a\.jsonl: the line at byte 0 has no string field 'text' \(it is 1\)"
    ):
        td.count_on_dask([path], client=client)
    path.write_text('{"text": "ok"}\n{"body": "x"}\n')
    with pytest.raises(ValueError, match=r"the line at byte 15 has no string field 'text'"):
        td.count_on_dask([path], client=client)
    path.write_text('{"text": "ok"}\n{"text": "x"\n')
    with pytest.raises(ValueError, match=r"the line at byte 15 is not JSON"):
        td.count_on_dask([path], client=client)


def test_invalid_utf8_read_as_replacement(client, mod, tmp_path):
    path = tmp_path / "bad.txt"
    path.write_bytes(b"caf\xc3\xa9 ok\n" * 50 + b"bad \xff\xfe bytes\n" + b"more text here\n" * 50)
    counted = td.count_on_dask([path], client=client, blocksize=64, backend=mod.__name__)
    assert counted.tasks > 3
    assert counted.invalid_utf8() == {str(path): 9 * 50 + 4}
    with pytest.warns(UserWarning, match="invalid UTF-8"):
        ref = mod.Tokenizer.train_files([path], 300, chunk_size=64, workers=1)
    assert mod.Tokenizer.train_from_counts(counted.counts, 300) == ref


def _run(*args, timeout=120):
    return subprocess.run([sys.executable, str(TOOL), *map(str, args)], capture_output=True,
                          text=True, timeout=timeout, cwd=ROOT)


@pytest.mark.slow
def test_cli_local_cluster(tmp_path, text_files):
    import bpe

    out = tmp_path / "tok.bpe"
    r = _run("train", *text_files, "--vocab-size", VOCAB, "--special", SPECIAL[0], "--blocksize",
             BLOCK, "-o", out, "--quiet")
    assert r.returncode == 0, r.stderr
    assert r.stdout == "" and r.stderr == ""
    ref = bpe.Tokenizer.train_files(text_files, VOCAB, special_tokens=SPECIAL, workers=1)
    loaded = bpe.Tokenizer.load(str(out))
    assert loaded.merges == ref.merges
    assert loaded == ref


def test_cli_scheduler_jsonl_huggingface(client, tmp_path, jsonl_files):
    import bpe

    paths, docs = jsonl_files
    out = tmp_path / "tokenizer.json"
    glob = str(Path(paths[0]).parent / "part-*")
    r = _run("train", glob, "--vocab-size", VOCAB, "--special", SPECIAL[0], "--blocksize", "16KiB",
             "--scheduler", client.scheduler.address, "--format", "huggingface", "-o", out)
    assert r.returncode == 0, r.stderr
    assert "2 files" in r.stdout and f"wrote        {out}" in r.stdout
    ref = bpe.Tokenizer.train(docs, VOCAB, special_tokens=SPECIAL)
    assert bpe.Tokenizer.from_huggingface(str(out)) == ref


def test_cli_missing_file():
    r = _run("train", "tests/data/no-such-file.txt", "--vocab-size", "500")
    assert r.returncode == 1
    assert r.stderr == "train_dask: error: no such file: tests/data/no-such-file.txt\n"


def _main(capsys, *args):
    try:
        code = td.main([str(a) for a in args])
    except SystemExit as e:  # argparse
        code = e.code
    out = capsys.readouterr()
    return code, out.err


@pytest.mark.parametrize("args, message", [
    (["tests/data/no-such-file.txt", "--vocab-size", "500"], "no such file"),
    (["tests/data/*.nothing", "--vocab-size", "500"], "no file matches"),
    (["tests/data", "--vocab-size", "500"], "is a directory"),
    (["tests/data/german.txt", "--vocab-size", "100"], "vocab_size must be at least 256"),
    (["tests/data/german.txt", "--vocab-size", "99999999999999999999"], "at most"),
    (["tests/data/german.txt", "--vocab-size", "500", "--min-frequency", "-1"], "min_frequency"),
    (["tests/data/german.txt", "--vocab-size", "500", "--workers", "2", "--scheduler", "x"],
     "--workers"),
    (["tests/data/german.txt", "--vocab-size", "500", "--pattern", "(unclosed"], "pattern"),
    (["tests/data/german.txt", "--vocab-size", "500", "-o", "no/such/dir/x.bpe"], "does not exist"),
    (["tests/data/german.txt", "--vocab-size", "500", "-o", "tests"], "is a directory"),
    (["tests/data/german.txt"], "--vocab-size"),
    (["tests/data/german.txt", "--vocab-size", "500", "--blocksize", "lots"], "not a size"),
    (["tests/data/german.txt", "--vocab-size", "500", "--scheduler", "tcp://127.0.0.1:1"],
     "cannot connect"),
])
def test_cli_errors_are_one_line(capsys, monkeypatch, args, message):
    monkeypatch.chdir(ROOT)
    import dask

    with dask.config.set({"distributed.comm.timeouts.connect": "1s"}):
        code, err = _main(capsys, "train", *args)
    assert code not in (0, None)
    assert err.count("\n") == 1 and "Traceback" not in err, err
    assert message in err and err.startswith("train_dask: error:"), err


def test_cli_bad_record_is_one_line(capsys, client, tmp_path):
    path = tmp_path / "x.jsonl"
    path.write_text('{"text": "fine"}\n["not", "a", "record"]\n')
    code, err = _main(capsys, "train", path, "--vocab-size", "300", "--scheduler",
                      client.scheduler.address, "-o", tmp_path / "x.bpe")
    assert code == 1
    assert err.count("\n") == 1 and "Traceback" not in err, err
    assert "x.jsonl: the line at byte 17 is a JSON list, not an object" in err
    assert not (tmp_path / "x.bpe").exists()


@pytest.mark.slow
def test_cli_worker_error_is_one_line(tmp_path):
    """An error raised in a worker of the tool's own local cluster: one line, no worker log."""
    path = tmp_path / "x.jsonl"
    path.write_text('{"text": "fine"}\n{"txt": 1}\n')
    r = _run("train", path, "--vocab-size", "300", "--workers", "1", "--quiet", "-o",
             tmp_path / "x.bpe")
    assert r.returncode == 1
    assert r.stdout == ""
    assert (
        r.stderr == f"train_dask: error: {path}: the line at byte 17 has no string field 'text'\n"
    )


def test_cli_without_dask_says_what_to_install(capsys, monkeypatch):
    import importlib.util

    real = importlib.util.find_spec
    monkeypatch.setattr(importlib.util, "find_spec",
                        lambda name, *a: None if name == "distributed" else real(name, *a))
    code, err = _main(capsys, "train", DATA / "german.txt", "--vocab-size", "300")
    assert code == 1
    assert err == ("train_dask: error: this tool needs distributed: pip install "
                   "'dask[distributed]' (or pip install '.[dask]')\n")


# ---- encoding --------------------------------------------------------------------------


def _shards(index, directory):
    """The shards of an encode_on_dask run: (their bytes joined, document starts)."""
    data, documents, count = b"", [], 0
    for shard in index["shards"]:
        path = Path(directory) / shard["path"]
        meta = json.loads((Path(str(path) + ".json")).read_text())
        assert meta["count"] == shard["count"] and meta["dtype"] == index["dtype"]
        data += path.read_bytes()
        documents += [count + d for d in meta["documents"]]
        count += meta["count"]
    assert count == index["count"]
    return data, documents


def test_encode_equals_encode_files(client, mod, text_files, jsonl_files, tmp_path):
    tok = mod.Tokenizer.train_files(text_files, VOCAB, special_tokens=SPECIAL + ["<|pad|>"])
    plain = tmp_path / "records.jsonl"  # the compressed records, for the reference
    with gzip.open(jsonl_files[0][1], "rb") as f:
        plain.write_bytes(f.read())
    inputs = text_files + jsonl_files[0]
    out = tmp_path / "shards"
    out.mkdir()
    index = td.encode_on_dask(inputs, tok, out, client=client, eot=SPECIAL[0],
                              allowed_special="all", blocksize=BLOCK)
    assert len(index["shards"]) > len(inputs)  # files in several ranges, hence shards
    ref = tok.encode_files(text_files + [jsonl_files[0][0], plain], tmp_path / "ref.bin",
                           eot=SPECIAL[0], allowed_special="all")
    data, documents = _shards(index, out)
    assert data == (tmp_path / "ref.bin").read_bytes()
    assert documents == ref["documents"]
    assert len(documents) == len(text_files) + len(jsonl_files[1])
    assert index["tokenizer_sha256"] == ref["tokenizer_sha256"] and index["dtype"] == ref["dtype"]
    assert sorted(os.listdir(out)) == sorted(["index.json"] + [
        s["path"] + suffix for s in index["shards"] for suffix in ("", ".json")])


@pytest.mark.slow
def test_cli_encode_local_cluster(tmp_path, text_files):
    import bpe

    tok = bpe.Tokenizer.train_files(text_files, VOCAB, special_tokens=SPECIAL)
    tok.save(str(tmp_path / "tok.bpe"))
    out = tmp_path / "shards"
    r = _run("encode", "--tokenizer", tmp_path / "tok.bpe", *text_files, "-o", out, "--eot",
             SPECIAL[0], "--allowed-special", "all", "--blocksize", BLOCK)
    assert r.returncode == 0, r.stderr
    assert "shards and index.json" in r.stdout
    index = json.loads((out / "index.json").read_text())
    tok.encode_files(text_files, tmp_path / "ref.bin", eot=SPECIAL[0], allowed_special="all")
    assert _shards(index, out)[0] == (tmp_path / "ref.bin").read_bytes()
