"""Every behaviour test runs on both backends: `bpe` (the compiled module, installed by
`pip install .`) and `bpe_fallback` (the pure-Python module).

BPE_TEST_BACKENDS=bpe_fallback (comma-separated) restricts the run to some backends.

Where no compiler built the core, `bpe` is the pure-Python module itself (the installed
bpe.py re-exports bpe_fallback), so a test run with `mod=bpe` would run the same code a
second time: those items are deselected (test_core's test_shim_is_the_fallback checks the
re-export).

The quick loop, `python -m pytest -m "not slow"`, leaves out the items marked `slow`: whole
tests marked `@pytest.mark.slow` where they are defined, and the items chosen here (see
mark_slow_cases): every case of OpenAI's real cl100k_base / o200k_base vocabularies (seconds to
load on each backend; gpt2 stays), and all but one case of the parametrized tests in
QUICK_CASES. One fast test of each behaviour stays in the quick loop.
"""

import faulthandler
import importlib
import os
import sys
import threading

import pytest
from hypothesis import settings

# No example database in the work tree; failures print their example and seed.
settings.register_profile("bpe", database=None, deadline=None, print_blob=True)
settings.load_profile("bpe")

from helpers import EOT, GPT2_MERGES, GPT2_VOCAB, SPECIALS, corpus_with_specials, read_data  # noqa: E402

# No test reaches the network: get_encoding downloads only where a test says so (a local
# server, BPE_ENCODINGS_URL); here and in every subprocess, a missing file is an error.
os.environ.setdefault("BPE_OFFLINE", "1")

ALL_BACKENDS = ("bpe", "bpe_fallback")
BACKENDS = tuple(
    b.strip()
    for b in os.environ.get("BPE_TEST_BACKENDS", ",".join(ALL_BACKENDS)).split(",")
    if b.strip()
)


def import_backend(name):
    try:
        return importlib.import_module(name)
    except ImportError as exc:  # the package must be installed: `pip install .`
        pytest.fail(f"cannot import backend module {name!r}: {exc!r}", pytrace=False)


def pytest_sessionfinish(session, exitstatus):
    """Nothing of the library may outlive the tests: a thread or a worker process left
    running could keep the interpreter from exiting (a hang after the summary).  Any left
    is listed (and fails the run); if the exit still takes minutes, every thread's stack
    is printed and the process exits, so a hang shows in the log instead of a timeout."""
    import multiprocessing

    left = [t for t in threading.enumerate() if t is not threading.main_thread() and t.is_alive()
            and not t.daemon]
    children = multiprocessing.active_children()
    if left or children:
        sys.stderr.write(f"\nconftest: left running after the tests: threads {left!r}, "
                         f"worker processes {children!r}\n")
        session.exitstatus = 1
    faulthandler.dump_traceback_later(300, exit=True)


# Parametrized tests whose cases repeat one behaviour: the case named here (its id, or the
# first case where none matches) stays in the quick loop, the others are `slow`; a number k
# keeps every k-th case instead (many cheap cases of one oracle comparison).
QUICK_CASES = {
    "test_matches_naive_options": 8,
    "test_matches_naive_patterns": 4,
    "test_every_format_loads_in_its_library_with_the_ids_of_train_files": 2,
    "test_import_oniguruma_syntax": 3,
    "test_export_custom_patterns": 3,
    "test_encode_equals_encode_files": 2,
    "test_pretokens_random": 2,
    "test_open_model_patterns_every_class": None,
    "test_ascii_pretokens_random": 4,
    "test_tiktoken_merge_recovery_is_fast": None,
    "test_catastrophic_pattern_is_stopped": None,
    "test_export_pre_tokenizes_every_code_point_alike": "bpe-words",
    "test_every_code_point_round_trips": "bpe-trained-o200k",
    "test_ids_equal_encode_of_each_file": "bpe-cl100k-ordinary",
    "test_sparse_ids_encode_in_a_fresh_process": None,
    "test_encode_iterable_small_blocks": "bpe-disallowed-absent-cl100k",
    "test_encode_iterable_long_runs": "bpe",
    "test_encode_iterable_any_split": "bpe-words",
    "test_encode_iterable_long_tricky": "bpe-bytes-2",
    "test_json_lines": "bpe-part.jsonl-all",
    "test_saved_files_get_the_mode_open_gives": "bpe-named-63",
    "test_encode_iterable_memory_is_bounded": "bpe",
    "test_native_corrupt_fields": "bpe",
    "test_gpt2_extra_entries_that_look_special_or_join_nothing": "bpe",
    "test_from_huggingface_gpt2_style_json": "bpe",
    "test_stream_references_exact": "bpe",
    "test_random_merges_every_pretoken": None,
    "test_gpt2_save_tiktoken": "bpe",
    "test_gpt2_save_huggingface": "bpe",
    "test_irregular_table_round_trips_through_every_format_that_holds_it": "bpe",
    "test_hub_json_with_every_split_as_a_merge": "bpe",
    "test_hub_pre_tokenizers_and_normalizers_equal_tokenizers": 2,
    # the seconds-long cases of the quick loop: one (or every k-th) case of each stays
    "test_clients_give_tiktokens_results": "bpe-langchain_text_splitters",
    # (False: every case is slow; the behaviour keeps a faster test in the quick loop)
    "test_catastrophic_pattern_in_threads_is_stopped": False,
    "test_machine_load_does_not_drain_the_budget": False,
    "test_gzip_bomb_is_refused_with_bounded_memory": 5,
    "test_every_short_snippet_at_the_end": None,
    "test_encode_long_text_matches_tiktoken": None,
    "test_fork_while_another_thread_builds": 2,
    "test_threads_do_not_share_a_time_budget": None,
    "test_pickles_go_both_ways_between_tiktoken_and_the_patch": "bpe",
    "test_tiktoken_state_shapes": "bpe",
    "test_bpe_run_gives_what_tiktoken_gives": "bpe-entry point-disallowed",
    "test_bpe_run_passes_errors_and_statuses_through": "bpe",
    "test_a_command_not_found_is_one_line": "bpe-no-such-command-here",
    "test_the_cli_keeps_its_one_line": "bpe",
    # seconds-long cases whose behaviour a case on the other backend keeps in the loop
    "test_every_spelling_of_gpt4s_pattern": "bpe",
    "test_any_rank_table_equals_tiktoken": "bpe",
    "test_patch_puts_the_api_under_tiktokens_names": "bpe",
    "test_encode_reads_a_str_utf8_again": "bpe",
    "test_o200k_harmony": "bpe",
    "test_count_pretokens_every_class": "bpe-gpt2",
    "test_native_scanner_every_class": "bpe_fallback-gpt2",
    "test_a_pickled_encoding_brings_the_patch": "bpe-spawn",
    "test_encode_parity_every_class": 2,
    "test_long_text_equals_regex": 2,
    "test_llama3_bare_table_with_pattern_and_special": "bpe",
    "test_named_and_literal_patterns_in_the_cli": "bpe",
    "test_command_reads_an_official_file_with_its_pattern": "bpe",
    "test_download_fills_tiktokens_cache": "bpe",
    "test_gpt2_ids_equal_tiktoken": "bpe",
    "test_official_gzipped_file_is_known_too": "bpe",
    "test_invalid_utf8_is_warned_about_once_per_file": "bpe",
    "test_encode_with_a_named_encoding": None,
    "test_a_stalled_download_times_out": "bpe",
    "test_rank_table_with_irregular_tokens_equals_tiktoken": "bpe",
    "test_the_command_line_reads_gzip": "bpe",
    "test_random_models_export_exactly_or_not_at_all": 2,
    "test_specials_of_any_first_character": 2,
    "test_one_document_is_split_by_tokens": "bpe",
    "test_encode_with_unstable_cases": 2,
    "test_random_texts_match_tiktoken": False,
    "test_pat_str_means_what_tiktoken_reads": 4,
    "test_what_cannot_be_read_alike_is_refused_by_name": 4,
    "test_a_save_over_a_fifo_or_device_is_refused_and_leaves_it": 6,
    "test_commands_refuse_an_output_that_is_a_fifo": 3,
    "test_load_tiktoken_bpe_reads_what_tiktoken_reads": 5,
    "test_a_pattern_that_can_match_text_is_no_empty_pattern": 3,
}
# parameter values whose cases are `slow`: OpenAI's large vocabularies
SLOW_VALUES = {"cl100k_base", "o200k_base"}


