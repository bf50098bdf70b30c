"""Differential fuzzing of the C readers of vocabularies (_bpe_load.pxi): .tiktoken text, ranks
dicts, the native format's token and merge sections, and a tokenizer.json's model.vocab and
model.merges.

Valid small files (a trained tokenizer's, and a prefix of GPT-2's vocabulary) are mutated at the
byte and the line level (numbers swapped for 2**31, 2**63, -1, +1, 007, '١', ...; counts that
disagree with the lines; CR, NUL, '=', lone surrogates' bytes; lines dropped, doubled, swapped).
Each input is loaded three ways: by `bpe` (its C readers), by `bpe` with the C readers switched
off (its reference readers, on the compiled core) and by `bpe_fallback`.  All three must give the
same outcome: an equal tokenizer that encodes alike, or the same exception type and message (a
ValueError for a file).  The loads run in a worker process, so a crash or a hang fails the test
with the input instead of killing the run.

The quick loop runs a few dozen examples; a longer campaign:

    BPE_FUZZ_EXAMPLES=5000 python -m pytest -q tests/test_load_fuzz.py
"""

import base64
import json
import os
import select
import subprocess
import sys
import textwrap

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from helpers import EOT, GPT2_MERGES, GPT2_VOCAB

EXAMPLES = int(os.environ.get("BPE_FUZZ_EXAMPLES", "25"))
QUICK = settings(max_examples=EXAMPLES, deadline=None,
                 suppress_health_check=[HealthCheck.function_scoped_fixture,
                                        HealthCheck.too_slow])
SLOW = settings(QUICK, max_examples=max(EXAMPLES, 400))
TIMEOUT = 60  # seconds for one input's loads (they take well under one)
SAMPLE = "the cat sat on the mat; the dog ate the hat. " * 8 + "naïve café 😀 123 456\n\n"
TEXT = "hello the cat sat, naïve 😀 123\r\n\t x"

WORKER = textwrap.dedent(r'''
    import base64, faulthandler, json, os, sys, tempfile
    faulthandler.enable()
    import bpe, bpe_fallback

    EOT = "<|endoftext|>"
    TEXT = sys.argv[1]

    class NoReaders(bpe.Core):  # the compiled core, its C readers switched off
        tiktoken_model = native_model = hf_model = staticmethod(lambda *source: None)

    class Reference(bpe.Tokenizer):
        core_class = NoReaders

    def outcome(load):
        try:
            tok = load()
        except Exception as e:
            return ["error", type(e).__name__, str(e)]
        ids = tok.encode(TEXT, allowed_special="all")
        return ["ok", tok.pattern, repr(sorted(tok.vocab.items())), repr(tok.merges),
                repr(sorted(tok.special_tokens.items())), ids, tok.decode(ids) == TEXT]

    def ranks_of(entries):
        ranks = {}
        for key, value in entries:
            key = base64.b64decode(key)
            ranks[key] = {"true": True, "float": 1.0}.get(value, value)
        return ranks

    def loads(kind, data, path):
        if kind == "ranks":
            ranks = ranks_of(json.loads(data))
            yield "dict", lambda t: t.from_tiktoken(ranks, pattern="gpt2", special_tokens=[EOT])
            return
        with open(path, "wb") as f:
            f.write(data)
        if kind == "hf":
            yield "from_huggingface", lambda t: t.from_huggingface(path)
            yield "from_file", lambda t: t.from_file(path)
        elif kind == "tiktoken":
            yield "from_tiktoken", lambda t: t.from_tiktoken(path, pattern="gpt2",
                                                             special_tokens=[EOT])
            yield "from_file", lambda t: t.from_file(path, pattern="gpt2")
            yield "get_encoding", lambda t: t.get_encoding("gpt2", path=path)
        else:
            yield "load", lambda t: t.load(path)
            yield "from_file", lambda t: t.from_file(path)

    tmp = tempfile.mkdtemp()
    for line in sys.stdin:
        req = json.loads(line)
        data = base64.b64decode(req["data"])
        path = os.path.join(tmp, {"tiktoken": "in.tiktoken", "hf": "tokenizer.json"}.get(
            req["kind"], "in.bpe"))
        out = {}
        for name, load in loads(req["kind"], data, path):
            out[name] = [outcome(lambda t=t: load(t))
                         for t in (bpe.Tokenizer, Reference, bpe_fallback.Tokenizer)]
        print(json.dumps(out), flush=True)
''')


