"""Data prep as a user does it, both backends.

- Worker pools from a script with no `if __name__ == "__main__":` guard, from `python -c` and
  from a script on standard input: the results of workers=1, the script's top level run once,
  nothing left in the temporary directory, and with the compiled core no process started at
  all (counting and encoding are threads of the caller).  A sitecustomize in the child records
  every fork, exec and spawn it makes.
- Training from JSON lines (`train_files(..., jsonl=True)`, `bpe train --jsonl`): the merges of
  `Tokenizer.train(texts)`, each record one document.
- `bpe encode --val-fraction`, `bpe decode`, `bpe info`, named encodings (`-t o200k_base`,
  `-t x.tiktoken.gz`) against tiktoken's own registry, and the summary of `bpe train` in
  bounded memory.

The command line runs as a user runs it: the installed `bpe` command for the compiled backend,
`python -m bpe_fallback` for the pure-Python one.
"""

import array
import base64
import gzip
import hashlib
import json
import os
import random
import re
import subprocess
import sys
import textwrap
import warnings
from pathlib import Path

import pytest

from helpers import DATA, EOT, SPECIALS, gpt2_ranks, read_data, steady_malloc_env
from test_cli import assert_ok, assert_one_line_error, bpe, run_tool, tool_env

REPO = Path(__file__).resolve().parent.parent


def cli(mod, args, **kw):
    """The command line on backend `mod`: `bpe ...` (compiled), `python -m bpe_fallback ...`."""
    if mod.__name__ == "bpe_fallback":
        return run_tool([sys.executable, "-m", "bpe_fallback"], args, mod=mod, **kw)
    return bpe(args, mod=mod, **kw)


def read_ids(path, dtype):
    ids = array.array({"uint16": "H", "uint32": "I"}[dtype])
    assert ids.itemsize == {"uint16": 2, "uint32": 4}[dtype]
    ids.frombytes(Path(path).read_bytes())
    if sys.byteorder == "big":
        ids.byteswap()
    return ids.tolist()


def split_documents(path):
    """The ids of each document of an encoded array, by its sidecar."""
    meta = json.loads(Path(str(path) + ".json").read_text(encoding="utf-8"))
    ids = read_ids(path, meta["dtype"])
    starts = meta["documents"] + [len(ids)]
    return [ids[a:b] for a, b in zip(starts, starts[1:])], meta


def documents():
    """~300 documents of a few lines each, several scripts."""
    lines = read_data("corpus.en").splitlines(keepends=True)[:1500]
    docs = ["".join(lines[i:i + 5]) for i in range(0, len(lines), 5)]
    docs += [read_data("german.txt"), "caf\u00e9 \u65e5\u672c\u8a9e \U0001f389 it's 2024\n",
             read_data("address.txt")]
    return docs


def write_jsonl(path, docs, field="text"):
    with open(path, "w", encoding="utf-8") as f:
        for i, doc in enumerate(docs):
            f.write(json.dumps({"id": i, field: doc, "len": len(doc)}, ensure_ascii=i % 2 == 0)
                    + "\n")
            if i % 17 == 0:
                f.write("\n")  # a blank line is no record


# ---- worker pools from any script -----------------------------------------------------------

# Records, in the file $SPAWN_LOG, every process this interpreter starts (fork, exec, spawn,
# multiprocessing's fork server and resource tracker included): installed as sitecustomize.
SITECUSTOMIZE = r'''
import os

_LOG = os.environ.get("SPAWN_LOG")
if _LOG:
    import _posixsubprocess

    def _note(what):
        with open(_LOG, "a") as f:
            f.write(f"{os.getpid()} {what}\n")

    def _wrap(owner, name):
        original = getattr(owner, name, None)
        if original is None:
            return

        def wrapper(*args, **kwargs):
            _note(name)
            return original(*args, **kwargs)

        setattr(owner, name, wrapper)

    _wrap(_posixsubprocess, "fork_exec")
    for _name in ("fork", "forkpty", "posix_spawn", "posix_spawnp", "spawnv", "spawnve"):
        _wrap(os, _name)
'''

