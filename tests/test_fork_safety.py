"""Locks and lazily built global state are safe across fork(): a process that forks while
another thread builds the first tokenizer (the compiled scanner's character table, the
registry of encodings, ...) leaves a child that builds and encodes as well.  Each case runs
in a fresh process (so the first build really is the first) that forks every few
milliseconds while the other thread builds; a child that does not finish in time fails."""

import base64
import os
import subprocess
import sys
import textwrap

import pytest
from fresh import where

from helpers import gpt2_ranks

pytestmark = pytest.mark.skipif(not hasattr(os, "fork"), reason="fork() is POSIX")

FORKS = """
import os, threading, time
path = sys.argv[1]

# a custom pattern of the GPT family: the compiled core builds its matcher at first use
CUSTOM = r"[^\\r\\n\\p{L}\\p{N}]?\\p{L}+|\\p{N}|\\s+(?!\\S)|\\s+|[^\\s\\p{L}\\p{N}]+"
pattern = CUSTOM if sys.argv[2] == "custom" else "gpt2"

def build():
    if sys.argv[2] in ("train", "custom"):
        m.Tokenizer.train("hello world, it's 2024 " * 2000, 400, pattern=pattern)
    else:
        m.get_encoding("gpt2", path=path).encode("hello world")

def child():
    tok = m.Tokenizer.train("hi there " * 20, 260, pattern=pattern)
    assert tok.decode(tok.encode("hi there")) == "hi there"
    if sys.argv[2] == "get_encoding":
        assert m.get_encoding("gpt2", path=path).encode("hello world") == [31373, 995]

done = threading.Event()
thread = threading.Thread(target=lambda: (build(), done.set()))
thread.start()
kids = []
while (not done.is_set() or not kids) and len(kids) < 8:  # one fork at least
    pid = os.fork()
    if pid == 0:
        code = 1
        try:
            child()
            code = 0
        finally:
            os._exit(code)
    kids.append(pid)
    time.sleep(0.02)
thread.join()
deadline = time.monotonic() + 90
bad = []
for pid in kids:
    while True:
        got, status = os.waitpid(pid, os.WNOHANG)
        if got:
            if status:
                bad.append(("failed", status))
            break
        if time.monotonic() > deadline:
            os.kill(pid, 9)
            os.waitpid(pid, 0)
            bad.append("hung")
            break
        time.sleep(0.01)
print(len(kids), bad)
"""


@pytest.mark.parametrize("building", ["train", "custom", "get_encoding"])
def test_fork_while_another_thread_builds(mod, tmp_path, building):
    path = tmp_path / "gpt2.tiktoken"
    path.write_text("".join(f"{base64.b64encode(t).decode()} {i}\n"
                            for t, i in gpt2_ranks().items()))
    src = f"import sys\nimport {mod.__name__} as m\n" + textwrap.dedent(FORKS)
    run = subprocess.run([sys.executable, "-c", src, str(path), building], capture_output=True,
                         text=True, timeout=180,
                         env={"PYTHONPATH": where(mod), "BPE_OFFLINE": "1"})
    assert run.returncode == 0, run.stderr[-2000:]
    forks, bad = run.stdout.split(" ", 1)
    assert int(forks) >= 1 and bad.strip() == "[]", run.stdout
