"""Tokenizer.encode_files: a corpus to one flat array of ids and a JSON sidecar, both backends.

The oracle is encode() of each document (a text file, or a JSON record's text). Files are cut
into tiny chunks spread over several workers, so that every cut, the workers (threads of this
process in the compiled backend, whose core encodes without the GIL; worker processes in the
pure-Python one) and the writing in order are exercised; killing and interrupting run on real
subprocesses."""

import array
import hashlib
import json
import os
import signal
import subprocess
import sys
import textwrap
import time

import pytest

from helpers import (
    DATA,
    EOT,
    PEAK_MB_SOURCE,
    TREE_PEAK_SOURCE,
    read_data,
    steady_malloc_env,
)

TYPECODE = {"uint16": "H", "uint32": "I" if array.array("I").itemsize == 4 else "L"}


def read_ids(path, dtype):
    ids = array.array(TYPECODE[dtype])
    ids.frombytes(open(path, "rb").read())
    if sys.byteorder == "big":
        ids.byteswap()
    return ids.tolist()


def expected(tok, texts, eot=None, **policy):
    ids, starts = [], []
    for text in texts:
        starts.append(len(ids))
        ids += tok.encode(text, **policy) + ([eot] if eot is not None else [])
    return ids, starts


@pytest.fixture(scope="module")
def corpus(tmp_path_factory):
    """The test corpora, a variant the cut rules cut often (short lines, CRLF, trailing
    spaces, several scripts, special tokens), and an empty file: {name: path}."""
    d = tmp_path_factory.mktemp("corpus")
    lines = read_data("corpus.en").splitlines()[:1200]
    out = []
    for i, line in enumerate(lines):
        line = line.rstrip(" .")
        if i % 37 == 0:
            line += EOT
        elif i % 11 == 0:
            line += "   "
        elif i % 13 == 0:
            line += " \u65e5\u672c\u8a9e caf\u00e9 \U0001f389"
        out.append(line + ("\r\n" if i % 5 == 0 else "\n") + ("\n\n" if i % 17 == 0 else ""))
    files = {}
    for name in ("corpus.en", "tinystories_sample.txt", "german.txt", "address.txt"):
        files[name] = DATA / name
    files["variant.txt"] = d / "variant.txt"
    files["variant.txt"].write_text("".join(out), encoding="utf-8", newline="")
    files["empty.txt"] = d / "empty.txt"
    files["empty.txt"].write_bytes(b"")
    return files


def texts_of(paths):
    return [open(p, "rb").read().decode("utf-8") for p in paths]


def let_workers_start(seconds=1.5):
    """A progress callback that holds the writer back at its first call, so that worker
    processes start and take jobs too (this process encodes alongside them), or the worker
    threads run ahead of the writer as far as they may."""
    state = {"calls": 0}

    def report(phase, done, total):
        assert phase == "encode" and 0 <= done <= total
        state["calls"] += 1
        if state["calls"] == 2:
            time.sleep(seconds)

    return report


POLICIES = {"all": {"allowed_special": "all"},  # split on the specials: lists of ids
            "ordinary": {"disallowed_special": ()}}  # the core's packed ids, no list