# The user's script: no main guard.  Its top level runs once per run of it: each run appends
# a line to $RUNS_LOG.
PREP = r'''
import json, os, importlib
mod = importlib.import_module(os.environ["BACKEND"])
with open(os.environ["RUNS_LOG"], "a") as f:
    f.write("ran\n")
print("TOP LEVEL")
paths = os.environ["INPUTS"].split(os.pathsep)
out = os.environ["OUT"]
specials = ["<|endoftext|>"]
one = mod.Tokenizer.train_files(paths, 400, workers=1, special_tokens=specials)
two = mod.Tokenizer.train_files(paths, 400, workers=2, chunk_size=20000, special_tokens=specials)
one.encode_files(paths, out + "-1.bin", workers=1, eot="<|endoftext|>", allowed_special="all")
two.encode_files(paths, out + "-2.bin", workers=2, chunk_size=20000, eot="<|endoftext|>",
                 allowed_special="all")
import multiprocessing
print(json.dumps({"same_merges": one.merges == two.merges, "n_merges": len(two.merges),
                  "children": len(multiprocessing.active_children())}))
'''


@pytest.fixture(scope="module")
def prep_inputs(tmp_path_factory):
    d = tmp_path_factory.mktemp("prep")
    a = d / "a.txt"
    a.write_text(EOT.join(documents()), encoding="utf-8")
    b = d / "b.txt"
    b.write_text(read_data("tinystories_sample.txt"), encoding="utf-8")
    return [a, b]


@pytest.mark.parametrize("how", ["script", "dash-c", "stdin"])
def test_workers_from_an_unguarded_script(mod, how, prep_inputs, tmp_path):
    site = tmp_path / "site"
    site.mkdir()
    (site / "sitecustomize.py").write_text(SITECUSTOMIZE)
    temp = tmp_path / "tmpdir"  # the child's TMPDIR: it must be left empty
    temp.mkdir()
    work = tmp_path / "work"
    work.mkdir()
    script = work / "prep.py"
    script.write_text(PREP)
    env = tool_env(mod)
    env["PYTHONPATH"] = os.pathsep.join([str(site), env["PYTHONPATH"]])
    env.update(BACKEND=mod.__name__, RUNS_LOG=str(tmp_path / "runs.log"),
               SPAWN_LOG=str(tmp_path / "spawn.log"), TMPDIR=str(temp),
               INPUTS=os.pathsep.join(map(str, prep_inputs)), OUT=str(tmp_path / "ids"))
    args = {"script": [sys.executable, str(script)], "dash-c": [sys.executable, "-c", PREP],
            "stdin": [sys.executable, "-"]}[how]
    result = subprocess.run(args, input=PREP if how == "stdin" else None, capture_output=True,
                            text=True, cwd=work, env=env, timeout=300)
    assert result.returncode == 0, result.stderr[-3000:]
    assert "Traceback" not in result.stderr, result.stderr[-3000:]
    assert result.stdout.count("TOP LEVEL") == 1, result.stdout
    assert (tmp_path / "runs.log").read_text() == "ran\n"  # never re-run by a worker
    report = json.loads(result.stdout.splitlines()[-1])
    assert report["same_merges"] and report["n_merges"] > 100 and report["children"] == 0
    ids1, ids2 = (tmp_path / "ids-1.bin").read_bytes(), (tmp_path / "ids-2.bin").read_bytes()
    assert len(ids1) > 10000 and ids1 == ids2
    assert os.listdir(temp) == []  # no bpe-workers-* or any other temporary file left
    assert sorted(os.listdir(work)) == ["prep.py"]
    spawned = (tmp_path / "spawn.log").read_text().splitlines() if (
        tmp_path / "spawn.log").exists() else []
    if mod.BACKEND == "cython":
        assert spawned == [], spawned  # threads only: no worker, no fork server, no tracker
    else:
        assert spawned, "the pure-Python backend runs its workers in processes"


def test_compiled_train_files_uses_no_process(mod, prep_inputs, monkeypatch):
    """In this process too: train_files and encode_files with workers start no process."""
    if mod.BACKEND != "cython":
        pytest.skip("the compiled core counts in threads")
    import multiprocessing.process

    started, start = [], multiprocessing.process.BaseProcess.start

    def recorded(self):
        started.append(self)
        start(self)

    monkeypatch.setattr(multiprocessing.process.BaseProcess, "start", recorded)
    tok = mod.Tokenizer.train_files([str(p) for p in prep_inputs], 400, workers=2,
                                    chunk_size=20000, special_tokens=[EOT])
    assert started == []
    assert tok == mod.Tokenizer.train_files([str(p) for p in prep_inputs], 400, workers=1,
                                            special_tokens=[EOT])