def _short_id(text, limit=60):
    """A test id that names a long input briefly (pytest puts the id in PYTEST_CURRENT_TEST,
    which a subprocess inherits: 600 KB of it exceeds the system's limit on arguments)."""
    return text if len(text) <= limit else f"{text[:limit]}...({len(text)} chars)"


class Worker:
    """A process that loads inputs with both backends; restarted after it dies."""

    def __init__(self):
        self.proc = None

    def start(self):
        root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
        env = dict(os.environ, PYTHONPATH=os.pathsep.join(
            [root, os.environ.get("PYTHONPATH", "")]), PYTHONFAULTHANDLER="1")
        self.proc = subprocess.Popen([sys.executable, "-c", WORKER, TEXT], stdin=subprocess.PIPE,
                                     stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=env,
                                     cwd=root)

    def stop(self):
        if self.proc is not None:
            self.proc.kill()
            err = self.proc.stderr.read().decode(errors="replace")[-3000:]
            self.proc.wait()
            self.proc = None
            return err
        return ""

    def run(self, kind, data):
        if self.proc is None or self.proc.poll() is not None:
            self.stop()
            self.start()
        req = json.dumps({"kind": kind, "data": base64.b64encode(data).decode()})
        try:
            self.proc.stdin.write(req.encode() + b"\n")
            self.proc.stdin.flush()
        except BrokenPipeError:
            pass
        ready, _, _ = select.select([self.proc.stdout], [], [], TIMEOUT)
        line = self.proc.stdout.readline() if ready else b""
        if not line:
            how = "died" if ready else f"hung (no answer in {TIMEOUT} s)"
            err = self.stop()
            pytest.fail(f"the worker {how} on {kind} input {data[:300]!r}...\n{err}")
        return json.loads(line)


@pytest.fixture(scope="module")
def worker():
    w = Worker()
    yield w
    w.stop()


@pytest.fixture(scope="module")
def files(tmp_path_factory):
    """Valid files: a trained tokenizer's, and a prefix of GPT-2's vocabulary (its first
    1000 ranks are a .tiktoken file of their own), in .tiktoken and the native format."""
    import bpe_fallback as m

    d = tmp_path_factory.mktemp("valid")
    trained = m.Tokenizer.train(SAMPLE, 320, special_tokens=[EOT])
    gpt2 = m.Tokenizer.from_gpt2(GPT2_VOCAB, GPT2_MERGES)
    ranks = {t: i for i, t in sorted(gpt2.vocab.items()) if i < 1256 and t != EOT.encode()}
    prefix = m.Tokenizer.from_tiktoken(ranks, pattern="gpt2", special_tokens=[EOT])
    out = {"tiktoken": [], "native": [], "hf": []}
    for name, tok in (("trained", trained), ("gpt2", prefix)):
        tok.save_tiktoken(d / f"{name}.tiktoken", sidecar=False)
        tok.save(d / f"{name}.bpe")
        tok.save_huggingface(d / f"{name}.json")
        out["tiktoken"].append((d / f"{name}.tiktoken").read_bytes())
        out["native"].append((d / f"{name}.bpe").read_bytes())
        out["hf"].append((d / f"{name}.json").read_bytes())
    return out


NUMBERS = [b"2147483647", b"2147483648", b"4294967296", b"9223372036854775807",
           b"9223372036854775808", b"99999999999999999999", b"-1", b"+1", b"007", b"0",
           b"00000000001", b" 1", b"1 ", b"1\t", b"\xd9\xa1", b"\xc2\xb2", b"1\x00", b"", b"1e3",
           b"0x10", b"\xef\xbc\x91"]
BYTES = [b"\x00", b"\r", b"\n", b" ", b"  ", b"\t", b"=", b"==", b"+", b"/", b"-", b"A",
         b"\xed\xa0\x80", b"\xff", b"\xc4\xa0", b"\xd9\xa1", b"\xef\xbb\xbf", b"\x0b", b"\x0c",
         b"\xc2\x85", b"\xe2\x80\xa8"]
