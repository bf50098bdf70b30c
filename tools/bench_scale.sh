#!/usr/bin/env bash
# Train and encode a large corpus with and without a Dask cluster, and train it with
# gigatoken and rustbpe: time, peak memory, the same output.
#
#   tools/bench_scale.sh CORPUS [VOCAB]        (VOCAB default 32768)
#
# CORPUS: e.g. python tools/make_scale_corpus.py /tmp/scale-1g.txt --size 1GB
# BPE_ROOT: the checkout whose bpe / bpe_fallback run (default: the current directory);
#   build its compiled core first (python setup.py build_ext --inplace).
# PYTHON: the interpreter (default: python on PATH, e.g. /work/venv/bin/python).
# WORK: where the outputs go (default: a new temporary directory, kept).
#
# Runs, each one after the other:
#   bpe train             (train_files on this machine: its threads)
#   bpe train --dask local:1, --dask local:2
#   bpe encode            (encode_files on this machine)
#   bpe encode --dask local:2
#   gigatoken.train_bpe, rustbpe (train_from_iterator, GPT-2's pattern as ours), if installed
# For each: wall time, the largest peak RSS of the run's processes (/usr/bin/time), and the
# peak RSS (VmHWM) of the client and of every Dask worker it started, sampled every 0.2 s.  Then checks that the
# tokenizers are byte-identical and so are the arrays and sidecars.
set -euo pipefail

CORPUS=${1:?usage: dask_bench.sh CORPUS [VOCAB]}
VOCAB=${2:-32768}
BPE_ROOT=${BPE_ROOT:-$PWD}
PYTHON=${PYTHON:-python}
WORK=${WORK:-$(mktemp -d /tmp/dask-bench.XXXXXX)}
export PYTHONPATH="$BPE_ROOT${PYTHONPATH:+:$PYTHONPATH}"
export BPE_OFFLINE=1
SPECIAL='<|endoftext|>'
mkdir -p "$WORK"
SIZE=$(stat -c %s "$CORPUS")

cat > "$WORK/sample.py" <<'EOF'
"""Sample the peak RSS (VmHWM) of every descendant of a process until it ends."""
import os, sys, time

root, out = int(sys.argv[1]), sys.argv[2]
peak, names = {}, {}

def children(pid):  # (of every thread: the Dask nannies start workers from another one)
    out = []
    try:
        tids = os.listdir(f"/proc/{pid}/task")
    except OSError:
        return out
    for tid in tids:
        try:
            with open(f"/proc/{pid}/task/{tid}/children") as f:
                out += [int(c) for c in f.read().split()]
        except OSError:
            pass
    return out

while os.path.exists(f"/proc/{root}"):
    todo, seen = children(root), []
    while todo:
        pid = todo.pop()
        seen.append(pid)
        todo += children(pid)
    for pid in seen:
        try:
            with open(f"/proc/{pid}/status") as f:
                hwm = next(int(l.split()[1]) for l in f if l.startswith("VmHWM"))
            with open(f"/proc/{pid}/cmdline", "rb") as f:
                cmd = f.read().replace(b"\0", b" ").decode(errors="replace")
        except (OSError, StopIteration):
            continue
        peak[pid] = max(peak.get(pid, 0), hwm)
        names[pid] = cmd
    time.sleep(0.2)
with open(out, "w") as f:
    for pid, kb in sorted(peak.items()):
        cmd = names[pid]
        if "python" not in cmd or "resource_tracker" in cmd:
            continue
        what = "Dask worker" if "multiprocessing.spawn" in cmd else "client (bpe command)"
        f.write(f"  {what} pid {pid}: peak RSS {kb / 1024:,.0f} MB\n")
EOF

run() {  # run NAME COMMAND...: time, client peak RSS, descendants' peak RSS
    local name=$1; shift
    echo "== $name: $*"
    /usr/bin/time -f "%e %M" -o "$WORK/$name.time" "$@" > "$WORK/$name.out" 2> "$WORK/$name.err" &
    local pid=$!
    "$PYTHON" "$WORK/sample.py" "$pid" "$WORK/$name.procs" &
    local sampler=$!
    local status=0
    wait "$pid" || status=$?
    wait "$sampler" || true
    if [ "$status" != 0 ]; then
        echo "FAILED ($status):"; cat "$WORK/$name.err"; exit 1
    fi
    read -r secs kb < <(tail -1 "$WORK/$name.time")
    printf '  wall %.1f s, %.1f MB/s; largest process peak RSS %.0f MB (/usr/bin/time)\n' "$secs" \
        "$(echo "$SIZE / $secs / 1000000" | bc -l)" "$(echo "$kb / 1024" | bc -l)"
    cat "$WORK/$name.procs"
    grep -E "^(cluster|pre-tokens|merges|time|ids) " "$WORK/$name.out" | sed 's/^/  /' || true
    echo "$name $secs $kb" >> "$WORK/summary"
}

