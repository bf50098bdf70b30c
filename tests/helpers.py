"""Shared test helpers: test data, GPT-2's byte <-> unicode mapping, reference encoders."""

import functools
import json
import os
from contextlib import contextmanager
from pathlib import Path

import regex

DATA = Path(__file__).resolve().parent / "data"
GPT2_VOCAB = DATA / "gpt2_vocab.json"
GPT2_MERGES = DATA / "gpt2_merges.txt"
EOT = "<|endoftext|>"

# GPT-4's pattern as open models spell it (their own text, not ours): Llama 3's
# (tiktoken's cl100k_base before `\s++$`), Qwen 2's and 3's (one digit), nanochat's
# (two digits, as minbpe writes GPT-4's)
LLAMA3 = (r"(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}{1,3}"
          r"| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+")
QWEN = LLAMA3.replace(r"\p{N}{1,3}", r"\p{N}")
NANOCHAT = (r"""'(?i:[sdmt]|ll|ve|re)|[^\r\n\p{L}\p{N}]?+\p{L}+|\p{N}{1,2}"""
            r"""| ?[^\s\p{L}\p{N}]++[\r\n]*|\s*[\r\n]|\s+(?!\S)|\s+""")


def read_data(name, limit=None):
    """A file of tests/data as str; with limit, cut at the last newline before limit chars."""
    text = (DATA / name).read_bytes().decode("utf-8")
    if limit is not None and len(text) > limit:
        cut = text.rfind("\n", 0, limit)
        text = text[: cut + 1] if cut > 0 else text[:limit]
    return text


@functools.cache
def bytes_to_unicode():
    """GPT-2's reversible byte -> printable unicode character mapping (encoder.py)."""
    printable = (
        list(range(ord("!"), ord("~") + 1))
        + list(range(ord("¡"), ord("¬") + 1))
        + list(range(ord("®"), ord("ÿ") + 1))
    )
    mapping = {}
    extra = 0
    for b in range(256):
        if b in printable:
            mapping[b] = chr(b)
        else:
            mapping[b] = chr(256 + extra)
            extra += 1
    return mapping


@functools.cache
def unicode_to_bytes():
    return {c: b for b, c in bytes_to_unicode().items()}


def gpt2_token_to_bytes(token):
    table = unicode_to_bytes()
    return bytes(table[c] for c in token)


@functools.cache
def gpt2_ranks():
    """GPT-2's mergeable ranks (bytes -> id) from vocab.json, without the special token."""
    vocab = json.loads(GPT2_VOCAB.read_text(encoding="utf-8"))
    return {gpt2_token_to_bytes(tok): i for tok, i in vocab.items() if tok != EOT}


@functools.cache
def gpt2_tiktoken():
    """A tiktoken Encoding for GPT-2 built offline from tests/data (the reference)."""
    import tiktoken

    from naive import GPT2_PATTERN

    return tiktoken.Encoding(
        name="gpt2-test",
        pat_str=GPT2_PATTERN,
        mergeable_ranks=gpt2_ranks(),
        special_tokens={EOT: 50256},
    )


def tiktoken_of(tok, name="from-test"):
    """An independent tiktoken Encoding built from a bpe Tokenizer's vocab (ranks = ids)."""
    import tiktoken

    specials = dict(tok.special_tokens)
    special_ids = set(specials.values())
    ranks = {b: i for i, b in tok.vocab.items() if i not in special_ids}
    return tiktoken.Encoding(
        name=name, pat_str=tok.pattern, mergeable_ranks=ranks, special_tokens=specials
    )


def fix_surrogates(text):
    """The text as this library is to encode it: each surrogate code point -> U+FFFD."""
    return regex.sub(r"[\ud800-\udfff]", "\ufffd", text)


def has_surrogate_pair(text):
    return any(
        0xD800 <= ord(a) <= 0xDBFF and 0xDC00 <= ord(b) <= 0xDFFF for a, b in zip(text, text[1:])
    )


# A corpus with special tokens in it: corpus.en paragraphs (40 lines) separated by EOT.
SPECIALS = [EOT, "<|pad|>"]


def corpus_with_specials(limit=None):
    lines = read_data("corpus.en", limit).splitlines(keepends=True)
    parts = ["".join(lines[i : i + 40]) for i in range(0, len(lines), 40)]
    text = EOT.join(parts)
    return text.replace(" .\n", " .<|pad|>\n", 5)


CODE = '''def fib(n: int) -> int:
    """Return the n-th Fibonacci number."""
\tif n < 2:
\t\treturn n
    return fib(n - 1) + fib(n - 2)  # recursion!

x = {"a": [1, 2, 3], 'b': (4.5e-3, None)}
if __name__ == "__main__":
    print(f"{fib(10)=}")\r\n
'''

# Texts without special tokens, used by the encode and export comparisons.
PLAIN_TEXTS = {
    "english": "The quick brown fox jumps over the lazy dog. "
               "It's 12:30, isn't it? I'm sure we'll've.",
    "address": read_data("address.txt"),
    "tinystories": read_data("tinystories_sample.txt").replace(EOT, "\n"),
    "corpus_en": read_data("corpus.en", 3000),
    "german": read_data("german.txt"),
    "code": CODE,
    "emoji": "I \u2764\ufe0f tokenizers \U0001f389\U0001f44d\U0001f3fd family: "
             "\U0001f468\u200d\U0001f469\u200d\U0001f467\u200d\U0001f466!",
    "cjk": "日本語のテキストです。中文测试，你好世界！한국어 텍스트도 있습니다.",
    "newlines": "\n\n\n",
    "lead_spaces": "   x",
    "trailing_spaces": "trailing spaces   ",
    "tabs": "\tone\t\ttwo\t \t three\t",
    "mixed_ws": "a\n\n\nb  \n  \n c \r\n\r\nd\u00a0e\u3000f\u2003",
    "numbers": "1234567 3.14159 1,000,000 -42 0x1F 2024-01-01",
    "contractions": "I'm you're he'll we've it's I'd DON'T 'S 'tis",
    "single_space": " ",
    "empty": "",
    "unicode_mix": "naïve café Ünïcödé — “quotes” ‘single’ … € ¥ © ™ ½ "
                   "Ωμέγα кириллица العربية עברית हिन्दी",
    "control": "\x00\x01\x7f\x1b[31mred\x1b[0m \u200b zero width",
}