@pytest.mark.parametrize("policy", sorted(POLICIES))
@pytest.mark.parametrize("pattern", ["gpt2", "cl100k", "words", r"\w+|[^\w\s]+|\s+"])
def test_ids_equal_encode_of_each_file(mod, trained, corpus, tmp_path, pattern, policy):
    tok = trained(pattern)
    paths = [corpus[n] for n in ("variant.txt", "corpus.en", "empty.txt", "tinystories_sample.txt",
                                 "german.txt", "address.txt")]
    eot = tok.special_tokens[EOT]
    want, starts = expected(tok, texts_of(paths), eot, **POLICIES[policy])
    out = tmp_path / "train.bin"
    for workers, chunk_size in ((1, 64), (3, 700), (4, 97)):
        if workers == 4 and mod.BACKEND == "python":
            continue  # processes: slow to start, and (3, 700) runs them
        report = let_workers_start() if workers == 3 and pattern == "gpt2" else None
        meta = tok.encode_files(paths, out, eot=EOT, workers=workers, chunk_size=chunk_size,
                                progress=report or False, **POLICIES[policy])
        assert read_ids(out, "uint16") == want, (workers, chunk_size)
        assert meta["count"] == len(want) and meta["documents"] == starts
        assert json.loads((tmp_path / "train.bin.json").read_text()) == meta
    assert meta["dtype"] == "uint16" and meta["byteorder"] == "little" and meta["eot"] == eot
    tok.save(str(tmp_path / "tok.bpe"))
    assert (
        meta["tokenizer_sha256"] == hashlib.sha256((tmp_path / "tok.bpe").read_bytes()).hexdigest()
    )
    assert [(i["path"], i["start"], i["end"]) for i in meta["inputs"]] == [
        (str(p), 0, os.path.getsize(p)) for p in paths]
    assert [i["ids_start"] for i in meta["inputs"]] == starts
    assert sum(i["ids_count"] for i in meta["inputs"]) == len(want)


def test_gpt2_ids_equal_tiktoken(mod, gpt2, corpus, tmp_path):
    tiktoken = pytest.importorskip("tiktoken")
    from helpers import gpt2_tiktoken

    enc = gpt2_tiktoken()
    paths = [corpus["corpus.en"], corpus["variant.txt"]]
    meta = gpt2.encode_files(paths, tmp_path / "gpt2.bin", eot=EOT, allowed_special="all",
                             workers=2, chunk_size=4096, progress=let_workers_start())
    want = []
    for text in texts_of(paths):
        want += enc.encode(text, allowed_special="all") + [enc.eot_token]
    assert read_ids(tmp_path / "gpt2.bin", meta["dtype"]) == want
    assert tiktoken  # the oracle was importable


def test_numpy_reads_it(mod, trained, corpus, tmp_path):
    np = pytest.importorskip("numpy")
    tok = trained("gpt2")
    meta = tok.encode_files([corpus["corpus.en"]], tmp_path / "t.bin")
    ids = np.memmap(tmp_path / "t.bin", dtype=meta["dtype"], mode="r")
    assert ids.dtype == np.uint16 and ids.tolist() == tok.encode(read_data("corpus.en"))


def test_dtype(mod, tmp_path):
    np = pytest.importorskip("numpy")
    src = tmp_path / "a.txt"
    src.write_text("hi there, hi!\n" * 50)
    big = mod.Tokenizer.from_merges([(b"h", b"i")], special_tokens={"<big>": 70000})
    small = mod.Tokenizer.from_merges([(b"h", b"i")], special_tokens={"<s>": 65535})
    meta = big.encode_files([src], tmp_path / "big.bin", eot="<big>")
    assert meta["dtype"] == "uint32"
    want = big.encode(src.read_text()) + [70000]
    assert np.memmap(tmp_path / "big.bin", dtype="<u4", mode="r").tolist() == want
    assert small.encode_files([src], tmp_path / "s.bin", eot=65535)["dtype"] == "uint16"
    assert read_ids(tmp_path / "s.bin", "uint16")[-1] == 65535
    for dtype in ("uint32", np.uint32, np.dtype("uint32")):
        assert small.encode_files([src], tmp_path / "s32.bin", dtype=dtype)["dtype"] == "uint32"
        assert read_ids(tmp_path / "s32.bin", "uint32") == small.encode(src.read_text())
    with pytest.raises(ValueError, match="uint16 cannot hold ids up to 70000"):
        big.encode_files([src], tmp_path / "x.bin", dtype="uint16")
    for bad in ("int8", "float32", "u2"):
        with pytest.raises(ValueError, match="dtype"):
            small.encode_files([src], tmp_path / "x.bin", dtype=bad)
    assert not (tmp_path / "x.bin").exists()