# ---- training from JSON lines ---------------------------------------------------------------


def test_train_files_jsonl_equals_train_of_the_texts(mod, tmp_path):
    docs = documents()
    path = tmp_path / "docs.jsonl"
    write_jsonl(path, docs, field="body")
    want = mod.Tokenizer.train(docs, 600, special_tokens=SPECIALS)
    assert len(want.merges) > 200
    for workers, chunk_size in ((1, None), (1, 3000), (2, 5000)):
        got = mod.Tokenizer.train_files([str(path)], 600, jsonl=True, text_field="body",
                                        workers=workers, chunk_size=chunk_size,
                                        special_tokens=SPECIALS)
        assert got == want, (workers, chunk_size)
    # .ndjson, and a JSON lines file named .txt with jsonl=True
    other = tmp_path / "docs.txt"
    write_jsonl(other, docs)
    assert mod.Tokenizer.train_files([str(other)], 600, jsonl=True,
                                     special_tokens=SPECIALS) == want


def test_train_files_warns_for_jsonl_read_as_text(mod, tmp_path):
    path = tmp_path / "docs.jsonl"
    write_jsonl(path, documents()[:40])
    with pytest.warns(UserWarning, match="jsonl"):
        mod.Tokenizer.train_files([str(path)], 300, workers=1)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        mod.Tokenizer.train_files([str(path)], 300, workers=1, jsonl=True)


def test_train_files_jsonl_bad_record(mod, tmp_path):
    path = tmp_path / "bad.jsonl"
    path.write_text('{"text": "fine"}\n{"body": "no text field"}\n', encoding="utf-8")
    with pytest.raises(ValueError, match="text"):
        mod.Tokenizer.train_files([str(path)], 300, jsonl=True)


def test_cli_train_jsonl(mod, tmp_path):
    docs = documents()
    path = tmp_path / "docs.jsonl"
    write_jsonl(path, docs, field="body")
    out = tmp_path / "t.bpe"
    result = cli(mod, ["train", path, "--jsonl", "--text-field", "body", "--vocab-size", 600,
                       "--special", EOT, "-o", out, "-q"])
    assert_ok(result)
    assert result.stderr == ""
    assert mod.Tokenizer.load(str(out)) == mod.Tokenizer.train(docs, 600, special_tokens=[EOT])
    # trained as plain text: a one-line warning that says what to pass
    result = cli(mod, ["train", path, "--vocab-size", 300, "-o", tmp_path / "raw.bpe", "-q"])
    assert_ok(result)
    lines = result.stderr.splitlines()
    assert len(lines) == 1 and lines[0].startswith("bpe: warning: ") and "--jsonl" in lines[0], \
        result.stderr


# ---- train / val ----------------------------------------------------------------------------


def test_val_fraction_writes_both_files(mod, tmp_path):
    docs = documents()
    path = tmp_path / "docs.jsonl"
    write_jsonl(path, docs)
    tok = mod.Tokenizer.train(docs, 500, special_tokens=[EOT])
    tok.save(str(tmp_path / "tok.bpe"))
    eot = tok.special_tokens[EOT]
    out = tmp_path / "data"
    out.mkdir()
    result = cli(mod, ["encode", "-t", tmp_path / "tok.bpe", path, "-o", out / "train.bin",
                       "--val-fraction", 0.1, "--eot", EOT, "--workers", 2])
    assert_ok(result)
    assert sorted(os.listdir(out)) == ["train.bin", "train.bin.json", "val.bin", "val.bin.json"]
    assert "val.bin" in result.stdout
    train_docs, train_meta = split_documents(out / "train.bin")
    val_docs, val_meta = split_documents(out / "val.bin")
    want = sorted(tuple(tok.encode(d) + [eot]) for d in docs)
    assert sorted(map(tuple, train_docs + val_docs)) == want  # every document once, whole
    assert 0.03 * len(docs) <= len(val_docs) <= 0.25 * len(docs), len(val_docs)
    assert train_meta["count"] + val_meta["count"] == sum(map(len, want))
    # the choice is seeded: the same files again
    again = tmp_path / "again"
    again.mkdir()
    assert_ok(cli(mod, ["encode", "-t", tmp_path / "tok.bpe", path, "-o", again / "train.bin",
                        "--val-fraction", 0.1, "--eot", EOT, "-q"]))
    for name in ("train.bin", "val.bin"):
        assert (again / name).read_bytes() == (out / name).read_bytes()


