"""Differential fuzzing against the references, on both backends (tests/differential.py has
the cases and the checks, tests/strategies.py the strategies):

- random tokenizer.json files (normalizers, Splits of every behaviour, Digits, ByteLevel
  options, added tokens with every flag and odd ids, irregular merges) give tokenizers' ids;
- random patterns of the GPT family over small rank tables give tiktoken's ids;
- random patterns pre-tokenize as `regex` does;
- an export with a random pattern loads in tokenizers with the same ids.

A case may be refused with a ValueError naming the field or the pattern; nothing else may
differ or escape. `BPE_DIFF_FAMILIES` picks what is drawn (see tests/strategies.py), and
`BPE_DIFF_EXAMPLES` scales the slow tests' examples; `python tools/fuzz.py` runs the same
checks for as long as asked. The smoke tests keep a few examples in the quick loop.
"""

import os

import pytest
from hypothesis import HealthCheck, given, settings

import differential as D
import strategies as S

FAMILIES = S.families()
# the slow tests' examples each (the export test half): about 30 s in all where nothing fails
EXAMPLES = int(os.environ.get("BPE_DIFF_EXAMPLES", "24"))


def fuzz_settings(n):
    return settings(max_examples=n, deadline=None,
                    suppress_health_check=[HealthCheck.function_scoped_fixture,
                                           HealthCheck.too_slow, HealthCheck.filter_too_much,
                                           HealthCheck.data_too_large])


def check(target, mod, case):
    """The target's check; a refusal or a case the reference refuses passes."""
    D.run(target, mod, case)


@pytest.mark.slow
@fuzz_settings(EXAMPLES)
@given(case=D.hf_cases(FAMILIES))
def test_tokenizer_json_gives_tokenizers_ids(mod, case):
    check("hf", mod, case)


@pytest.mark.slow
@fuzz_settings(EXAMPLES)
@given(case=D.tiktoken_cases(FAMILIES))
def test_encoding_gives_tiktokens_ids(mod, case):
    check("tiktoken", mod, case)


@pytest.mark.slow
@fuzz_settings(EXAMPLES)
@given(case=D.regex_cases(FAMILIES))
def test_pattern_pretokenizes_as_regex(mod, case):
    check("regex", mod, case)


@pytest.mark.slow
@fuzz_settings(EXAMPLES // 2)
@given(case=D.export_cases(FAMILIES))
def test_export_loads_in_tokenizers_with_our_ids(mod, case):
    check("export", mod, case)


@pytest.mark.parametrize("target", D.TARGETS)
def test_differential_smoke(mod, target):
    """A few examples of each target in the quick loop."""
    given(case=D.CASES[target](FAMILIES))(fuzz_settings(3)(
        lambda case: check(target, mod, case)))()
