#!/usr/bin/env python3
"""Benchmark bpe against its anchors and print a Markdown table of ratios.

    python tools/bench.py [--corpora DIR] [--only NAME ...] [--quick]

Rows (the performance targets of SPEC.md):

  train_files         bpe.Tokenizer.train_files, english.txt, vocab 32768, gpt2 pattern,
                      vs rustbpe on the same corpus and pattern: time ratio, and the ratio of
                      peak memory (each side in its own fresh subprocess)
  encode_ordinary     bpe encode_ordinary, english10.txt, GPT-2's merges, 1 thread,
                      vs tiktoken built from the same ranks, in the same process: throughput
  encode_batch        bpe encode_batch with 2 threads vs our own 1 thread (1000-line docs)
  python_train_files  bpe_fallback.Tokenizer.train_files, english10.txt, vocab 8192,
                      vs Hugging Face tokenizers' BpeTrainer

Every measurement runs in a fresh subprocess of this script (``--worker``), so a crash, a
missing function or an exception in bpe shows up as an error in its row, and peak memory is
comparable.  Peak memory is the larger of the worker's own ru_maxrss and the peak, sampled
every 0.1 s, of the summed proportional set size (PSS, /proc/PID/smaps_rollup; RSS where
that is unavailable) of the worker and all its descendants, so training in worker processes
is counted, and pages they share with the parent are not counted twice.

A missing corpus (make them with ../shared/bench/make_corpora.sh) or a missing anchor library
skips the row with a note.  `--quick` trains on english10.txt instead of english.txt and
times one repetition instead of the best of three; `--repeat N` takes the best of N runs
everywhere (each training run in a fresh process; its peak memory is the largest seen).
"""

import argparse
import json
import os
import platform
import resource
import subprocess
import sys
import threading
import time
import traceback
from pathlib import Path

GPT2_PATTERN = r"""'(?:[sdmt]|ll|ve|re)| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S)|\s+"""
EOT = "<|endoftext|>"

TOOLS = Path(__file__).resolve().parent
REPO = TOOLS.parent
DEFAULT_CORPORA = Path(os.environ.get("TMPDIR", "/tmp")) / "bpe-corpora"
GPT2_DIRS = [REPO / "tests" / "data", REPO.parent / "shared" / "data"]
RESULT_TAG = "BENCH-RESULT "

ROWS = ["train_files", "encode_ordinary", "encode_batch", "python_train_files"]
ALIASES = {
    "train": "train_files",
    "memory": "train_files",
    "encode": "encode_ordinary",
    "batch": "encode_batch",
    "python": "python_train_files",
    "pure_python": "python_train_files",
    "train_python": "python_train_files",
}

# The installed packages come first; the repository root is the last resort, so that an
# uninstalled checkout still finds bpe_fallback.py (and an in-place build of bpe).
if str(REPO) not in sys.path:
    sys.path.append(str(REPO))


# ---------------------------------------------------------------------------------------
# GPT-2 files and tiktoken ranks


def gpt2_byte_decoder():
    """GPT-2's printable-character alias of every byte, inverted: {char: byte}."""
    keep = set(range(0x21, 0x7F)) | set(range(0xA1, 0xAD)) | set(range(0xAE, 0x100))
    decoder, extra = {}, 0
    for b in range(256):
        if b in keep:
            decoder[chr(b)] = b
        else:
            decoder[chr(256 + extra)] = b
            extra += 1
    return decoder


def gpt2_ranks(vocab_json):
    """tiktoken mergeable ranks from GPT-2's vocab.json: token bytes -> id."""
    decoder = gpt2_byte_decoder()
    with open(vocab_json, encoding="utf-8") as f:
        vocab = json.load(f)
    return {bytes(decoder[c] for c in tok): i for tok, i in vocab.items() if tok != EOT}


def gpt2_tiktoken(vocab_json):
    import tiktoken

    return tiktoken.Encoding(
        name="gpt2-bench",
        pat_str=GPT2_PATTERN,
        mergeable_ranks=gpt2_ranks(vocab_json),
        special_tokens={EOT: 50256},
    )


