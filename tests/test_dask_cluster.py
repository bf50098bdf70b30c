"""train_files(dask=...) and encode_files(dask=...), and `bpe train/encode --dask`: on a
Dask cluster the merges are those of train_files on one machine and the arrays and sidecars
are byte for byte those of encode_files; a worker killed mid-run (SIGKILL) is retried by
Dask with the same result, or the run fails with one error and publishes nothing.

Needs dask[distributed] (`pip install bpe[dask]`); skipped without it.  The quick tests
share one in-process cluster (threads); the slow ones start worker processes."""

import gzip
import json
import logging
import os
import signal
import subprocess
import sys
from pathlib import Path

import pytest

from helpers import EOT, read_data

distributed = pytest.importorskip("distributed")
pytest.importorskip("fsspec")

ROOT = Path(__file__).resolve().parent.parent
DATA = ROOT / "tests" / "data"
VOCAB = 400
CHUNK = 8192


@pytest.fixture(scope="module")
def client():
    """A cluster of two worker threads in this process: quick to start."""
    c = distributed.Client(processes=False, n_workers=2, threads_per_worker=1,
                           dashboard_address=":0", silence_logs=logging.CRITICAL)
    try:
        yield c
    finally:
        c.close()


@pytest.fixture(scope="module")
def corpus(tmp_path_factory):
    """Text files (one that the GPT-2 rule cuts into many chunks, with special tokens,
    blank-line runs and spaces before line breaks), a gzip text file, JSON lines plain
    and gzip: (text paths, jsonl paths)."""
    d = tmp_path_factory.mktemp("corpus")
    lines = read_data("corpus.en").splitlines()[:500]
    out = []
    for i, line in enumerate(lines):
        line = line[:-2] if line.endswith(" .") else line
        out.append(line + (EOT if i % 40 == 0 else "   " if i % 7 == 0 else ""))
        if i % 11 == 0:
            out.append("\n")
    (d / "variant.txt").write_text("\n".join(out) + "\n", encoding="utf-8")
    (d / "german.txt").write_bytes((DATA / "german.txt").read_bytes())
    with gzip.open(d / "stories.txt.gz", "wb") as f:
        f.write((DATA / "tinystories_sample.txt").read_bytes())
    docs = [p for p in read_data("corpus.en")[:30000].split("\n\n") if p]
    with open(d / "records.jsonl", "w", encoding="utf-8") as f:
        for i, doc in enumerate(docs[:len(docs) // 2]):
            f.write(json.dumps({"id": i, "text": doc}) + "\n")
    with gzip.open(d / "more.jsonl.gz", "wt", encoding="utf-8") as f:
        for doc in docs[len(docs) // 2:]:
            f.write(json.dumps({"text": doc}, ensure_ascii=False) + "\n")
    texts = [str(d / n) for n in ("variant.txt", "german.txt", "stories.txt.gz")]
    return texts, [str(d / "records.jsonl"), str(d / "more.jsonl.gz")]


def test_train_files_on_dask_gives_the_same_merges(mod, client, corpus):
    texts, jsonl = corpus
    seen = []
    options = dict(special_tokens=[EOT], chunk_size=CHUNK, min_frequency=3, max_token_bytes=12,
                   tie_break="rustbpe")
    tok = mod.Tokenizer.train_files(texts, VOCAB, dask=client,
                                    progress=lambda *a: seen.append(a), **options)
    ref = mod.Tokenizer.train_files(texts, VOCAB, workers=1, **options)
    assert len(ref.merges) == VOCAB - 257
    assert tok.merges == ref.merges and tok == ref
    counted = [(done, total) for phase, done, total in seen if phase == "count"]
    assert len(counted) > 5  # several tasks, reported as each finished
    assert counted[0][0] == 0 and counted[-1][0] == counted[-1][1]
    assert [d for d, _ in counted] == sorted(d for d, _ in counted)
    # JSON lines: each record one document, as train_files reads them
    tok = mod.Tokenizer.train_files(jsonl, VOCAB, dask=client, jsonl=True, chunk_size=CHUNK)
    assert tok == mod.Tokenizer.train_files(jsonl, VOCAB, jsonl=True, workers=1)


def _files(directory):
    return {p.name: p.read_bytes() for p in sorted(Path(directory).iterdir()) if p.is_file()}


def test_encode_files_on_dask_writes_the_same_files(mod, client, corpus, tmp_path):
    texts, jsonl = corpus
    tok = mod.Tokenizer.train_files(texts, VOCAB, special_tokens=[EOT, "<pad>"])
    inputs = texts + jsonl
    (tmp_path / "one").mkdir()
    (tmp_path / "dask").mkdir()
    options = dict(eot=EOT, allowed_special="all", val_fraction=0.5, seed=3)
    meta = tok.encode_files(inputs, tmp_path / "one" / "train.bin", **options)
    # a cut where no file is cut alike: the arrays do not depend on it
    seen = []
    got = tok.encode_files(inputs, tmp_path / "dask" / "train.bin", dask=client,
                           chunk_size=CHUNK // 3, progress=lambda *a: seen.append(a), **options)
    assert got == meta
    assert meta["split"]["by"] == "documents" and meta["count"] > 1000
    one, dask = _files(tmp_path / "one"), _files(tmp_path / "dask")
    assert sorted(one) == ["train.bin", "train.bin.json", "val.bin", "val.bin.json"]
    assert one == dask
    assert len(seen) > 10 and seen[-1][1] == seen[-1][2]


def test_fsspec_urls(mod, client, corpus, tmp_path):
    """memory:// (this process's, which the in-process workers share) and file:// inputs,
    and a glob, read as the local files are."""
    fsspec = pytest.importorskip("fsspec")
    texts, _ = corpus
    fs = fsspec.filesystem("memory")
    for p in texts:
        fs.pipe(f"/bpe-test/{Path(p).name}", Path(p).read_bytes())
    try:
        urls = [f"memory://bpe-test/{Path(p).name}" for p in texts]
        tok = mod.Tokenizer.train_files(urls, VOCAB, special_tokens=[EOT], dask=client,
                                        chunk_size=CHUNK)
        ref = mod.Tokenizer.train_files(texts, VOCAB, special_tokens=[EOT])
        assert tok == ref
        globbed = mod.Tokenizer.train_files([f"file://{Path(texts[0]).parent}/*.txt*"], VOCAB,
                                            special_tokens=[EOT], dask=client, chunk_size=CHUNK)
        assert globbed == mod.Tokenizer.train_files(sorted(texts), VOCAB, special_tokens=[EOT])
        ref.encode_files(texts, tmp_path / "one.bin", eot=EOT, allowed_special="all")
        ref.encode_files(urls, tmp_path / "url.bin", eot=EOT, allowed_special="all",
                         dask=client, chunk_size=CHUNK)
        assert (tmp_path / "one.bin").read_bytes() == (tmp_path / "url.bin").read_bytes()
        sidecar = json.loads((tmp_path / "url.bin.json").read_text())
        assert [i["path"] for i in sidecar["inputs"]] == urls
    finally:
        fs.rm("/bpe-test", recursive=True)


def test_a_failed_run_publishes_nothing(mod, client, corpus, tmp_path):
    """A bad record in the last input fails its task on a worker: the error is the
    library's, and the old arrays and sidecars stay, byte for byte, with nothing beside."""
    texts, _ = corpus
    tok = mod.Tokenizer.train_files(texts, VOCAB, special_tokens=[EOT])
    bad = tmp_path / "bad.jsonl"
    bad.write_text('{"text": "fine"}\n{"txt": 1}\n')
    out = tmp_path / "out"
    out.mkdir()
    tok.encode_files(texts, out / "train.bin", eot=EOT, allowed_special="all", val_fraction=0.5,
                     seed=3)
    before = _files(out)
    with pytest.raises(ValueError, match=r"bad\.jsonl: the line at byte 17 has no string field"):
        tok.encode_files(texts + [str(bad)], out / "train.bin", eot=EOT, allowed_special="all",
                         val_fraction=0.5, seed=3, dask=client, chunk_size=CHUNK)
    assert _files(out) == before


def test_errors(mod, client, corpus, tmp_path):
    texts, _ = corpus
    tok = mod.Tokenizer.train_files(texts[:1], 300, special_tokens=[EOT])
    with pytest.raises(ValueError, match="no such file"):
        mod.Tokenizer.train_files([str(tmp_path / "nothing.txt")], 300, dask=client)
    with pytest.raises(ValueError, match="no file matches"):
        mod.Tokenizer.train_files([str(tmp_path / "*.none")], 300, dask=client)
    with pytest.raises(ValueError, match="workers"):
        mod.Tokenizer.train_files(texts, 300, dask=client, workers=2)
    with pytest.raises(ValueError, match="workers"):
        tok.encode_files(texts, tmp_path / "x.bin", dask=client, workers=2)
    with pytest.raises(TypeError, match="dask must be a distributed.Client or an address"):
        mod.Tokenizer.train_files(texts, 300, dask=2)
    with pytest.raises(ValueError, match="local:N"):
        mod.Tokenizer.train_files(texts, 300, dask="local:0")
    with pytest.raises(ValueError, match="no directory"):
        tok.encode_files(texts, tmp_path / "no" / "x.bin", dask=client)
    with pytest.raises(ValueError, match="disallowed special token"):
        tok.encode_files(texts, tmp_path / "x.bin", dask=client, chunk_size=CHUNK)
    assert not (tmp_path / "x.bin").exists()


def test_dask_is_an_optional_extra(mod, monkeypatch, corpus, capsys):
    """Importing the library imports no Dask; asking for a cluster without it names the
    extra to install, in one line from the command."""
    code = ("import sys, bpe, bpe_fallback; "
            "print(sorted(m for m in ('dask', 'distributed', 'fsspec') if m in sys.modules))")
    r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=ROOT,
                       timeout=60)
    assert r.stdout == "[]\n", r.stderr
    monkeypatch.setitem(sys.modules, "distributed", None)
    with pytest.raises(ImportError, match=r"pip install bpe\[dask\]"):
        mod.Tokenizer.train_files(corpus[0], 300, dask="local:1")
    assert mod.main(["train", *corpus[0], "--vocab-size", "300", "--dask", "local:1"]) == 1
    err = capsys.readouterr().err
    assert err.startswith("bpe: error: running on a Dask cluster needs") and err.count("\n") == 1
    assert "pip install bpe[dask]" in err


def test_cli_dask_options(mod, capsys, corpus, tmp_path):
    texts, _ = corpus
    out = str(tmp_path / "t.bpe")
    assert mod.main(["train", "-", "--vocab-size", "300", "--dask", "local:1", "-o", out]) == 2
    assert "standard input" in capsys.readouterr().err
    assert mod.main(["train", *texts, "--vocab-size", "300", "--dask", "local:1", "--workers",
                     "2", "-o", out]) == 2
    assert "--workers" in capsys.readouterr().err
    assert not os.path.exists(out)


# ---- worker processes: the command line, and workers killed mid-run (slow) -------------


def _run(*args, timeout=180):
    env = dict(os.environ, PYTHONPATH=str(ROOT))
    return subprocess.run([sys.executable, "-m", "bpe_fallback", *map(str, args)],
                          capture_output=True, text=True, timeout=timeout, cwd=ROOT, env=env)


@pytest.mark.slow
def test_cli_on_a_local_cluster(corpus, tmp_path):
    texts, _ = corpus
    runs = {}
    for flags, name in ((["--dask", "local:2", "--progress"], "dask"), ([], "one")):
        runs[name] = r = _run("train", *texts, "--vocab-size", VOCAB, "--special", EOT, "-o",
                              tmp_path / f"{name}.bpe", *flags)
        assert r.returncode == 0, r.stderr
        assert ("cluster      Dask, 2 workers" in r.stdout) == bool(flags)
    # progress on stderr, as without a cluster: the bytes the workers counted, then the merges
    size = sum(os.path.getsize(p) for p in texts)  # (a gzip file's: its own bytes)
    assert f"counted {size:,} bytes in" in runs["dask"].stderr, runs["dask"].stderr
    assert f"learned {VOCAB - 257} merges" in runs["dask"].stderr
    assert (tmp_path / "dask.bpe").read_bytes() == (tmp_path / "one.bpe").read_bytes()
    for flags, name in ((["--dask", "local:2"], "dask"), ([], "one")):
        r = _run("encode", "-t", tmp_path / "one.bpe", *texts, "--eot", EOT, "--allowed-special",
                 "all", "--val-fraction", "0.5", "--seed", "3", "-o",
                 tmp_path / name / "train.bin", "-q", *flags)
        assert r.returncode == 0 and r.stdout == "" and r.stderr == "", r.stderr
    assert _files(tmp_path / "dask") == _files(tmp_path / "one")


def _slow(paths):
    """The paths as slow:// URLs: each worker's read of a chunk takes a quarter second."""
    import slow_files

    slow_files.register()
    return [f"slow://{os.path.abspath(p)}" for p in paths]


@pytest.fixture
def processes():
    """A cluster of two worker processes (each restarted by its nanny when killed)."""
    cluster = distributed.LocalCluster(n_workers=2, threads_per_worker=1, processes=True,
                                       dashboard_address=":0", silence_logs=logging.CRITICAL)
    c = distributed.Client(cluster)
    try:
        c.wait_for_workers(2, timeout=120)
        yield c
    finally:
        c.close()
        cluster.close()


def _killer(client, when):
    """A progress callback that SIGKILLs a worker process running a task, once `when` of
    the bytes are done; its `killed` lists (done, total) then, its `pid` the process."""
    def progress(phase, done, total):
        if phase not in ("count", "encode") or killed or not done or done < when * total:
            return
        # one running a task (each reads through slow://, so it is still running when the
        # signal arrives): that task is lost with it
        n, busy = max((len(keys), a) for a, keys in client.processing().items())
        if n:
            killed.append((done, total))
            progress.pid = client.run(os.getpid, workers=[busy])[busy]
            os.kill(progress.pid, signal.SIGKILL)

    killed = []
    progress.killed = killed
    return progress


@pytest.mark.slow
def test_a_worker_killed_mid_count_is_retried(processes, corpus):
    import bpe_fallback

    texts, _ = corpus
    progress = _killer(processes, 0.1)
    tok = bpe_fallback.Tokenizer.train_files(_slow(texts), VOCAB, special_tokens=[EOT],
                                             dask=processes, chunk_size=8192, progress=progress)
    done, total = progress.killed[0]
    assert done < total  # killed mid-run: the rest ran on (and was retried by) the other
    assert progress.pid not in processes.run(os.getpid).values()
    assert tok == bpe_fallback.Tokenizer.train_files(texts, VOCAB, special_tokens=[EOT])


@pytest.mark.slow
def test_a_worker_killed_mid_encode_is_retried(processes, corpus, tmp_path):
    import bpe_fallback

    texts, jsonl = corpus
    tok = bpe_fallback.Tokenizer.train_files(texts, VOCAB, special_tokens=[EOT])
    progress = _killer(processes, 0.2)
    tok.encode_files(_slow(texts + jsonl), tmp_path / "dask.bin", eot=EOT, allowed_special="all",
                     dask=processes, chunk_size=8192, progress=progress)
    assert progress.killed[0][0] < progress.killed[0][1]
    tok.encode_files(texts + jsonl, tmp_path / "one.bin", eot=EOT, allowed_special="all")
    assert (tmp_path / "dask.bin").read_bytes() == (tmp_path / "one.bin").read_bytes()


@pytest.mark.slow
def test_a_worker_killed_past_retries_fails_cleanly(corpus, tmp_path):
    """With no retry allowed, a killed worker ends the run: one RuntimeError naming the
    cluster's failure, and the old files stay as they were."""
    import dask

    import bpe_fallback

    texts, jsonl = corpus
    tok = bpe_fallback.Tokenizer.train_files(texts, VOCAB, special_tokens=[EOT])
    tok.encode_files(texts, tmp_path / "train.bin", eot=EOT, allowed_special="all")
    before = _files(tmp_path)
    with dask.config.set({"distributed.scheduler.allowed-failures": 0}):
        cluster = distributed.LocalCluster(n_workers=2, threads_per_worker=1, processes=True,
                                           dashboard_address=":0", silence_logs=logging.CRITICAL)
        client = distributed.Client(cluster)
    try:
        client.wait_for_workers(2, timeout=120)
        progress = _killer(client, 0.1)
        with pytest.raises(RuntimeError, match=r"the Dask cluster failed: KilledWorker.*nothing"):
            tok.encode_files(_slow(texts + jsonl), tmp_path / "train.bin", eot=EOT,
                             allowed_special="all", dask=client, chunk_size=8192,
                             progress=progress)
        assert progress.killed
        with pytest.raises(RuntimeError, match=r"the Dask cluster failed: KilledWorker"):
            bpe_fallback.Tokenizer.train_files(_slow(texts), VOCAB, dask=client, chunk_size=8192,
                                               progress=_killer(client, 0.1))
    finally:
        client.close()
        cluster.close()
    assert _files(tmp_path) == before