def test_val_fraction_bad_values(mod, tmp_path):
    src = DATA / "german.txt"
    tok = mod.Tokenizer.from_merges([(b"e", b"n")], special_tokens=[EOT])
    tok.save(str(tmp_path / "tok.bpe"))
    for bad in ("1.5", "-0.1", "nan", "1"):
        result = cli(mod, ["encode", "-t", tmp_path / "tok.bpe", src, "-o", tmp_path / "t.bin",
                           "--val-fraction", bad])
        assert_one_line_error(result, "bpe", "--val-fraction")
    assert sorted(os.listdir(tmp_path)) == ["tok.bpe"]


def test_one_document_is_split_by_tokens(mod, tmp_path):
    """nanoGPT's rule: the last fraction of the ids of the one document goes to val.bin,
    whichever side the document's hash picks; the summary says each side's ids."""
    text = read_data("corpus.en")
    src = tmp_path / "one.txt"
    src.write_bytes(text.encode("utf-8"))
    tok = mod.Tokenizer.train(text, 400, special_tokens=[EOT])
    tok.save(str(tmp_path / "tok.bpe"))
    want = tok.encode(text) + [tok.special_tokens[EOT]]
    for fraction, seed in [(0.1, 0), (0.5, 1), (0.5, 2), (0.5, 3), (0.3, 4)]:
        out = tmp_path / f"run{seed}"
        result = cli(mod, ["encode", "-t", tmp_path / "tok.bpe", src, "--eot", EOT, "-o",
                           out / "train.bin", "--val-fraction", fraction, "--seed", seed])
        assert_ok(result)
        train, val = read_ids(out / "train.bin", "uint16"), read_ids(out / "val.bin", "uint16")
        keep = int(len(want) * (1 - fraction))
        assert train == want[:keep] and val == want[keep:]
        train_meta = json.loads((out / "train.bin.json").read_text())
        val_meta = json.loads((out / "val.bin.json").read_text())
        assert (train_meta["count"], val_meta["count"]) == (len(train), len(val))
        assert train_meta["split"]["by"] == val_meta["split"]["by"] == "tokens"
        assert train_meta["inputs"][0]["ids_count"] == len(train)
        assert val_meta["inputs"][0]["ids_count"] == len(val)
        line = next(x for x in result.stdout.splitlines() if x.startswith("split"))
        assert f"{len(train):,} ids to" in line and f"{len(val):,} to" in line, line


def test_one_record_is_split_by_tokens_in_the_library(mod, tmp_path):
    tok = mod.Tokenizer.train(documents(), 400)
    doc = read_data("tinystories_sample.txt")
    path = tmp_path / "one.jsonl"
    write_jsonl(path, [doc])
    meta = tok.encode_files([path], tmp_path / "t.bin", val_fraction=0.25,
                            val_out=tmp_path / "v.bin")
    want = tok.encode(doc)
    keep = int(len(want) * 0.75)
    assert meta["count"] == keep and meta["split"]["by"] == "tokens"
    assert read_ids(tmp_path / "t.bin", meta["dtype"]) == want[:keep]
    assert read_ids(tmp_path / "v.bin", meta["dtype"]) == want[keep:]