def jsonl_records():
    docs = []
    lines = read_data("corpus.en").splitlines(keepends=True)[:600]
    docs += ["".join(lines[i:i + 7]) for i in range(0, len(lines), 7)]
    docs += [read_data("german.txt"), "", "emoji \ud83d\ude00 pair, lone \ud800 half",
             f"a{EOT}b <|pad|>", "line\u2028sep\r\n\n"]
    return docs


@pytest.mark.parametrize("policy", sorted(POLICIES))
@pytest.mark.parametrize("name", ["part.jsonl", "part.ndjson", "forced.txt"])
def test_json_lines(mod, trained, tmp_path, name, policy):
    tok = trained("gpt2")
    docs = jsonl_records()
    path = tmp_path / name
    with open(path, "w", encoding="utf-8") as f:
        for i, doc in enumerate(docs):
            record = {"id": i, "text": doc, "meta": {"n": len(doc)}}
            f.write(json.dumps(record, ensure_ascii=i % 2 == 0) + "\n")
            if i % 9 == 0:
                f.write("\n  \n")  # blank lines are no records
    eot = tok.special_tokens[EOT]
    want, starts = expected(tok, docs, eot, **POLICIES[policy])
    meta = tok.encode_files([path], tmp_path / "j.bin", eot=EOT,
                            jsonl=True if name.endswith(".txt") else None, chunk_size=300,
                            workers=2, progress=let_workers_start(1.0), **POLICIES[policy])
    assert read_ids(tmp_path / "j.bin", "uint16") == want
    assert meta["documents"] == starts and len(starts) == len(docs)


def test_json_lines_field_and_text_mode(mod, trained, tmp_path):
    tok = trained("gpt2")
    path = tmp_path / "a.jsonl"
    path.write_text('{"body": "hello hello world", "text": 1}\n{"body": "hi"}\n')
    tok.encode_files([path], tmp_path / "a.bin", text_field="body")
    assert read_ids(tmp_path / "a.bin", "uint16") == tok.encode("hello hello world") + tok.encode(
        "hi"
    )
    # jsonl=False: the file is one text document like any other
    tok.encode_files([path], tmp_path / "b.bin", jsonl=False)
    assert read_ids(tmp_path / "b.bin", "uint16") == tok.encode(path.read_text())


@pytest.mark.parametrize("content, message", [
    ('{"text": "ok"}\n{"text": "x"\n', r"a\.jsonl: the line at byte 15 is not JSON"),
    ('{"text": "ok"}\n["a", "list"]\n', r"the line at byte 15 is a JSON list, not an object"),
    ('{"text": "ok"}\n{"body": "x"}\n', r"the line at byte 15 has no string field 'text'"),
    ('{"text": 12}\n', r"the line at byte 0 has no string field 'text' \(it is 12\)"),
    (b'{"text": "ok"}\n{"text": "\xff"}\n', r"the line at byte 15 is not UTF-8"),
])
def test_json_lines_errors(mod, trained, tmp_path, content, message):
    path = tmp_path / "a.jsonl"
    path.write_bytes(content if isinstance(content, bytes) else content.encode())
    with pytest.raises(ValueError, match=message):
        trained("gpt2").encode_files([path], tmp_path / "a.bin")
    assert sorted(os.listdir(tmp_path)) == ["a.jsonl"]  # nothing written