def find_gpt2_files(explicit=None):
    dirs = [Path(explicit)] if explicit else GPT2_DIRS
    for d in dirs:
        vocab, merges = d / "gpt2_vocab.json", d / "gpt2_merges.txt"
        if vocab.is_file() and merges.is_file():
            return str(vocab), str(merges)
    return None


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
    cache = ctx.corpora / "utf8"
    try:
        cache.mkdir(exist_ok=True)
    except OSError:
        cache = Path(os.environ.get("TMPDIR", "/tmp")) / "bpe-bench-utf8"
        cache.mkdir(exist_ok=True)
    out = cache / name
    fixed = data.decode("utf-8", errors="replace").encode("utf-8")
    if not (out.is_file() and out.stat().st_size == len(fixed) and out.read_bytes() == fixed):
        tmp = out.with_name(out.name + ".tmp")
        tmp.write_bytes(fixed)
        os.replace(tmp, out)
    bad = data.decode("utf-8", errors="replace").count("\ufffd")
    table.note("{} is not valid UTF-8 ({} bad sequences); all libraries read {} instead, "
               "with U+FFFD in their place".format(path, bad, out))
    ctx.clean[name] = out
    return out


# ---------------------------------------------------------------------------------------
# Workers: each runs in its own subprocess and returns a JSON-able dict


def _best(fn, reps):
    best, out = float("inf"), None
    for _ in range(reps):
        t0 = time.perf_counter()
        out = fn()
        best = min(best, time.perf_counter() - t0)
    return best, out


def _err(exc):
    return "{}: {}".format(type(exc).__name__, str(exc).strip().splitlines()[0] if str(exc).strip() else "")


def job_train_ours(a):
    import bpe

    t0 = time.perf_counter()
    tok = bpe.Tokenizer.train_files([a["path"]], a["vocab"])
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
    tok.train_from_iterator(lines(), a["vocab"], pattern=GPT2_PATTERN)
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
            t, results[n] = _best(lambda: tok.encode_batch(docs, num_threads=n), 1)
            best[n] = min(best[n], t)
    return {
        "backend": bpe.BACKEND,
        "docs": len(docs),
        "mb": sum(len(d.encode("utf-8")) for d in docs) / 1e6,
        "seconds_1": best[1],
        "seconds_2": best[2],
        "same_ids": results[1] == results[2],
    }


JOBS = {
    "train_ours": job_train_ours,
    "train_fallback": job_train_fallback,
    "train_rustbpe": job_train_rustbpe,
    "train_hf": job_train_hf,
    "encode": job_encode,
    "batch": job_batch,
}


def worker_main(name, args_json):
    try:
        out = {"ok": True, **JOBS[name](json.loads(args_json))}
    except BaseException as exc:  # noqa: BLE001 - everything goes back to the parent
        out = {"ok": False, "error": _err(exc), "traceback": traceback.format_exc()}
    out["self_maxrss_mb"] = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    out["children_maxrss_mb"] = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss / 1024
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
            with open("/proc/{}/stat".format(entry), "rb") as f:
                stat = f.read()
        except OSError:
            continue
        ppid = int(stat[stat.rfind(b")") + 2 :].split()[1])
        kids.setdefault(ppid, []).append(int(entry))
    return kids


def _proc_memory_kb(pid):
    """PSS of pid in kB (RSS where smaps_rollup is unreadable); 0 if it is gone."""
    try:
        with open("/proc/{}/smaps_rollup".format(pid), "rb") as f:
            for line in f:
                if line.startswith(b"Pss:"):
                    return int(line.split()[1])
    except OSError:
        pass
    try:
        with open("/proc/{}/statm".format(pid), "rb") as f:
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
        return {"ok": False, "error": "timed out after {:.0f} s".format(timeout)}
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
        how = "exit {}".format(proc.returncode)
        if proc.returncode < 0:
            import signal

            try:
                how = "killed by " + signal.Signals(-proc.returncode).name
            except ValueError:
                how = "killed by signal {}".format(-proc.returncode)
        return {"ok": False, "error": "worker died ({}): {}".format(how, detail)}
    result["wall_seconds"] = wall
    result["peak_mb"] = max(peak[0] / 1024, result.get("self_maxrss_mb", 0))
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
    name = "english10.txt" if ctx.quick else "english.txt"
    path = utf8_corpus(ctx, table, name)
    vocab = 32768
    what = "`train_files` {}, vocab {}, gpt2 pattern".format(name, vocab)
    mem_what = "peak memory of training ({})".format(name)
    if path is None:
        table.note("{}: skipped, corpus {} is missing".format(what, ctx.corpora / name))
        return
    args = {"path": str(path), "vocab": vocab}
    _progress("train_files: bpe on {} ...".format(name))
    ours = run_repeated("train_ours", args, ctx.timeout, ctx.train_reps)
    anchor = None
    if _have("rustbpe"):
        _progress("train_files: rustbpe on {} ...".format(name))
        anchor = run_repeated("train_rustbpe", args, ctx.timeout, ctx.train_reps)
    else:
        table.note("{}: rustbpe is not installed (pip install rustbpe); no anchor".format(what))

    o_txt = "{:.1f} s ({})".format(ours["seconds"], ours["backend"]) if ours["ok"] else _short(ours["error"])
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
        table.row(what, o_txt, a_txt, "{:.2f}".format(r), "time ≤ 1.0", _met(r <= 1.0))
        table.row(mem_what, om_txt, am_txt, "{:.2f}".format(rm), "≤ 1.0×", _met(rm <= 1.0))
        table.note(
            "train_files: {} merges (ours) / {} (rustbpe)".format(ours["merges"], anchor["merges"])
        )
    else:
        table.row(what, o_txt, a_txt, "-", "time ≤ 1.0", "-")
        table.row(mem_what, om_txt, am_txt, "-", "≤ 1.0×", "-")
        for label, res in (("ours", ours), ("rustbpe", anchor)):
            if res is not None and res["ok"]:
                table.note("train_files: {} merges ({})".format(res["merges"], label))
    for label, res in (("bpe", ours), ("rustbpe", anchor)):
        if res is not None and not res["ok"]:
            table.note("train_files, {}: {}".format(label, res["error"]))