@pytest.mark.parametrize("case", ["all documents on one side", "one document too short"])
def test_an_empty_side_is_refused(mod, tmp_path, case):
    tok = mod.Tokenizer.train(documents(), 300)
    tok.save(str(tmp_path / "tok.bpe"))
    if case == "one document too short":
        paths, fraction, seed = [tmp_path / "short.txt"], 0.1, 0
        paths[0].write_text("h", encoding="utf-8")  # one id: int(1 * 0.9) == 0 for train
    else:
        paths = []
        for i in range(3):
            paths.append(tmp_path / f"doc{i}.txt")
            paths[-1].write_text(f"document number {i}\n", encoding="utf-8")
        fraction = 0.01
        seed = next(s for s in range(1000) if not any(_doc_is_val(p.read_bytes(), s, fraction)
                                                      for p in paths))
    out = tmp_path / "out"
    result = cli(mod, ["encode", "-t", tmp_path / "tok.bpe", *paths, "-o", out / "train.bin",
                       "--val-fraction", fraction, "--seed", seed])
    assert_one_line_error(result, "bpe", "val")
    assert not out.exists() or not os.listdir(out)
    with pytest.raises(ValueError, match="val_fraction"):
        tok.encode_files(paths, tmp_path / "lib.bin", val_fraction=fraction, seed=seed)
    assert not (tmp_path / "lib.bin").exists()


def test_missing_output_directories_are_made(mod, tmp_path):
    tok = mod.Tokenizer.train(documents(), 300, special_tokens=[EOT])
    tok.save(str(tmp_path / "tok.bpe"))
    src = tmp_path / "docs.jsonl"
    write_jsonl(src, documents())
    out = tmp_path / "new" / "deeper" / "train.bin"
    assert_ok(cli(mod, ["encode", "-t", tmp_path / "tok.bpe", src, "-o", out,
                        "--val-fraction", 0.1, "-q"]))
    assert sorted(os.listdir(out.parent)) == ["train.bin", "train.bin.json", "val.bin",
                                              "val.bin.json"]
    assert_ok(cli(mod, ["decode", "-t", tmp_path / "tok.bpe", out, "-o",
                        tmp_path / "text" / "out.txt"]))
    assert_ok(cli(mod, ["train", src, "--vocab-size", 280, "-o", tmp_path / "tok" / "t.bpe",
                        "-q"]))
    assert (tmp_path / "tok" / "t.bpe").is_file()


@pytest.mark.parametrize("names", ["val_out is out.json", "out is val_out.json",
                                   "val_out.json is out", "a hard link"])
def test_output_names_of_a_set_never_collide(mod, tmp_path, names):
    tok = mod.Tokenizer.train(documents(), 300)
    src = tmp_path / "docs.jsonl"
    write_jsonl(src, documents())
    out, val_out = {
        "val_out is out.json": ("a.bin", "a.bin.json"),
        "out is val_out.json": ("v.bin.json", "v.bin"),
        "val_out.json is out": ("w.bin.json", "w.bin"),
        "a hard link": ("h.bin", "link.bin"),
    }[names]
    if names == "a hard link":
        (tmp_path / "h.bin.json").write_text("{}")
        os.link(tmp_path / "h.bin.json", tmp_path / "link.bin.json")
    before = sorted(os.listdir(tmp_path))
    with pytest.raises(ValueError, match="name the outputs apart"):
        tok.encode_files([src], tmp_path / out, val_fraction=0.2, val_out=tmp_path / val_out)
    assert sorted(os.listdir(tmp_path)) == before


def _doc_is_val(data, seed, fraction):
    """The docs' statement of the rule (docs/dataprep.md), evaluated as written there."""
    doc = (REPO / "docs" / "dataprep.md").read_text(encoding="utf-8")
    rules = [c for c in re.findall(r"`([^`\n]+)`", doc) if "blake2b(" in c]
    assert len(rules) == 1, rules
    return eval(rules[0], {"hashlib": hashlib, "data": data, "seed": seed, "F": fraction})