def test_separators_and_documents(mod, trained, corpus, tmp_path):
    tok = trained("gpt2")
    paths = [corpus["german.txt"], corpus["empty.txt"], corpus["address.txt"]]
    texts = texts_of(paths)
    meta = tok.encode_files(paths, tmp_path / "a.bin")  # no separator
    assert read_ids(tmp_path / "a.bin", "uint16") == expected(tok, texts)[0]
    assert meta["eot"] is None and meta["documents"] == expected(tok, texts)[1]
    pad = tok.special_tokens["<|pad|>"]
    meta = tok.encode_files(paths, tmp_path / "b.bin", eot=pad)  # an id works too
    ids = read_ids(tmp_path / "b.bin", "uint16")
    assert ids == expected(tok, texts, pad)[0] and ids.count(pad) == 3
    assert [ids[s - 1] for s in meta["documents"][1:]] == [pad, pad]
    for bad, error in (("<|nope|>", ValueError), (10 ** 9, ValueError), (1.5, TypeError)):
        with pytest.raises(error, match="eot"):
            tok.encode_files(paths, tmp_path / "c.bin", eot=bad)


def test_special_token_policy(mod, trained, corpus, tmp_path):
    tok = trained("gpt2")
    path = corpus["tinystories_sample.txt"]  # holds <|endoftext|>
    text = texts_of([path])[0]
    with pytest.raises(ValueError, match="disallowed special token '<\\|endoftext\\|>'"):
        tok.encode_files([path], tmp_path / "x.bin", chunk_size=100, workers=2)
    assert not os.listdir(tmp_path)
    tok.encode_files([path], tmp_path / "a.bin", allowed_special={EOT})
    assert read_ids(tmp_path / "a.bin", "uint16") == tok.encode(text, allowed_special={EOT})
    tok.encode_files([path], tmp_path / "o.bin", disallowed_special=())
    assert read_ids(tmp_path / "o.bin", "uint16") == tok.encode_ordinary(text)