echo "corpus $CORPUS ($SIZE bytes), vocab $VOCAB, bpe from $BPE_ROOT, outputs in $WORK"
"$PYTHON" -c "import bpe; print('backend', bpe.BACKEND)"
BPE=("$PYTHON" -m bpe_fallback)

run train_one "${BPE[@]}" train "$CORPUS" --vocab-size "$VOCAB" --special "$SPECIAL" \
    -o "$WORK/one.bpe"
run train_dask1 "${BPE[@]}" train "$CORPUS" --vocab-size "$VOCAB" --special "$SPECIAL" \
    -o "$WORK/dask1.bpe" --dask local:1
run train_dask2 "${BPE[@]}" train "$CORPUS" --vocab-size "$VOCAB" --special "$SPECIAL" \
    -o "$WORK/dask2.bpe" --dask local:2
for k in dask1 dask2; do
    if cmp -s "$WORK/one.bpe" "$WORK/$k.bpe"; then
        echo "merges: $k.bpe is byte-identical to one.bpe (train_files)"
    else
        echo "MERGES DIFFER: $k.bpe vs one.bpe"; exit 1
    fi
done

if "$PYTHON" -c "import gigatoken" 2>/dev/null; then
    run train_gigatoken "$PYTHON" -c "import sys, gigatoken; gigatoken.train_bpe(sys.argv[1], \
int(sys.argv[2]), ['$SPECIAL'])" "$CORPUS" "$VOCAB"
fi
if "$PYTHON" -c "import rustbpe" 2>/dev/null; then
    run train_rustbpe "$PYTHON" -c "
import sys, rustbpe
def lines():
    with open(sys.argv[1], encoding='utf-8', errors='replace', newline='') as f:
        yield from f
tok = rustbpe.Tokenizer()
tok.train_from_iterator(lines(), int(sys.argv[2]) - 1, pattern=r\"\"\"'(?:[sdmt]|ll|ve|re)| ?\\p{L}+| ?\\p{N}+| ?[^\\s\\p{L}\\p{N}]+|\\s+(?!\\S)|\\s+\"\"\")
" "$CORPUS" "$VOCAB"
fi

mkdir -p "$WORK/enc_one" "$WORK/enc_dask2"
run encode_one "${BPE[@]}" encode -t "$WORK/one.bpe" "$CORPUS" --eot "$SPECIAL" \
    --allowed-special all -o "$WORK/enc_one/train.bin"
run encode_dask2 "${BPE[@]}" encode -t "$WORK/one.bpe" "$CORPUS" --eot "$SPECIAL" \
    --allowed-special all -o "$WORK/enc_dask2/train.bin" --dask local:2
for f in train.bin train.bin.json; do
    if cmp -s "$WORK/enc_one/$f" "$WORK/enc_dask2/$f"; then
        echo "encode: $f is byte-identical"
    else
        echo "ENCODE DIFFERS: $f"; exit 1
    fi
done

echo "== summary (wall seconds, largest process peak RSS KB)"
cat "$WORK/summary"
awk '{t[$1] = $2} END {
    printf "train: dask local:2 / local:1 wall = %.2f; local:2 / train_files = %.2f\n",
           t["train_dask2"] / t["train_dask1"], t["train_dask2"] / t["train_one"]
    printf "encode: dask local:2 throughput / one machine = %.2f\n", t["encode_one"] / t["encode_dask2"]
    if ("train_gigatoken" in t) printf "train_files / gigatoken train_bpe = %.2f\n", t["train_one"] / t["train_gigatoken"]
    if ("train_rustbpe" in t) printf "train_files / rustbpe = %.2f\n", t["train_one"] / t["train_rustbpe"]
}' "$WORK/summary"
