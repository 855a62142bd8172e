"""Replay the upstream SPINACH agent's recorded runs through our agent and score the answers.

    python -m scripts.replay_upstream TRACES --outputs OUTPUTS

TRACES is the upstream run log (a JSON list of runs with their thoughts,
actions and observations), e.g. the QALD-10 traces the SPINACH authors
published; OUTPUTS is upstream's scored outputs for the same questions
(``predicted_sparql``, ``predicted_answer_tuple``, ``gold_answer_tuple``).
Nothing is sent to any model or knowledge base.  The first line is the
figure: row-major F1 and EM of our final answers against upstream's gold,
beside upstream's own published figure on the same runs.  The next lines give
it without any end-of-run step, and with only the steps upstream's own end
of run had (no answer-form step), for like-with-like comparisons.
"""

from __future__ import annotations

import argparse
import json
import sys
from collections import Counter
from dataclasses import replace
from pathlib import Path

from agent.answer_form import STEP_NAMES
from agent.loop import AgentConfig
from harness.replay import ReplayOutcome, replay

UPSTREAM = "69.54/63.05"
REPLAY_CONFIG = AgentConfig(prune_threshold=0)
FORM_STEPS = tuple(STEP_NAMES.values())


def _figure(outcomes: list[ReplayOutcome]) -> tuple[float, float]:
    return (100 * sum(outcome.f1 or 0.0 for outcome in outcomes) / len(outcomes),
            100 * sum(bool(outcome.em) for outcome in outcomes) / len(outcomes))


def _load(path: Path) -> list[dict]:
    try:
        data = json.loads(path.read_text())
    except (OSError, ValueError) as error:
        raise SystemExit(f"error: cannot read {path}: {error}") from error
    if not isinstance(data, list):
        raise SystemExit(f"error: {path} is not a JSON list")
    return data


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("traces", type=Path, help="the upstream run log (JSON list)")
    parser.add_argument("--outputs", type=Path, required=True,
                        help="upstream's scored outputs for the same runs (JSON list, same order)")
    parser.add_argument("--show", type=int, default=3, help="questions to name per reason (default: 3)")
    args = parser.parse_args(argv)
    runs, outputs = _load(args.traces), _load(args.outputs)
    if len(runs) != len(outputs) or any(run["question"] != output["question"] for run, output in zip(runs, outputs)):
        print("error: the traces and the outputs are not the same questions in the same order", file=sys.stderr)
        return 2
    outcomes = [replay(run, output, REPLAY_CONFIG) for run, output in zip(runs, outputs)]
    without = [replay(run, output, replace(REPLAY_CONFIG, end_of_run=False)) for run, output in zip(runs, outputs)]
    upstream_steps = [replay(run, output, replace(REPLAY_CONFIG, answer_form=False))
                      for run, output in zip(runs, outputs)]
    f1, em = _figure(outcomes)
    print(f"replay F1 {f1:.2f} EM {em:.2f} (upstream {UPSTREAM})")
    bare_f1, bare_em = _figure(without)
    print(f"without the end-of-run steps: F1 {bare_f1:.2f} EM {bare_em:.2f}")
    like_f1, like_em = _figure(upstream_steps)
    print(f"with only the steps upstream's end of run had (no answer-form step): F1 {like_f1:.2f} EM {like_em:.2f}")
    changed = Counter(step for outcome in outcomes for step in outcome.result.end_of_run)
    print("runs each end-of-run step changed: " + ", ".join(
        f"{name} {changed[name]}" for name in ("extraction", "label_ids", "limit", "distinct", *FORM_STEPS)))
    clean = [outcome for outcome in outcomes if outcome.clean]
    reformed = [o for o in clean if not o.same_final and set(o.result.end_of_run) & set(FORM_STEPS)]
    print(f"clean runs (no repeated action, no stop after an empty or failed query): {len(clean)}; "
          f"ending on upstream's final query: {sum(outcome.same_final for outcome in clean)}, "
          f"on it put in the question's form: {len(reformed)}")
    rolled = [outcome for outcome in outcomes if outcome.rolled_back]
    if rolled:
        rolled_f1, rolled_em = _figure(rolled)
        print(f"runs with a rollback (their prompts differ from upstream's after it): {len(rolled)}, "
              f"F1 {rolled_f1:.2f} EM {rolled_em:.2f}; upstream on them F1 "
              f"{100 * sum(outputs[i]['f1'] for i, o in enumerate(outcomes) if o.rolled_back) / len(rolled):.2f}")
    reasons = Counter((outcome.clean, outcome.reason) for outcome in outcomes)
    print(f"\n{'runs':>5}  {'clean':<5}  actions")
    for (is_clean, reason), count in reasons.most_common():
        print(f"{count:>5}  {'yes' if is_clean else 'no':<5}  {reason}")
        for outcome in [o for o in outcomes if (o.clean, o.reason) == (is_clean, reason)][:args.show] \
                if reason != "same actions" else []:
            print(f"{'':>14}e.g. {outcome.question}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