@pytest.mark.parametrize("kind", ["text", "jsonl"])
def test_an_error_in_a_later_chunk(mod, trained, tmp_path, kind):
    """A disallowed special token (or a bad record) in the third chunk of five, with several
    workers: the ValueError encode() raises (the first in file order, though a later chunk
    has one too), nothing written, and no thread left running."""
    import threading

    tok = trained("gpt2")
    lines = [f"line {i} of some ordinary text, said the cat.\n" for i in range(200)]
    if kind == "text":
        lines[100] = f"here comes {EOT} in the middle\n"
        lines[180] = "and <|pad|> later\n"
        path = tmp_path / "a.txt"
        path.write_text("".join(lines))
        size = path.stat().st_size
        message = "disallowed special token '<\\|endoftext\\|>'"
    else:
        records = [json.dumps({"text": line}) + "\n" for line in lines]
        records[100] = '{"text": "broken\n'
        records[180] = '["a list"]\n'
        path = tmp_path / "a.jsonl"
        path.write_text("".join(records))
        size = path.stat().st_size
        message = f"a\\.jsonl: the line at byte {len(''.join(records[:100]).encode())} is not JSON"
    chunks = mod.file_cuts(str(path), size // 5, pattern=tok.pattern,
                           special_tokens=list(tok.special_tokens), jsonl=kind == "jsonl")
    assert len(chunks) == 5 and chunks[2][0] < size * 100 // 200 < chunks[2][1]
    def ours():  # live threads of this library (not those the stdlib's process pools keep a while)
        return {t for t in threading.enumerate()
                if t.is_alive() and t.name != "QueueFeederThread"
                and not type(t).__module__.startswith(("concurrent", "multiprocessing"))}

    before = ours()
    for workers in (1, 2, 4):
        with pytest.raises(ValueError, match=message):
            tok.encode_files([path], tmp_path / "x.bin", workers=workers, chunk_size=size // 5)
        assert sorted(os.listdir(tmp_path)) == [path.name], workers
        # worker threads joined, no starter thread left (one alive before may have ended)
        assert not ours() - before, workers
    with pytest.raises(ValueError, match=message):  # what encode() or read_jsonl() says
        if kind == "text":
            tok.encode(path.read_text())
        else:
            list(mod.read_jsonl(path.read_bytes(), name=str(path)))
    # the same file encodes where the policy lets the special tokens through
    if kind == "text":
        tok.encode_files([path], tmp_path / "x.bin", workers=2, chunk_size=size // 5,
                         allowed_special="all")
        assert read_ids(tmp_path / "x.bin", "uint16") == tok.encode(path.read_text(),
                                                                     allowed_special="all")


def test_threads_share_one_tokenizer(mod, trained, corpus, tmp_path):
    """encode_files and encode on one tokenizer from several threads at once (each worker
    thread has its own cache; encode's are taken per call): the same ids as one at a time."""
    from concurrent.futures import ThreadPoolExecutor

    tok = trained("gpt2")
    paths = [corpus["variant.txt"], corpus["tinystories_sample.txt"], corpus["german.txt"]]
    texts = texts_of(paths)
    runs = [({"allowed_special": "all"}, 2, 300), ({"disallowed_special": ()}, 3, 500),
            ({"allowed_special": {EOT}}, 2, 1000), ({"disallowed_special": ()}, 1, 800)]

    def run(k):
        policy, workers, chunk_size = runs[k % len(runs)]
        out = tmp_path / f"t{k}.bin"
        tok.encode_files(paths, out, eot=EOT, workers=workers, chunk_size=chunk_size, **policy)
        encoded = [tok.encode(t, **policy) for t in texts]
        return read_ids(out, "uint16"), encoded

    with ThreadPoolExecutor(4) as pool:
        results = list(pool.map(run, range(8 if mod.BACKEND == "cython" else 4)))
    for k, (ids, encoded) in enumerate(results):
        policy = runs[k % len(runs)][0]
        want = expected(tok, texts, tok.special_tokens[EOT], **policy)[0]
        assert ids == want, k
        assert encoded == [tok.encode(t, **policy) for t in texts], k


def test_byte_ranges_from_file_cuts(mod, trained, corpus, tmp_path):
    tok = trained("gpt2")
    path = str(corpus["variant.txt"])
    ranges = mod.file_cuts(path, 2000, pattern=tok.pattern, special_tokens=list(tok.special_tokens))
    assert len(ranges) > 10 and ranges[0][0] == 0 and ranges[-1][1] == os.path.getsize(path)
    assert all(a[1] == b[0] for a, b in zip(ranges, ranges[1:]))
    whole = tok.encode_files([path], tmp_path / "whole.bin", eot=EOT, allowed_special="all")
    parts = tok.encode_files([(path, a, b) for a, b in ranges], tmp_path / "parts.bin", eot=EOT,
                             allowed_special="all")
    assert (tmp_path / "parts.bin").read_bytes() == (tmp_path / "whole.bin").read_bytes()
    assert parts["documents"] == whole["documents"] == [0]
    # the ranges one by one, concatenated: the same ids
    joined = b""
    for a, b in ranges:
        tok.encode_files([(path, a, b)], tmp_path / "one.bin", eot=EOT, allowed_special="all")
        joined += (tmp_path / "one.bin").read_bytes()
    assert joined == (tmp_path / "whole.bin").read_bytes()
    a, b = ranges[3]
    with pytest.raises(ValueError, match="not a place where the file may be cut"):
        tok.encode_files([(path, a + 1, b)], tmp_path / "x.bin")
    with pytest.raises(ValueError, match="not within the file"):
        tok.encode_files([(path, 0, os.path.getsize(path) + 1)], tmp_path / "x.bin")


def test_file_cuts_of_an_open_file_and_json_lines(mod, tmp_path):
    path = tmp_path / "a.jsonl"
    path.write_text(
        "".join(json.dumps({"text": f"record {i} " * (i % 7)}) + "\n" for i in range(300))
    )
    with open(path, "rb") as f:
        ranges = mod.file_cuts(f, 500, jsonl=True)
    data = path.read_bytes()
    assert len(ranges) > 5 and all(data[b - 1:b] == b"\n" for _, b in ranges)
    assert b"".join(data[a:b] for a, b in ranges) == data
    assert mod.file_cuts(str(path), 500, pattern=r"\w+") == [(0, len(data))]  # custom: no cut
    for bad in (0, -5, 2.5):
        with pytest.raises((ValueError, TypeError)):
            mod.file_cuts(str(path), bad)


def test_bad_arguments(mod, trained, corpus, tmp_path):
    tok = trained("gpt2")
    src = corpus["german.txt"]
    with pytest.raises(ValueError, match="no such file"):
        tok.encode_files([tmp_path / "missing.txt"], tmp_path / "x.bin")
    with pytest.raises(ValueError, match="is not a regular file"):
        tok.encode_files([tmp_path], tmp_path / "x.bin")
    with pytest.raises(ValueError, match="is a directory"):
        tok.encode_files([src], tmp_path)
    with pytest.raises(ValueError, match="no directory"):
        tok.encode_files([src], tmp_path / "no" / "x.bin")
    with pytest.raises(ValueError, match="is the input"):
        tok.encode_files([src], src)
    with pytest.raises(ValueError, match="workers"):
        tok.encode_files([src], tmp_path / "x.bin", workers=0)
    with pytest.raises(TypeError):
        tok.encode_files([src], tmp_path / "x.bin", progress="yes")
    with pytest.raises(TypeError):
        tok.encode_files([42], tmp_path / "x.bin")
    assert not os.listdir(tmp_path)


def test_invalid_utf8_is_replaced_with_a_warning(mod, trained, tmp_path):
    tok = trained("gpt2")
    path = tmp_path / "bad.txt"
    path.write_bytes(b"caf\xc3\xa9 ok\n" * 50 + b"bad \xff\xfe bytes\n" + b"more text here\n" * 50)
    with pytest.warns(UserWarning, match=r"bad\.txt: invalid UTF-8 at byte 454"):
        tok.encode_files([path], tmp_path / "b.bin", chunk_size=64)
    text = path.read_bytes().decode("utf-8", "replace")
    assert read_ids(tmp_path / "b.bin", "uint16") == tok.encode(text)


def test_progress(mod, trained, corpus, tmp_path):
    tok = trained("gpt2")
    calls = []
    tok.encode_files([corpus["corpus.en"]], tmp_path / "p.bin", chunk_size=10000,
                     progress=lambda *a: calls.append(a))
    size = os.path.getsize(corpus["corpus.en"])
    assert calls[0] == ("encode", 0, size) and calls[-1] == ("encode", size, size)
    assert [c[1] for c in calls] == sorted(c[1] for c in calls) and len(calls) > 10


# ---- durability ---------------------------------------------------------------------------

ENCODER = textwrap.dedent(
    """
    import faulthandler, importlib, sys, time
    faulthandler.dump_traceback_later(50, exit=True)  # a hang: every thread's stack, then exit
    mod = importlib.import_module(sys.argv[1])
    src, out, workers = sys.argv[2], sys.argv[3], int(sys.argv[4])
    tok = mod.Tokenizer.from_merges([(b"t", b"h"), (b"th", b"e")], special_tokens=["<s>"])

    def report(phase, done, total):
        if done > total // 10:
            print("encoding", flush=True)
            time.sleep(0.05)  # seconds more to run: a loaded machine's signal comes meanwhile

    if __name__ == "__main__":
        tok.encode_files([src], out, workers=workers, chunk_size=1 << 16, progress=report)
        print("finished", flush=True)
    """
)


@pytest.fixture(scope="module")
def big_file(tmp_path_factory):
    path = tmp_path_factory.mktemp("big") / "big.txt"
    block = (DATA / "corpus.en").read_bytes()
    with open(path, "wb") as f:
        for _ in range(60):  # 8 MB
            f.write(block)
    return path


def _start(mod, tmp_path, src, out, workers):
    script = tmp_path / "encoder.py"
    script.write_text(ENCODER)
    return subprocess.Popen([sys.executable, str(script), mod.__name__, str(src), str(out),
                             str(workers)], stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                            text=True, start_new_session=True)


@pytest.mark.skipif(not os.path.isdir("/proc"), reason="POSIX signals and /proc")
@pytest.mark.parametrize("how", ["SIGKILL", "Ctrl-C"])
def test_killed_or_interrupted_leaves_the_old_files(mod, tmp_path, big_file, how):
    out = tmp_path / "out" / "train.bin"
    out.parent.mkdir()
    small = tmp_path / "small.txt"
    small.write_text("the theme there\n")
    tok = mod.Tokenizer.from_merges([(b"t", b"h"), (b"th", b"e")], special_tokens=["<s>"])
    old = tok.encode_files([small], out)
    old_bin, old_side = out.read_bytes(), (tmp_path / "out" / "train.bin.json").read_text()
    proc = _start(mod, tmp_path, big_file, out, 2)
    try:
        line = proc.stdout.readline().strip()
        assert line == "encoding", proc.stderr.read()
        if how == "SIGKILL":
            os.killpg(proc.pid, signal.SIGKILL)
        else:
            os.killpg(proc.pid, signal.SIGINT)  # what a terminal sends on Ctrl-C
        out_text, err = proc.communicate(timeout=60)
    finally:
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGKILL)
    assert "Thread 0x" not in err, err  # no thread left waiting (faulthandler: a hang)
    assert "finished" not in out_text
    if how == "Ctrl-C":
        assert "KeyboardInterrupt" in err
    # the old array and its sidecar, whole; no temporary file left behind
    assert sorted(os.listdir(out.parent)) == ["train.bin", "train.bin.json"]
    assert out.read_bytes() == old_bin and json.loads(old_side) == old
    assert (tmp_path / "out" / "train.bin.json").read_text() == old_side
    deadline = time.time() + 10
    while _group(proc.pid) and time.time() < deadline:
        time.sleep(0.1)
    assert _group(proc.pid) == [], "worker processes outlived their parent"