def test_the_documented_val_rule_is_the_one_run(mod, tmp_path):
    """Which documents go to val.bin, recomputed from the docs' statement of the rule, and
    read back from what encode_files wrote (each document's text, decoded)."""
    docs = [f"document {i}: " + "lorem ipsum " * (i % 7) + "\n" for i in range(400)]
    docs.append("caf\u00e9 \ud800 lone surrogate\n")  # a record's text is hashed repaired
    tok = mod.Tokenizer.train(docs, 300, special_tokens=[EOT])
    eot = tok.special_tokens[EOT]
    path = tmp_path / "docs.jsonl"
    with open(path, "w", encoding="utf-8") as f:
        for doc in docs:
            f.write(json.dumps({"text": doc}) + "\n")
    files = []
    for i, doc in enumerate(docs[:60]):
        files.append(tmp_path / f"f{i}.txt")
        files[-1].write_bytes(doc.encode("utf-8", "surrogatepass") + b"\xff" * (i % 3 == 0))
    for inputs, raw in [([path], False), (files, True)]:
        for seed, fraction in [(0, 0.1), (7, 0.35)]:
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")  # the invalid UTF-8 of some files
                tok.encode_files(inputs, tmp_path / "t.bin", eot=EOT, val_fraction=fraction,
                                 seed=seed, val_out=tmp_path / "v.bin")
            val_ids = read_ids(tmp_path / "v.bin", "uint16")
            got = [tok.decode_bytes(d) for d in _cut(val_ids, eot)]
            texts = ([p.read_bytes() for p in inputs] if raw else
                     [d.replace("\ud800", "\ufffd").encode("utf-8") for d in docs])
            want = [t for t in texts if _doc_is_val(t, seed, fraction)]
            shown = [t.decode("utf-8", "replace").encode("utf-8") for t in want]
            assert got == shown and 0 < len(want) < len(texts)


def _cut(ids, eot):
    docs, cur = [], []
    for i in ids:
        if i == eot:
            docs.append(cur)
            cur = []
        else:
            cur.append(i)
    return docs


def test_invalid_utf8_is_warned_about_once_per_file(mod, tmp_path):
    tok = mod.Tokenizer.train(documents(), 300)
    tok.save(str(tmp_path / "tok.bpe"))
    path = tmp_path / "three.txt"
    path.write_bytes((b"hello world\n" * 30000 + b"bad \xff here\n") * 3)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        tok.encode_files([path], tmp_path / "a.bin", chunk_size=100_000, workers=2)
        mod.Tokenizer.train_files([path], 260, chunk_size=100_000, workers=2)
    messages = [str(w.message) for w in caught]
    assert len(messages) == 2 and all("three.txt: invalid UTF-8" in m for m in messages)
    for command in (["encode", "-t", tmp_path / "tok.bpe", path, "-o", tmp_path / "b.bin",
                     "--workers", 2, "-q"],
                    ["train", path, "--vocab-size", 260, "-o", tmp_path / "t.bpe", "-q",
                     "--workers", 2]):
        result = cli(mod, command)
        assert_ok(result)
        assert result.stderr.count("invalid UTF-8") == 1, result.stderr


# ---- decode, info ---------------------------------------------------------------------------


@pytest.mark.parametrize("dtype", ["uint16", "uint32"])
def test_decode_gives_the_text_back(mod, tmp_path, dtype):
    docs = [read_data("german.txt"), read_data("tinystories_sample.txt").replace(EOT, ""),
            "caf\u00e9 \U0001f389\n"]
    paths = []
    for i, doc in enumerate(docs):
        paths.append(tmp_path / f"d{i}.txt")
        paths[-1].write_text(doc, encoding="utf-8", newline="")
    tok = mod.Tokenizer.train(docs, 400, special_tokens=[EOT])
    tok.save(str(tmp_path / "tok.bpe"))
    ids = tmp_path / "ids.bin"
    assert_ok(cli(mod, ["encode", "-t", tmp_path / "tok.bpe", *paths, "-o", ids, "--eot", EOT,
                        "--dtype", dtype, "-q"]))
    want = "".join(doc + EOT for doc in docs)
    out = tmp_path / "back.txt"
    result = cli(mod, ["decode", "-t", tmp_path / "tok.bpe", ids, "-o", out])
    assert_ok(result)
    assert out.read_bytes() == want.encode("utf-8")
    result = cli(mod, ["decode", "-t", tmp_path / "tok.bpe", ids])
    assert_ok(result)
    assert result.stdout == want


def test_decode_refuses_foreign_ids(mod, tmp_path):
    tok = mod.Tokenizer.from_merges([(b"e", b"n")])
    tok.save(str(tmp_path / "tok.bpe"))
    (tmp_path / "ids.bin").write_bytes(array.array("H", [104, 105, 60000]).tobytes())
    result = cli(mod, ["decode", "-t", tmp_path / "tok.bpe", tmp_path / "ids.bin"])
    assert_one_line_error(result, "bpe", "60000")