def mark_slow_cases(items):
    """Adds the `slow` mark to the cases chosen by QUICK_CASES and SLOW_VALUES."""
    cases = {}
    for item in items:
        params = getattr(item, "callspec", None)
        if params is not None and SLOW_VALUES & {v for v in params.params.values()
                                                 if isinstance(v, str)}:
            item.add_marker(pytest.mark.slow)
        elif getattr(item, "originalname", None) in QUICK_CASES:
            cases.setdefault(item.originalname, []).append(item)
    for name, group in cases.items():
        rule = QUICK_CASES[name]
        if rule is False:
            keep = []
        elif isinstance(rule, int):
            keep = group[::rule]
        else:
            keep = [i for i in group if i.callspec.id == rule][:1] or group[:1]
        for item in group:
            if item not in keep:
                item.add_marker(pytest.mark.slow)


def pytest_collection_modifyitems(config, items):
    mark_slow_cases(items)
    if "bpe" not in BACKENDS or "bpe_fallback" not in BACKENDS:
        return
    if import_backend("bpe").BACKEND != "python":
        return
    same = [
        item
        for item in items
        if getattr(item, "callspec", None) is not None and item.callspec.params.get("mod") == "bpe"
    ]
    if same:
        config.hook.pytest_deselected(items=same)
        drop = set(same)
        items[:] = [item for item in items if item not in drop]


@pytest.fixture(scope="session", params=BACKENDS)
def mod(request):
    """The backend module under test."""
    return import_backend(request.param)


@pytest.fixture(scope="session")
def both():
    """Both backend modules, for parity tests."""
    return [import_backend(name) for name in ALL_BACKENDS]


_GPT2 = {}


@pytest.fixture(scope="session")
def gpt2(mod):
    """GPT-2 loaded from tests/data with mod.Tokenizer.from_gpt2 (once per backend)."""
    if mod.__name__ not in _GPT2:
        _GPT2[mod.__name__] = mod.Tokenizer.from_gpt2(str(GPT2_VOCAB), str(GPT2_MERGES))
    return _GPT2[mod.__name__]


_TRAINED = {}


@pytest.fixture(scope="session")
def trained(mod):
    """trained(pattern) -> a tokenizer trained on ~20 KB of corpus.en with two specials."""

    def make(pattern="gpt2", vocab_size=256 + 200 + 2):
        key = (mod.__name__, pattern, vocab_size)
        if key not in _TRAINED:
            _TRAINED[key] = mod.Tokenizer.train(
                corpus_with_specials(20000),
                vocab_size,
                pattern=pattern,
                special_tokens=SPECIALS,
            )
        return _TRAINED[key]

    return make


@pytest.fixture(scope="module")
def small(mod):
    """A small tokenizer (60 merges of corpus.en, <|endoftext|> as its special token), for
    the tests that save it, load it and run commands on it."""
    return mod.Tokenizer.train(read_data("corpus.en", 8000) + EOT, 256 + 60 + 1,
                               special_tokens=[EOT])