def _group(pgid):
    found = []
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            try:
                with open(f"/proc/{entry}/stat") as f:
                    fields = f.read().rsplit(")", 1)[1].split()
            except OSError:
                continue
            if int(fields[2]) == pgid and fields[0] != "Z":
                found.append(int(entry))
    return found


def test_a_worker_that_dies_is_an_error(mod, tmp_path, big_file):
    """A worker killed (as the OOM killer would) while the pool runs: a RuntimeError saying
    so, not a hang, and nothing written."""
    if mod.BACKEND == "cython":
        pytest.skip("the compiled backend's workers are threads (see the memory test)")
    script = tmp_path / "die.py"
    script.write_text(TREE_PEAK_SOURCE + textwrap.dedent(
        """
        import faulthandler, importlib, os, signal, sys, time
        faulthandler.dump_traceback_later(100, exit=True)  # a hang: every thread's stack, then exit
        mod = importlib.import_module(sys.argv[1])
        tok = mod.Tokenizer.from_merges([(b"t", b"h")])
        calls = []

        def report(phase, done, total):
            calls.append(done)
            if len(calls) == 2:
                time.sleep(1.5)  # the workers start and take jobs
            if len(calls) == 3:
                kids = _children()
                for worker in kids.get(os.getpid(), []):  # the worker processes
                    try:
                        os.kill(worker, signal.SIGKILL)
                    except ProcessLookupError:  # the pool ended it after the first died
                        pass

        if __name__ == "__main__":
            try:
                tok.encode_files([sys.argv[2]], sys.argv[3], workers=3, chunk_size=1 << 15,
                                 progress=report)
            except RuntimeError as e:
                print("error:", e)
        """))
    out = tmp_path / "x.bin"
    run = subprocess.run([sys.executable, str(script), mod.__name__, str(big_file), str(out)],
                         capture_output=True, text=True, timeout=120)
    assert "error: encode_files: a worker process died" in run.stdout, run.stderr
    assert not out.exists()