def test_info(mod, tmp_path):
    tok = mod.Tokenizer.train(documents(), 700, pattern="cl100k", special_tokens=SPECIALS)
    tok.save(str(tmp_path / "tok.bpe"))
    result = cli(mod, ["info", tmp_path / "tok.bpe"])
    assert_ok(result)
    out = result.stdout
    assert "700" in out
    assert "cl100k" in out
    for special in SPECIALS:
        assert special in out
    longest = max((t for i, t in tok.vocab.items() if i < 256 + len(tok.merges)), key=len)
    assert repr(longest.decode("utf-8", "backslashreplace")) in out


# ---- named encodings ------------------------------------------------------------------------

BLOB = "https://openaipublic.blob.core.windows.net/encodings/"
SAMPLE = (read_data("tinystories_sample.txt") + read_data("german.txt")
          + "\u65e5\u672c\u8a9e \U0001f389 it's 2024, isn't it?\n\n  end")
ORACLE = {"gpt2": "r50k_base", "cl100k_base": "cl100k_base", "o200k_base": "o200k_base"}


@pytest.fixture(scope="module")
def tiktoken_cache(tmp_path_factory):
    """A directory filled as tiktoken caches OpenAI's files (the sha1 of the URL)."""
    d = tmp_path_factory.mktemp("tiktoken-cache")
    r50k = b"".join(base64.b64encode(t) + b" %d\n" % i
                    for t, i in sorted(gpt2_ranks().items(), key=lambda kv: kv[1]))
    (d / hashlib.sha1((BLOB + "r50k_base.tiktoken").encode()).hexdigest()).write_bytes(r50k)
    for name in ("cl100k_base", "o200k_base"):
        data = gzip.decompress((DATA / f"{name}.tiktoken.gz").read_bytes())
        (d / hashlib.sha1((BLOB + f"{name}.tiktoken").encode()).hexdigest()).write_bytes(data)
    return d


def tiktoken_ids(name, cache, text):
    tiktoken = pytest.importorskip("tiktoken")
    old = os.environ.get("TIKTOKEN_CACHE_DIR")
    os.environ["TIKTOKEN_CACHE_DIR"] = str(cache)
    try:
        enc = tiktoken.get_encoding(ORACLE[name])
    finally:
        if old is None:
            del os.environ["TIKTOKEN_CACHE_DIR"]
        else:
            os.environ["TIKTOKEN_CACHE_DIR"] = old
    return enc.encode(text, allowed_special="all") + [enc.eot_token]


def encode_sample(mod, tokenizer, src, tmp_path, env):
    """`bpe encode -t TOKENIZER src` with the end-of-text token allowed: the ids written."""
    out = tmp_path / "ids.bin"
    result = cli(mod, ["encode", "-t", tokenizer, src, "-o", out, "--eot", EOT,
                       "--allowed-special", "all", "-q"], env=env)
    assert_ok(result)
    meta = json.loads((tmp_path / "ids.bin.json").read_text())
    return read_ids(out, meta["dtype"])


@pytest.mark.parametrize("name", ["gpt2", "cl100k_base", "o200k_base"])
def test_encode_with_a_named_encoding(mod, name, tiktoken_cache, tmp_path):
    src = tmp_path / "sample.txt"
    src.write_text(SAMPLE, encoding="utf-8", newline="")
    env = tool_env(mod, TIKTOKEN_CACHE_DIR=str(tiktoken_cache), BPE_OFFLINE="1")
    assert encode_sample(mod, name, src, tmp_path, env) == \
        tiktoken_ids(name, tiktoken_cache, SAMPLE)
    result = cli(mod, ["info", name], env=env)
    assert_ok(result)
    assert EOT in result.stdout


@pytest.mark.parametrize("name", ["cl100k_base", "o200k_base"])
def test_encode_with_a_gzipped_tiktoken_file(mod, name, tiktoken_cache, tmp_path):
    src = tmp_path / "sample.txt"
    src.write_text(SAMPLE, encoding="utf-8", newline="")
    ranks = tmp_path / f"{name}.tiktoken.gz"
    ranks.write_bytes((DATA / f"{name}.tiktoken.gz").read_bytes())
    env = tool_env(mod, TIKTOKEN_CACHE_DIR="", BPE_OFFLINE="1")
    assert encode_sample(mod, ranks, src, tmp_path, env) == \
        tiktoken_ids(name, tiktoken_cache, SAMPLE)


