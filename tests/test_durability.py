"""Nothing lost: a process killed while saving leaves the old file intact, and Ctrl-C during
train_files stops every worker and leaves no process behind. Both are tested with real
signals on real subprocesses, on both backends."""

import os
import signal
import subprocess
import sys
import textwrap
import time

import pytest

from helpers import DATA

pytestmark = pytest.mark.skipif(sys.platform == "win32", reason="POSIX signals")

SAVER = textwrap.dedent(
    """
    import importlib, sys
    mod = importlib.import_module(sys.argv[1])
    path, vocab, merges = sys.argv[2:5]
    big = mod.Tokenizer.from_gpt2(vocab, merges)
    small = mod.Tokenizer.from_merges([(b"a", b"b")], special_tokens=["<s>"])
    big.save(path)
    print("ready", flush=True)
    while True:
        for tok in (small, big):
            tok.save(path)
    """
)


@pytest.mark.slow
@pytest.mark.parametrize("fmt", ["native"])
def test_kill_during_save_leaves_a_whole_file(mod, tmp_path, fmt):
    path = tmp_path / "tok.bpe"
    script = tmp_path / "saver.py"
    script.write_text(SAVER)
    big = mod.Tokenizer.from_gpt2(str(DATA / "gpt2_vocab.json"), str(DATA / "gpt2_merges.txt"))
    small = mod.Tokenizer.from_merges([(b"a", b"b")], special_tokens=["<s>"])
    for delay in (0.05, 0.13, 0.21, 0.34, 0.55):
        proc = subprocess.Popen(
            [sys.executable, str(script), mod.__name__, str(path), str(DATA / "gpt2_vocab.json"),
             str(DATA / "gpt2_merges.txt")],
            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
        )
        try:
            assert proc.stdout.readline().strip() == "ready", proc.stderr.read()
            time.sleep(delay)
            proc.send_signal(signal.SIGKILL)
            proc.wait(10)
        finally:
            if proc.poll() is None:
                proc.kill()
        loaded = mod.Tokenizer.load(path)  # never half a file
        assert loaded == small or loaded == big


TRAINER = textwrap.dedent(
    """
    import importlib, sys, time
    mod = importlib.import_module(sys.argv[1])

    class SlowCounter:  # a core's counter that takes a second to start, and a while to count
        def __init__(self, pattern):
            time.sleep(1.0)
            self.counter = mod.Core.counter(pattern)

        def __getattr__(self, name):  # (a loaded machine must not finish before Ctrl-C comes)
            attr = getattr(self.counter, name)
            if not callable(attr):
                return attr

            def slow(*args, **kwargs):
                time.sleep(0.01)
                return attr(*args, **kwargs)

            return slow

    class SlowCore(mod.Core):
        counter = SlowCounter

    class Slow(mod.Tokenizer):
        core_class = SlowCore

    if __name__ == "__main__":
        print("ready", flush=True)
        Slow.train_files([sys.argv[2]], 1000, workers=2, chunk_size=2048)
        print("finished", flush=True)
    """
)


def _workers(pgid, parent):
    """The worker processes of `parent`: its children (the pure-Python core starts them;
    the compiled core counts in threads and starts none)."""
    return _processes_in_group(pgid, parent=parent)


def _processes_in_group(pgid, parent=None):
    """Live processes of process group `pgid` (only children of `parent`, if given)."""
    found = []
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            with open(f"/proc/{entry}/stat") as f:
                fields = f.read().rsplit(")", 1)[1].split()
        except OSError:
            continue
        state, ppid, pgrp = fields[0], int(fields[1]), int(fields[2])
        if pgrp == pgid and state != "Z" and (parent is None or ppid == parent):
            found.append(int(entry))
    return found


@pytest.mark.skipif(not os.path.isdir("/proc"), reason="needs /proc")
def test_ctrl_c_during_train_files_stops_the_workers(mod, tmp_path):
    corpus = tmp_path / "corpus.txt"  # ~4 MB: seconds of counting in pure Python
    corpus.write_text((DATA / "corpus.en").read_text(encoding="utf-8") * 30, encoding="utf-8")
    script = tmp_path / "trainer.py"
    script.write_text(TRAINER)
    proc = subprocess.Popen([sys.executable, str(script), mod.__name__, str(corpus)],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                            start_new_session=True)
    pgid = proc.pid
    try:
        assert proc.stdout.readline().strip() == "ready"
        if mod.BACKEND == "cython":  # threads: its slow counters keep it busy for 2 s
            time.sleep(0.5)
            assert _workers(pgid, proc.pid) == [], "the compiled core started processes"
        else:
            deadline = time.time() + 20
            while len(_workers(pgid, proc.pid)) < 2 and time.time() < deadline:
                time.sleep(0.05)  # the two workers
            assert len(_workers(pgid, proc.pid)) >= 2, "the workers never started"
            time.sleep(0.3)  # let them start their first jobs
        os.killpg(pgid, signal.SIGINT)  # what a terminal sends on Ctrl-C
        out, err = proc.communicate(timeout=30)
    finally:
        if proc.poll() is None:
            os.killpg(pgid, signal.SIGKILL)
    assert proc.returncode != 0
    assert "finished" not in out
    assert "KeyboardInterrupt" in err
    deadline = time.time() + 10
    while _processes_in_group(pgid) and time.time() < deadline:
        time.sleep(0.1)
    assert _processes_in_group(pgid) == [], "worker processes outlived Ctrl-C"