MEMORY = PEAK_MB_SOURCE + TREE_PEAK_SOURCE + textwrap.dedent(
    """
    import importlib, sys
    mod = importlib.import_module(sys.argv[1])
    tok = mod.Tokenizer.train(open(sys.argv[2], encoding="utf-8").read(200000), 600)

    if __name__ == "__main__":
        with TreePeak() as workers:
            meta = tok.encode_files([sys.argv[2]], sys.argv[3], workers=2, chunk_size=1 << 18)
        print(meta["count"], peak_mb(), workers.peak_mb, len(workers.pids))
    """
)


@pytest.mark.slow
def test_memory_follows_the_chunks_not_the_corpus(mod, tmp_path):
    """Encoding 16 MB or 80 MB with chunks of 256 KB: the peak memory of this process and of the
    workers is the same (within a quarter of the 64 MB more text; what memory followed the
    corpus would hold is more: its text, or its ids at 2 bytes a token).  The children run
    with malloc's mmap threshold fixed (steady_malloc_env): CI once saw +8 MB of heap
    fragmentation between 16 and 48 MB without it.  (Both are large enough for a worker
    process to take jobs: on a small input this process is done before it starts.)  The
    compiled backend's workers are threads of this process: it starts no process."""
    block = (DATA / "corpus.en").read_text(encoding="utf-8")
    script = tmp_path / "measure.py"
    script.write_text(MEMORY)
    peaks = {}
    for n in (120, 600):
        path = tmp_path / f"x{n}.txt"
        path.write_text(block * n, encoding="utf-8")
        out = subprocess.run([sys.executable, str(script), mod.__name__, str(path),
                              str(tmp_path / f"x{n}.bin")], capture_output=True, text=True,
                             timeout=300, env=steady_malloc_env())
        assert out.returncode == 0, out.stderr
        count, parent, workers, processes = map(int, out.stdout.split())
        if mod.BACKEND == "cython":
            assert processes == 0  # threads
        else:
            assert processes >= 1  # the worker was seen
        assert count * 2 == os.path.getsize(tmp_path / f"x{n}.bin")
        peaks[n] = (parent, workers)
    growth = 480 * len(block.encode()) / 2 ** 20  # MB more text
    assert peaks[600][0] - peaks[120][0] < 0.25 * growth, peaks
    assert peaks[600][1] - peaks[120][1] < 0.25 * growth, peaks