LINES = [b"", b"\r", b"====", b"= 1", b"AA== 1", b"AA==AA== 300", b" 5", b"YWI= 2147483648",
         b"YWI= 99999", b"tokens 0", b"merges 0", b"tokens 999999999", b"merges 2147483648",
         b"specials 0", b"end", b"300 a b", b"300 \xc4\xa0 \xc4\xa0", b"2147483647 a b",
         b"99999 zz", b"#bpe-tokenizer 1"]


@st.composite
def mutation(draw, data):
    kind = draw(st.sampled_from(["byte", "byte", "insert", "delete", "truncate", "number",
                                 "number", "count", "drop", "double", "swap", "line", "crlf",
                                 "no final newline", "newlines"]))
    lines = data.split(b"\n")
    at = draw(st.integers(0, max(len(data) - 1, 0)))
    row = draw(st.integers(0, max(len(lines) - 1, 0)))
    if kind == "byte":
        new = draw(st.sampled_from(BYTES) | st.binary(min_size=1, max_size=1))
        return data[:at] + new + data[at + 1:]
    if kind == "insert":
        return data[:at] + draw(st.sampled_from(BYTES)) + data[at:]
    if kind == "delete":
        return data[:at] + data[at + draw(st.integers(1, 8)):]
    if kind == "truncate":
        return data[:at]
    if kind in ("number", "count"):
        if kind == "count":  # the native format's section counts
            heads = [i for i, line in enumerate(lines)
                     if line.split(b" ")[0] in (b"tokens", b"merges", b"specials")]
            row = draw(st.sampled_from(heads)) if heads else row
        fields = lines[row].split(b" ")
        k = draw(st.integers(0, len(fields) - 1))
        old = fields[k].rstrip(b"\r")
        if kind == "count" and old.isdigit():
            new = str(max(int(old) + draw(st.integers(-3, 3)), 0)).encode()
            new = draw(st.sampled_from([new, new, *NUMBERS]))
        else:
            new = draw(st.sampled_from(NUMBERS))
        fields[k] = new + fields[k][len(old):]
        lines[row] = b" ".join(fields)
        return b"\n".join(lines)
    if kind == "drop":
        del lines[row]
    elif kind == "double":
        lines.insert(row, lines[row])
    elif kind == "swap":
        other = draw(st.integers(0, len(lines) - 1))
        lines[row], lines[other] = lines[other], lines[row]
    elif kind == "line":
        lines.insert(row, draw(st.sampled_from(LINES)))
    elif kind == "crlf":
        return data.replace(b"\n", b"\r\n")
    elif kind == "no final newline":
        return data.rstrip(b"\n")
    elif kind == "newlines":
        return data[:at] + b"\n" * draw(st.integers(1, 3000)) + data[at:]
    return b"\n".join(lines)


@st.composite
def mutated(draw, files):
    data = draw(st.sampled_from(files))
    for _ in range(draw(st.integers(1, 3))):
        data = draw(mutation(data))
    return data


def check_alike(result, allowed=("ValueError",)):
    for name, (fast, reference, fallback) in result.items():
        assert fast == reference == fallback, name
        if fast[0] == "error":
            assert fast[1] in allowed, (name, fast)
        else:
            assert fast[-1] is True, name  # decodes its own encoding


def fuzz_file(worker, kind, data):
    check_alike(worker.run(kind, data))


@QUICK
@given(data=st.data())
def test_tiktoken_mutated_alike(worker, files, data):
    fuzz_file(worker, "tiktoken", data.draw(mutated(files["tiktoken"])))


@QUICK
@given(data=st.data())
def test_native_mutated_alike(worker, files, data):
    fuzz_file(worker, "native", data.draw(mutated(files["native"])))


VALUES = st.sampled_from([2**31 - 1, 2**31, 2**32, 2**63 - 1, 2**63, 2**64, -1, -2**63, 0,
                          "true", "float"])


@st.composite
def mutated_ranks(draw, files):
    text = draw(st.sampled_from(files)).decode()
    entries = [line.split(" ") for line in text.split("\n") if line]
    entries = [[t, int(r)] for t, r in entries]
    for _ in range(draw(st.integers(1, 3))):
        k = draw(st.integers(0, len(entries) - 1))
        how = draw(st.sampled_from(["value", "swap", "drop", "empty key", "repeat value"]))
        if how == "value":
            entries[k][1] = draw(VALUES)
        elif how == "swap":
            j = draw(st.integers(0, len(entries) - 1))
            entries[k], entries[j] = entries[j], entries[k]
        elif how == "drop":
            del entries[k]
        elif how == "empty key":
            entries[k][0] = ""
        else:
            entries[k][1] = entries[draw(st.integers(0, len(entries) - 1))][1]
    return json.dumps(entries).encode()


