"""Differential fuzzing for as long as asked: the checks of tests/test_differential.py
(tokenizers, tiktoken, regex, exports) on both backends, round after round of hypothesis
examples, each round with its own seed.  A failing example is shrunk and printed with the
command that draws it again.

    python tools/fuzz.py --minutes 30
    python tools/fuzz.py --minutes 5 --target hf --families all,-split_behaviours
    python tools/fuzz.py --target regex --backend bpe --seed 7 --rounds 1   # one round again

Exit status 1 if anything failed.  Run from the repository root (it imports the in-place
`bpe` and `bpe_fallback.py` there, and tests/ for the strategies).
"""

import argparse
import collections
import importlib
import json
import os
import sys
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path[:0] = [ROOT, os.path.join(ROOT, "tests")]

from hypothesis import HealthCheck, Phase, given, seed, settings  # noqa: E402

import differential as D  # noqa: E402
import strategies as S  # noqa: E402


def one_round(target, mod, fam, round_seed, examples, outcomes, shrink=True):
    """Run `examples` examples with `round_seed`; (the failure (shrunk), its case) or
    (None, None)."""
    phases = [Phase.generate, Phase.shrink] if shrink else [Phase.generate]
    last, first = [], []

    @seed(round_seed)
    @settings(max_examples=examples, deadline=None, database=None, phases=phases,
              print_blob=True, suppress_health_check=list(HealthCheck))
    @given(case=D.CASES[target](fam))
    def run(case):
        last[:] = [case]
        outcomes["examples"] += 1
        try:
            outcome = D.run(target, mod, case)
        except Exception:
            first.append(outcomes["examples"])
            raise
        outcomes[outcome.split(":")[0] + ":" + _short_reason(outcome)] += 1

    try:
        run()
    except Exception as e:  # noqa: BLE001 - every failure is reported, none stops the run
        e.first_failing_example = first[0] if first else None
        return e, last[0] if last else None
    return None, None


def save_case(directory, target, name, round_seed, case):
    """Write a failing case where a test can read it: a tokenizer.json and its texts, or the
    pattern, the texts and the merges / ranks (JSON, bytes as lists of ints)."""
    os.makedirs(directory, exist_ok=True)
    stem = os.path.join(directory, f"{target}-{name}-seed{round_seed}")
    if target == "hf":
        text_json, texts = case
        with open(stem + ".tokenizer.json", "w", encoding="utf-8") as f:
            f.write(text_json)
        doc = {"texts": texts}
    elif target == "regex":
        doc = {"pattern": case[0], "texts": case[1]}
    elif target == "tiktoken":
        doc = {"pattern": case[0], "texts": case[2],
               "ranks": sorted([list(t), r] for t, r in case[1].items())}
    else:
        doc = {"pattern": case[0], "texts": case[2],
               "merges": [[list(a), list(b)] for a, b in case[1]]}
    with open(stem + ".case.json", "w", encoding="utf-8") as f:
        json.dump(doc, f, ensure_ascii=True, indent=1)
    return stem


def _short_reason(outcome):
    """An outcome's reason with the file path dropped, for the counts."""
    reason = outcome.partition(":")[2].strip()
    if reason.startswith("/") and ": " in reason:
        reason = reason.split(": ", 1)[1]
    return reason[:70]


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--minutes", type=float, default=1.0, help="how long (default 1)")
    ap.add_argument("--seed", type=int, default=0, help="the first round's seed (default 0)")
    ap.add_argument("--rounds", type=int, default=None, help="stop after this many rounds")
    ap.add_argument("--examples", type=int, default=100, help="examples per round (100)")
    ap.add_argument("--target", choices=D.TARGETS + ("all",), default="all")
    ap.add_argument("--backend", choices=("bpe", "bpe_fallback", "both"), default="both")
    ap.add_argument("--families", default=None,
                    help="what to draw: 'all', 'a,b' or 'all,-a' (default BPE_DIFF_FAMILIES or "
                         "all); names: " + ", ".join(S.FAMILIES))
    ap.add_argument("--no-shrink", action="store_true", help="report failures unshrunk")
    ap.add_argument("--save", metavar="DIR", help="write each new failing case to DIR")
    ap.add_argument("--stats", action="store_true", help="print the outcome counts")
    args = ap.parse_args(argv)

    fam = S.families(args.families)
    targets = D.TARGETS if args.target == "all" else (args.target,)
    backends = ("bpe", "bpe_fallback") if args.backend == "both" else (args.backend,)
    mods = {name: importlib.import_module(name) for name in backends}
    spec = ",".join(sorted(fam))
    deadline = time.monotonic() + args.minutes * 60
    start = time.monotonic()
    outcomes = collections.Counter()
    seen, failures, rounds = set(), 0, 0
    round_seed = args.seed
    while time.monotonic() < deadline and (args.rounds is None or rounds < args.rounds):
        for target in targets:
            for name, mod in mods.items():
                err, case = one_round(target, mod, fam, round_seed, args.examples, outcomes,
                                      shrink=not args.no_shrink)
                if err is None:
                    continue
                failures += 1
                head = f"{type(err).__name__}: {str(err).splitlines()[0][:60] if str(err) else ''}"
                key = (target, name, head)
                print(f"\n=== FAILURE  target {target}  backend {name}  seed {round_seed}  "
                      f"after {time.monotonic() - start:.0f} s, round {rounds + 1}, "
                      f"first failing example: #{err.first_failing_example} of the run "
                      f"(shrinking runs more)")
                print(f"    again: python tools/fuzz.py --target {target} --backend {name} "
                      f"--seed {round_seed} --rounds 1 --examples {args.examples} "
                      f"--families {spec}")
                if key in seen:
                    print(f"    (the same failure as before: {head})")
                else:
                    seen.add(key)
                    print(f"    {type(err).__name__}: {err}")
                    for note in getattr(err, "__notes__", ()):
                        print(f"    {note}")
                    if args.save and case is not None:
                        print(f"    saved: {save_case(args.save, target, name, round_seed, case)}"
                              f".*")
                sys.stdout.flush()
        round_seed += 1
        rounds += 1
    elapsed = time.monotonic() - start
    print(f"\n{rounds} rounds of {args.examples} examples per target and backend in "
          f"{elapsed:.0f} s; {failures} failing rounds, {len(seen)} distinct failures")
    if args.stats:
        for key, n in sorted(outcomes.items(), key=lambda kv: -kv[1]):
            print(f"  {n:7d}  {key}")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