def row_encode_ordinary(ctx, table):
    name = "english10.txt"
    path = utf8_corpus(ctx, table, name)
    what = "`encode_ordinary` english10.txt, GPT-2 merges, 1 thread"
    if path is None:
        table.note("{}: skipped, corpus {} is missing".format(what, ctx.corpora / name))
        return
    if ctx.gpt2 is None:
        table.note("{}: skipped, GPT-2 files not found in {}".format(what, ", ".join(map(str, GPT2_DIRS))))
        return
    if not _have("tiktoken"):
        table.note("{}: skipped, tiktoken is not installed".format(what))
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
    a_txt = "{:.2f} MB/s tiktoken".format(t_mbs)
    if "ours_error" in res:
        table.row(what, _short(res["ours_error"]), a_txt, "-", "throughput ≥ 1.0", "-")
        table.note("encode_ordinary, bpe: {}".format(res["ours_error"]))
        return
    o_mbs = res["mb"] / res["ours_seconds"]
    r = o_mbs / t_mbs
    table.row(what, "{:.2f} MB/s ({})".format(o_mbs, res["backend"]), a_txt, "{:.2f}".format(r),
              "throughput ≥ 1.0", _met(r >= 1.0))
    table.note(
        "encode_ordinary: ids identical to tiktoken: {} ({} tokens); from_gpt2 load {:.2f} s".format(
            "yes" if res["ids_match"] else "NO", res["ours_tokens"], res["load_seconds"]
        )
    )


def row_encode_batch(ctx, table):
    name = "english10.txt"
    path = utf8_corpus(ctx, table, name)
    what = "`encode_batch` english10.txt (1000-line docs), 2 threads"
    if path is None:
        table.note("{}: skipped, corpus {} is missing".format(what, ctx.corpora / name))
        return
    if ctx.gpt2 is None:
        table.note("{}: skipped, GPT-2 files not found".format(what))
        return
    _progress("encode_batch: bpe 1 vs 2 threads on english10.txt ...")
    res = run_worker(
        "batch",
        {"path": str(path), "vocab_json": ctx.gpt2[0], "merges_txt": ctx.gpt2[1], "reps": ctx.reps},
        ctx.timeout,
    )
    if not res["ok"]:
        table.row(what, _short(res["error"]), "-", "-", "≥ 1.7×", "-")
        table.note("encode_batch: {}".format(res["error"]))
        return
    s = res["seconds_1"] / res["seconds_2"]
    table.row(what, "{:.2f} MB/s ({})".format(res["mb"] / res["seconds_2"], res["backend"]),
              "{:.2f} MB/s, 1 thread".format(res["mb"] / res["seconds_1"]), "{:.2f}×".format(s),
              "≥ 1.7×", _met(s >= 1.7))
    if not res["same_ids"]:
        table.note("encode_batch: 1-thread and 2-thread results DIFFER")