LOCKED = textwrap.dedent(
    """
    import importlib, sys, threading
    mod = importlib.import_module(sys.argv[1])
    stop = threading.Event()

    def busy():  # builds tokenizers (taking and releasing locks) all the time; the short
        while not stop.wait(0.0001):  # pauses leave the main thread a share of the GIL
            mod.Tokenizer.from_merges([(b"a", b"b"), (b"ab", b"c")], special_tokens=["<s>"])
            mod.count_pretokens("some text, some more text")

    if __name__ == "__main__":
        threads = [threading.Thread(target=busy) for _ in range(3)]
        for t in threads:
            t.start()
        try:
            for k in range(3):
                tok = mod.Tokenizer.train_files([sys.argv[2]], 300, workers=2, chunk_size=20000)
                tok.encode_files([sys.argv[2]], sys.argv[3], workers=2, chunk_size=20000)
        finally:
            stop.set()
        print("done")
    """
)


@pytest.mark.slow
def test_workers_start_while_other_threads_hold_locks(mod, tmp_path):
    """Worker processes are not forked from this (multi-threaded) process: no inherited
    lock can hang them."""
    script = tmp_path / "locked.py"
    script.write_text(LOCKED)
    run = subprocess.run([sys.executable, str(script), mod.__name__, str(DATA / "corpus.en"),
                          str(tmp_path / "x.bin")], capture_output=True, text=True, timeout=180)
    assert run.stdout.strip() == "done", run.stderr
