"""A core built by hand (``Core(pattern, ranks, merges, specials)``, ``Core.from_model``)
validates every value it is given: a TypeError for a wrong type, a ValueError for a bad
value, each naming it, the same on both backends; the compiled core never indexes with an
id it did not check (a fuzz loop runs in a subprocess so that a crash shows as one)."""

import base64
import subprocess
import sys
import textwrap

import pytest
from fresh import where

BYTES = {bytes([b]): b for b in range(256)}


def model(**extra):
    return {**BYTES, **{k.encode(): v for k, v in extra.items()}}


BAD = [  # (ranks, merges, specials), the exception, a word of its message
    (model(), [], {"<s>": -1}, ValueError, "-1"),
    (model(), [], {"<s>": 2**31}, ValueError, "2147483648"),
    (model(), [], {"<s>": 97}, ValueError, "97"),
    (model(), [], {"<s>": 1.5}, ValueError, "1.5"),
    (model(), [], {5: 300}, ValueError, "5"),
    (model(ab=-5), [], {}, ValueError, "-5"),
    (model(ab=2**31), [], {}, ValueError, "2147483648"),
    (model(ab=True), [], {}, TypeError, "True"),
    (model(ab="x"), [], {}, TypeError, "'x'"),
    (model(ab=97), [], {}, ValueError, "97"),
    ({**model(), "x": 300}, [], {}, TypeError, "'x'"),
    ({**model(), b"": 300}, [], {}, ValueError, "b''"),
    ({k: v for k, v in model().items() if k != b"a"}, [], {}, ValueError, "0x61"),
    (model(ab=256), [(97, 98, 99)], {}, ValueError, "99"),
    (model(ab=256), [(97, 98, 257)], {}, ValueError, "257"),
    (model(ab=256), [(97, -1, 256)], {}, ValueError, "-1"),
    (model(ab=256), [(97, 2**40, 256)], {}, ValueError, "1099511627776"),
    (model(ab=256), [(97, 98)], {}, TypeError, "(97, 98)"),
    (model(ab=256), [(97, 98, None)], {}, TypeError, "None"),
    (model(ab=256), [(97, 98, 256.0)], {}, TypeError, "256.0"),
    (model(ab=256), [7], {}, TypeError, "7"),
    (model(ab=256), None, {}, TypeError, "NoneType"),
    (None, [], {}, TypeError, "NoneType"),
    (model(), [], None, TypeError, "NoneType"),
]


@pytest.mark.parametrize("case", range(len(BAD)))
def test_a_hand_built_core_names_the_bad_value(mod, case):
    ranks, merges, specials, error, word = BAD[case]
    with pytest.raises(error) as info:
        mod.Core(mod.PATTERNS["gpt2"], ranks, merges, specials)
    assert word in str(info.value)


def test_a_hand_built_core_checks_its_pattern(mod):
    with pytest.raises(TypeError):
        mod.Core(None, model(), [], {})


def test_a_valid_hand_built_core_still_works(mod):
    core = mod.Core(mod.PATTERNS["gpt2"], model(ab=300), [(97, 98, 300)], {"<s>": 5000})
    assert core.encode_text("ab cab") == [300, 32, 99, 300]
    assert core.decode_bytes([300, 5000]) == b"ab<s>"
    assert core.merges() == [(97, 98, 300)]


@pytest.mark.parametrize("itemsize", [0, 1, 3, 8, -1])
def test_packing_checks_the_item_size(mod, itemsize):
    core = mod.Core(mod.PATTERNS["gpt2"], model(), [], {})
    with pytest.raises(ValueError, match="itemsize"):
        core.packer(itemsize)
    with pytest.raises(ValueError, match="itemsize"):
        core.pack_ids([1, 2, 3], itemsize)