def row_python_train_files(ctx, table):
    name = "english10.txt"
    path = utf8_corpus(ctx, table, name)
    vocab = 8192
    what = "pure-Python `train_files` english10.txt, vocab {}".format(vocab)
    if path is None:
        table.note("{}: skipped, corpus {} is missing".format(what, ctx.corpora / name))
        return
    args = {"path": str(path), "vocab": vocab}
    _progress("python_train_files: bpe_fallback on english10.txt ...")
    ours = run_repeated("train_fallback", args, ctx.timeout, ctx.train_reps)
    anchor = None
    if _have("tokenizers"):
        _progress("python_train_files: Hugging Face tokenizers on english10.txt ...")
        anchor = run_repeated("train_hf", args, ctx.timeout, ctx.train_reps)
    else:
        table.note("{}: tokenizers is not installed; no anchor".format(what))
    o_txt = "{:.1f} s".format(ours["seconds"]) if ours["ok"] else _short(ours["error"])
    if anchor is None:
        a_txt = "n/a (no tokenizers)"
    elif anchor["ok"]:
        a_txt = "{:.1f} s HF tokenizers".format(anchor["seconds"])
    else:
        a_txt = _short(anchor["error"])
    if ours["ok"] and anchor is not None and anchor["ok"]:
        r = ours["seconds"] / anchor["seconds"]
        table.row(what, o_txt, a_txt, "{:.2f}".format(r), "time ≤ 3.0", _met(r <= 3.0))
        table.note(
            "python_train_files: {} merges (ours) / {} (HF); peak memory {:.0f} MB / {:.0f} MB".format(
                ours["merges"], anchor["merges"], ours["peak_mb"], anchor["peak_mb"]
            )
        )
    else:
        table.row(what, o_txt, a_txt, "-", "time ≤ 3.0", "-")
        if ours["ok"]:
            table.note("python_train_files: {} merges (ours), peak memory {:.0f} MB".format(
                ours["merges"], ours["peak_mb"]))
    for label, res in (("bpe_fallback", ours), ("tokenizers", anchor)):
        if res is not None and not res["ok"]:
            table.note("python_train_files, {}: {}".format(label, res["error"]))


ROW_FUNCS = {
    "train_files": row_train_files,
    "encode_ordinary": row_encode_ordinary,
    "encode_batch": row_encode_batch,
    "python_train_files": row_python_train_files,
}


# ---------------------------------------------------------------------------------------


def _versions():
    from importlib import metadata

    out = []
    for dist in ("tiktoken", "tokenizers", "rustbpe"):
        try:
            out.append("{} {}".format(dist, metadata.version(dist)))
        except metadata.PackageNotFoundError:
            out.append("{} (not installed)".format(dist))
    return ", ".join(out)


def _bpe_backend():
    code = "import bpe; print(bpe.BACKEND, bpe.__file__)"
    try:
        out = subprocess.run(
            [sys.executable, "-c", "import sys; sys.path.append(%r); %s" % (str(REPO), code)],
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
    p.add_argument("--gpt2-dir", help="directory holding gpt2_vocab.json and gpt2_merges.txt")
    p.add_argument("--timeout", type=float, default=3600,
                   help="seconds allowed per measurement (default: %(default)s)")
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
                p.error("unknown row {!r}; choose from {}".format(name, ", ".join(ROWS)))
            if key not in selected:
                selected.append(key)

    class Ctx:
        pass

    ctx = Ctx()
    ctx.corpora = args.corpora
    ctx.quick = args.quick
    ctx.reps = args.repeat or (1 if args.quick else 3)
    ctx.train_reps = args.repeat or 1
    ctx.timeout = args.timeout
    ctx.gpt2 = find_gpt2_files(args.gpt2_dir)
    ctx.clean = {}

    table = Table()
    if not ctx.corpora.is_dir():
        table.note("corpora directory {} is missing; run ../shared/bench/make_corpora.sh".format(ctx.corpora))
    for name in selected:
        try:
            ROW_FUNCS[name](ctx, table)
        except Exception as exc:  # noqa: BLE001 - one broken row must not hide the others
            table.row(name, _short(_err(exc)), "-", "-", "-", "-")
            table.note("{}: {}".format(name, traceback.format_exc()))

    print("## bpe benchmark{}\n".format(" (--quick)" if args.quick else ""))
    print("- machine: {} CPUs, {} {}, Python {}".format(
        os.cpu_count(), platform.system(), platform.machine(), platform.python_version()))
    print("- bpe: {}".format(_bpe_backend()))
    print("- {}".format(_versions()))
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