@QUICK
@given(data=st.data())
def test_ranks_dict_mutated_alike(worker, files, data):
    check_alike(worker.run("ranks", data.draw(mutated_ranks(files["tiktoken"]))),
                allowed=("ValueError", "TypeError"))


FORMS = ["Ġ", "ĠĠ", "a", "a b", "a  b", " ", "", "\u0100", "\u0144", "\u0143", "\x00", "é",
         "\ud800", "ab", "Ġt", "Ġthe"]


def mutate_hf(draw, doc, vocab, merges, keys, how, k, r):
    """One change of mutated_hf's, in place."""
    if how == "id":
        vocab[keys[k]] = draw(VALUES | st.sampled_from([True, 1.5, "7", None, len(vocab)]))
    elif how == "repeat id":
        vocab[keys[k]] = vocab[draw(st.sampled_from(keys))]
    elif how == "form":
        vocab[draw(st.sampled_from(FORMS))] = vocab.pop(keys[k], 0)
    elif how == "drop token":
        vocab.pop(keys[k], None)
    elif not merges:
        return
    elif how == "merge shape":
        merges[r] = draw(st.sampled_from([merges[r][:1], merges[r] + ["a"], [1, 2],
                                          " ".join(merges[r]) + " ", "a", None]))
    elif how == "merge part":
        merges[r] = [merges[r][0], draw(st.sampled_from(FORMS))]
    elif how == "repeat merge":
        merges.insert(r, list(merges[draw(st.integers(0, len(merges) - 1))]))
    elif how == "swap merges":
        j = draw(st.integers(0, len(merges) - 1))
        merges[r], merges[j] = merges[j], merges[r]
    elif how == "string merge":
        merges[r] = " ".join(merges[r]) if isinstance(merges[r], list) else merges[r]
    elif how == "added in vocab":
        doc["added_tokens"].append(dict(doc["added_tokens"][0], content=keys[k]))
    elif how == "added id":
        doc["added_tokens"][0]["id"] = draw(VALUES)
    else:
        doc["model"].pop("merges", None)


@st.composite
def mutated_hf(draw, files):
    """A tokenizer.json whose model.vocab, model.merges or added_tokens are changed where the
    C reader decides: ids (out of range, repeated, not ints), forms (not GPT-2's, with
    spaces), merges (either JSON shape, three parts, a part or join that is no token, a pair
    given twice, reordered), added tokens that are vocabulary tokens."""
    doc = json.loads(draw(st.sampled_from(files)))
    vocab, merges = doc["model"]["vocab"], doc["model"]["merges"]
    keys = list(vocab)
    for _ in range(draw(st.integers(1, 3))):
        how = draw(st.sampled_from(["id", "repeat id", "form", "drop token", "merge shape",
                                    "merge part", "repeat merge", "swap merges", "string merge",
                                    "added in vocab", "added id", "no merges"]))
        k = draw(st.integers(0, len(keys) - 1))
        r = draw(st.integers(0, max(len(merges) - 1, 0)))
        try:   # (an earlier change may have made this one meaningless: then it is skipped)
            mutate_hf(draw, doc, vocab, merges, keys, how, k, r)
        except (TypeError, KeyError, IndexError):
            pass
    return json.dumps(doc).encode()


@QUICK
@given(data=st.data())
def test_tokenizer_json_mutated_alike(worker, files, data):
    fuzz_file(worker, "hf", data.draw(mutated_hf(files["hf"])))


@pytest.mark.slow
@SLOW
@given(data=st.data())
def test_tokenizer_json_mutated_alike_long(worker, files, data):
    fuzz_file(worker, "hf", data.draw(mutated_hf(files["hf"])))


@pytest.mark.slow
@SLOW
@given(data=st.data())
def test_tiktoken_mutated_alike_long(worker, files, data):
    fuzz_file(worker, "tiktoken", data.draw(mutated(files["tiktoken"])))


@pytest.mark.slow
@SLOW
@given(data=st.data())
def test_native_mutated_alike_long(worker, files, data):
    fuzz_file(worker, "native", data.draw(mutated(files["native"])))