def texts_with(specials):
    """Texts that contain the given special tokens, several times and adjacent."""
    a = specials[0]
    b = specials[-1]
    return {
        "one": f"Hello{a}World",
        "edges": f"{a}start middle end{b}",
        "adjacent": f"{a}{b}{a}  {b}\n{a}",
        "spaced": f"Hello {a} world {b} again, it's {a}\n\n{b} done",
        "only": a,
        "tinystories": read_data("tinystories_sample.txt").replace(EOT, a),
    }


def steady_malloc_env():
    """The environment for a child whose peak memory a test compares across input sizes.
    glibc raises its mmap threshold to the largest block freed, so freed chunk buffers then
    stay on the heap and fragment it: a few MB more on a larger input, whatever the code
    does, by chance (CI saw +8 MB).  A fixed threshold (glibc's default) leaves the library's
    own memory; memory that followed the input would still show.  Other allocators ignore it."""
    return dict(os.environ, MALLOC_MMAP_THRESHOLD_=str(128 * 1024))


# Peak memory of a subprocess, for scripts run by the tests. /proc/self/status's VmHWM belongs
# to the process's own address space; ru_maxrss on Linux carries over the size of the parent
# it was forked from (pytest, hundreds of MB), which would hide any growth.
PEAK_MB_SOURCE = """
def peak_mb():
    try:
        with open("/proc/self/status") as f:
            for line in f:
                if line.startswith("VmHWM:"):
                    return int(line.split()[1]) // 1024
    except OSError:
        pass
    import resource
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss // 1024
"""

# The peak memory (largest VmHWM) of the processes a script starts: its worker processes are
# not its children (a fork server starts them), so they are found in /proc and sampled.
TREE_PEAK_SOURCE = """
import os as _os, threading as _threading

def _children():
    kids = {}
    for entry in _os.listdir("/proc"):
        if entry.isdigit():
            try:
                with open(f"/proc/{entry}/stat", "rb") as f:
                    stat = f.read()
            except OSError:
                continue
            kids.setdefault(int(stat[stat.rfind(b")") + 2:].split()[1]), []).append(int(entry))
    return kids

def _hwm_mb(pid):
    try:
        with open(f"/proc/{pid}/status") as f:
            for line in f:
                if line.startswith("VmHWM:"):
                    return int(line.split()[1]) // 1024
    except OSError:
        pass
    return 0

def _cmdline(pid):
    try:
        with open(f"/proc/{pid}/cmdline", "rb") as f:
            return f.read()
    except OSError:
        return None

_OWN_CMDLINE = _cmdline(_os.getpid())

class TreePeak:
    '''with TreePeak() as t: ...; t.peak_mb is the largest peak of any descendant.'''

    def __enter__(self):
        self.peak_mb, self.pids, self._stop = 0, set(), _threading.Event()
        self._thread = _threading.Thread(target=self._run, daemon=True)
        self._thread.start()
        return self

    def _sample(self):
        kids, stack = _children(), [_os.getpid()]
        while stack:
            for pid in kids.get(stack.pop(), ()):
                stack.append(pid)
                self.pids.add(pid)
                if _cmdline(pid) != _OWN_CMDLINE:  # else forked, not yet exec'd: our own pages
                    self.peak_mb = max(self.peak_mb, _hwm_mb(pid))

    def _run(self):
        while not self._stop.wait(0.02):
            self._sample()

    def __exit__(self, *exc):
        self._sample()
        self._stop.set()
        self._thread.join()
        return False
"""


@contextmanager
def environ(**values):
    """Set (str) or unset (None) environment variables for a block."""
    def put(settings):
        for k, v in settings.items():
            if v is None:
                os.environ.pop(k, None)
            else:
                os.environ[k] = v

    old = {k: os.environ.get(k) for k in values}
    try:
        put(values)
        yield
    finally:
        put(old)


def patched_worker(enc, text):
    """Run in a worker process that unpickled `enc` (an encoding of a patched process):
    what `import tiktoken` gives there."""
    import tiktoken

    return {"ids": enc.encode(text), "type": str(type(enc)), "tiktoken": tiktoken.__spec__.origin,
            "same": tiktoken.get_encoding(enc.name).core is enc.core}


def _no_model(*source):
    return None


def reference(mod):
    """mod's Tokenizer with its core's readers (tiktoken_model, native_model, hf_model)
    switched off: the reference readers decide every load.  Module-level classes, made once
    per backend, so that its tokenizers pickle."""
    name = f"Reference_{mod.__name__}"
    if name not in globals():
        core = type(f"NoReaders_{mod.__name__}", (mod.Core,), {
            "tiktoken_model": staticmethod(_no_model), "native_model": staticmethod(_no_model),
            "hf_model": staticmethod(_no_model), "__module__": __name__})
        globals()[core.__name__] = core
        globals()[name] = type(name, (mod.Tokenizer,), {"core_class": core,
                                                        "__module__": __name__})
    return globals()[name]