def test_gpt2_vocab_json_alone_says_which_files(mod, tmp_path):
    result = cli(mod, ["encode", "-t", DATA / "gpt2_vocab.json", DATA / "german.txt", "-o",
                       tmp_path / "x.bin"])
    line = assert_one_line_error(result, "bpe", "merges.txt")
    assert "'model'" not in line
    assert not (tmp_path / "x.bin").exists()


def test_unknown_name_is_one_line(mod, tmp_path):
    result = cli(mod, ["encode", "-t", "o300k_base", DATA / "german.txt", "-o",
                       tmp_path / "x.bin"], cwd=tmp_path)
    assert_one_line_error(result, "bpe", "o300k_base")


# ---- small items ----------------------------------------------------------------------------


def test_workers_help_says_threads(mod):
    for command in ("train", "encode"):
        result = cli(mod, [command, "--help"])
        assert_ok(result)
        flat = " ".join(result.stdout.split())
        at = flat.rindex("--workers")  # the option's help, after the usage line
        assert "thread" in flat[at:at + 200], flat[at:at + 200]


@pytest.mark.parametrize("command", ["train", "encode"])
def test_stdin_warnings_name_stdin(mod, command, tmp_path):
    tok = mod.Tokenizer.from_merges([(b"a", b"b")])
    tok.save(str(tmp_path / "tok.bpe"))
    args = (["train", "-", "--vocab-size", 260, "-o", tmp_path / "t.bpe"] if command == "train"
            else ["encode", "-t", tmp_path / "tok.bpe", "-", "-o", tmp_path / "ids.bin"])
    env = tool_env(mod)
    result = subprocess.run([*map(str, cli_prefix(mod)), *map(str, args), "-q"],
                            input=b"abc \xff\xfe def abc abc\n" * 3, capture_output=True,
                            env=env, timeout=300)
    assert result.returncode == 0, result.stderr
    err = result.stderr.decode()
    lines = err.splitlines()
    assert len(lines) == 1 and "invalid UTF-8" in lines[0], err
    assert "<stdin>" in lines[0] and "bpe-stdin" not in lines[0], lines[0]


def cli_prefix(mod):
    if mod.__name__ == "bpe_fallback":
        return [sys.executable, "-m", "bpe_fallback"]
    from test_cli import BPE

    if BPE is None:
        pytest.skip("the bpe command is not installed")
    return [BPE]


# ---- the summary in bounded memory ----------------------------------------------------------

PEAK_OF_CHILD = textwrap.dedent("""
    import resource, subprocess, sys
    code = subprocess.run(sys.argv[1:]).returncode
    print(resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss // 1024)
    sys.exit(code)
""")


def english_like(path, size, seed=23):
    """`size` bytes of sentences of corpus.en's words, in a random order (not a repeated text:
    its pre-tokens are as many as real English text has)."""
    words = read_data("corpus.en").split()
    rng = random.Random(seed)
    with open(path, "w", encoding="utf-8") as f:
        written = 0
        while written < size:
            line = " ".join(rng.choices(words, k=rng.randint(5, 30)))
            line += "\n" if rng.random() < 0.8 else f" {rng.randint(0, 10**6)}.\n\n"
            written += f.write(line)


@pytest.mark.slow
def test_summary_peak_is_bounded(mod, tmp_path):
    size = (30 << 20) if mod.BACKEND == "cython" else (6 << 20)
    corpus = tmp_path / "english.txt"
    english_like(corpus, size)
    peaks = {}
    for name, extra in (("quiet", ["-q"]), ("summary", [])):
        args = [*cli_prefix(mod), "train", corpus, "--vocab-size", 2000, "-o",
                tmp_path / f"{name}.bpe", *extra]
        result = run_tool([sys.executable, "-c", PEAK_OF_CHILD], args, mod=mod,
                          env=dict(steady_malloc_env(), **{
                              k: v for k, v in tool_env(mod).items()
                              if k in ("PYTHONPATH", "BPE_BACKEND")}))
        assert result.returncode == 0, result.stderr
        peaks[name] = int(result.stdout.splitlines()[-1])
    assert (tmp_path / "quiet.bpe").read_bytes() == (tmp_path / "summary.bpe").read_bytes()
    assert peaks["summary"] <= 1.5 * peaks["quiet"], peaks