def test_a_core_from_a_read_model_checks_the_special_ids(mod):
    """Core.tiktoken_model (the compiled core's in C, the fallback's in Python) then
    Core.from_model: the special ids are checked against the model."""
    text = "".join(f"{base64.b64encode(bytes([b])).decode()} {b}\n" for b in range(256))
    read = mod.Core.tiktoken_model(text + f"{base64.b64encode(b'ab').decode()} 256\n")
    for specials in ({"<s>": -1}, {"<s>": 256}, {"<s>": 2**31}, {"<s>": "x"}, {1: 300}):
        with pytest.raises(ValueError):
            mod.Core.from_model(mod.PATTERNS["gpt2"], read, specials)
    core = mod.Core.from_model(mod.PATTERNS["gpt2"], read, {"<s>": 1000})
    assert core.encode_text("abab") == [256, 256] and core.decode_bytes([1000]) == b"<s>"
    with pytest.raises(TypeError):
        mod.Core.from_model(mod.PATTERNS["gpt2"], None, {})


FUZZ = """
import random
rng = random.Random(int(sys.argv[1]))
P = [m.PATTERNS["gpt2"], m.PATTERNS["words"], "bytes", r"\\w+|\\W"]
built = 0
for _ in range(400):
    ranks = {bytes([b]): b for b in range(256)}
    toks = list(ranks)
    merges = []
    for k in range(rng.randrange(12)):
        pool = [t for t in (b"a", b"b", b"ab", b"ba") if t in ranks]
        a, b = (rng.choice(pool), rng.choice(pool)) if rng.random() < 0.4 else (
            rng.choice(toks), rng.choice(toks))
        if a + b not in ranks:
            i = rng.choice([256 + k, rng.randrange(256, 400)])
            if i in ranks.values():
                continue
            ranks[a + b] = i
            toks.append(a + b)
        merges.append([ranks[a], ranks[b], ranks[a + b]])
    if rng.random() < 0.2:
        rng.shuffle(merges)
    odd = [-1, -2**40, 2**31, 2**31 - 1, 10**6, 257, True, 1.0, None, "x"]
    if merges and rng.random() < 0.3:
        rng.choice(merges)[rng.randrange(3)] = rng.choice(odd)
    if rng.random() < 0.2:
        ranks[rng.choice(toks)] = rng.choice(odd)
    specials = {"<s>": rng.choice([-1, 0, 255, 256, 999, 2**31, 2**31 - 1, None])} \\
        if rng.random() < 0.5 else {}
    try:
        core = m.Core(rng.choice(P), ranks, [tuple(x) for x in merges], specials)
    except (ValueError, TypeError):
        continue
    built += 1
    text = "".join(rng.choice("ab ab<s>\\u00e9x\\n") for _ in range(rng.randrange(40)))
    ids = core.encode_text(text)
    assert core.decode_bytes(ids) == text.encode(), (text, ranks, merges)
    core.encode_pieces(text.split())
    core.encode_texts([text, text])
    core.merge_bytes(text.encode())
    assert core.decode_bytes([-1]) is None and core.decode_bytes([2**40]) is None
    core.decode_bytes(list(specials.values()))
    core.tokens(), core.merges()
print(built)
"""


@pytest.mark.parametrize("seed", [1, 2])
def test_fuzzed_hand_built_cores_never_crash(mod, seed):
    src = f"import sys\nimport {mod.__name__} as m\n" + textwrap.dedent(FUZZ)
    run = subprocess.run([sys.executable, "-c", src, str(seed)], capture_output=True, text=True,
                         timeout=120, env={"PYTHONPATH": where(mod), "BPE_OFFLINE": "1"})
    assert run.returncode == 0, (run.returncode, run.stderr[-2000:])
    assert int(run.stdout) > 50


@pytest.mark.parametrize("options, error", [
    ((-1, 2, None), ValueError), ((2**31 - 255, 2, None), ValueError), ((1.5, 2, None), TypeError),
    ((10, -2, None), ValueError), ((10, 2, 0), ValueError), ((10, 2, "x"), TypeError),
])
def test_learn_merges_checks_its_options(mod, options, error):
    with pytest.raises(error):
        mod.Core.learn_merges({b"ab": 5, b"abc": 3}, *options)
    assert mod.Core.learn_merges({b"ab": 5, b"abc": 3}, 10, 2, None)


def test_special_names_may_share_an_id(mod):
    """As tiktoken allows (o200k_harmony): the first name decodes the id."""
    core = mod.Core(mod.PATTERNS["gpt2"], model(), [], {"<s>": 300, "<t>": 300})
    assert core.decode_bytes([300, 97]) == b"<s>a"