def _tiktoken_of(pairs):
    return b"".join(base64.b64encode(t) + b" %d\n" % i for t, i in pairs)


BYTES_LAST = _tiktoken_of([(t, i) for i, t in enumerate([b"ab", b"abc", b"cab", b"aa", b"aaa"])]
                          + [(bytes([b]), 1000 + b) for b in range(256)])
TOP_ID = _tiktoken_of([(bytes([b]), b) for b in range(256)] + [(b"ab", 2**31 - 1)])


@pytest.mark.parametrize("kind,data", [
    ("tiktoken", BYTES_LAST),  # merges ranked before the bytes they join
    ("tiktoken", TOP_ID),  # the largest id; the special token's id would be 2**31
    ("tiktoken", b"\n" * 200000),
    ("tiktoken", b"\r\n" * 100000),
    ("tiktoken", b"===="),
    ("tiktoken", b"= 0\n"),
    ("native", b"#bpe-tokenizer 1\npattern \"a\"\ntokens 0\nmerges 0\nspecials 0\nend\n"),
    ("native", b"#bpe-tokenizer 1\npattern \"a\"\ntokens 2147483647\n" + b"\n" * 100000),
    ("native", b"#bpe-tokenizer 1\npattern \"a\"\ntokens 1\n0 \xed\xa0\x80\nmerges 0\n"),
], ids=lambda value: _short_id(repr(value)))
def test_odd_inputs_alike(worker, kind, data):
    check_alike(worker.run(kind, data))


# ---------------------------------------------------------------------------------------
# findings of the audit of _bpe_load.pxi, each run where a crash cannot take the run down


def run_python(code):
    root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    env = dict(os.environ, PYTHONPATH=os.pathsep.join([root, os.environ.get("PYTHONPATH", "")]))
    return subprocess.run([sys.executable, "-X", "faulthandler", "-c", textwrap.dedent(code)],
                          capture_output=True, text=True, timeout=300, env=env, cwd=root)


def compiled():
    import bpe

    if getattr(bpe, "BACKEND", None) != "cython":
        pytest.skip("the compiled backend is not built")


def test_unread_model_is_refused():
    """A _Model made directly (no reader filled it) answers None, and a core is not built
    from it (it crashed: its arrays are NULL)."""
    compiled()
    got = run_python("""
        import bpe
        m = bpe._Model()
        print(m.token(0), m.id_of(b"a"), m.has_id(0))
        try:
            bpe.Core.from_model("a", m, {})
        except ValueError as e:
            print("ValueError")
    """)
    assert got.returncode == 0, got.stderr
    assert got.stdout.split() == ["None", "None", "False", "ValueError"]


def test_readers_refuse_none():
    """None where the C side reads a str or bytes: a TypeError, not a read of None's fields
    as a string's (native_model(None, 0) read them; id_of(None) on a model too)."""
    compiled()
    got = run_python("""
        import bpe
        m = bpe.Core.tiktoken_model({bytes([b]): b for b in range(256)})
        for call in (lambda: bpe.Core.native_model(None, 0), lambda: m.id_of(None)):
            try:
                call()
            except TypeError:
                print("TypeError")
    """)
    assert got.returncode == 0, got.stderr
    assert got.stdout.split() == ["TypeError", "TypeError"]


def test_readers_allocate_by_content():
    """The readers sized their arrays by the lines (28 bytes each) before reading one: a
    file of 30 million newlines asked for 840 MB and raised MemoryError under a limit of
    the address space; now a token's room needs a line with a space, and these are not
    plain (None: the reference reader says what is wrong)."""
    compiled()
    got = run_python("""
        import os, resource, bpe
        n = 30_000_000
        blank = "\\n" * n
        native = '#bpe-tokenizer 1\\npattern "a"\\ntokens 0\\n' + "\\n" * n
        vm = int(open("/proc/self/statm").read().split()[0]) * os.sysconf("SC_PAGE_SIZE")
        resource.setrlimit(resource.RLIMIT_AS, (vm + (500 << 20), resource.RLIM_INFINITY))
        start = native.find("tokens")
        print(bpe.Core.tiktoken_model(blank), bpe.Core.native_model(native, start))
    """)
    assert got.returncode == 0, got.stderr
    assert got.stdout.split() == ["None", "None"]
