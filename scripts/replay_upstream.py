"""Replay the upstream SPINACH agent's recorded runs through our agent and score the answers.

    python -m scripts.replay_upstream TRACES --outputs OUTPUTS

TRACES is the upstream run log (a JSON list of runs with their thoughts,
actions and observations), e.g. the QALD-10 traces the SPINACH authors
published; OUTPUTS is upstream's scored outputs for the same questions
(``predicted_sparql``, ``predicted_answer_tuple``, ``gold_answer_tuple``).
Nothing is sent to any model or knowledge base.  The first line is the
figure: row-major F1 and EM of our agent's own final answers against
upstream's gold.  The next gives the same final queries after upstream's
post-processing (labelled so: it is upstream's code, not the agent), which
is how upstream's published figure was scored, then how many final queries
are, white space aside, ones the recorded model wrote.  Also installed as
``spinach-replay``.
"""

from __future__ import annotations

import argparse
import json
import sys
from collections import Counter
from pathlib import Path

from agent.cli import eval_extra, program_name
from agent.loop import AgentConfig
from harness.upstream_postprocessing import LABEL

with eval_extra("scripts.replay_upstream"):
    from harness.replay import ReplayOutcome, replay

UPSTREAM = "69.54/63.05"
#: IDs every model knows, left out of the count of IDs typed from memory (as the issue that measured it did).
COMMON_IDS = frozenset({"P31", "P279", "Q5"})
REPLAY_CONFIG = AgentConfig(prune_threshold=0)


def _figure(outcomes: list[ReplayOutcome], postprocessed: bool = False) -> tuple[float, float]:
    f1s = [outcome.postprocessed_f1 if postprocessed else outcome.f1 for outcome in outcomes]
    ems = [outcome.postprocessed_em if postprocessed else outcome.em for outcome in outcomes]
    return 100 * sum(f1 or 0.0 for f1 in f1s) / len(outcomes), 100 * sum(bool(em) for em in ems) / len(outcomes)


def _load(path: Path) -> list[dict]:
    try:
        data = json.loads(path.read_text())
    except (OSError, ValueError) as error:
        raise SystemExit(f"error: cannot read {path}: {error}") from error
    if not isinstance(data, list):
        raise SystemExit(f"error: {path} is not a JSON list")
    return data


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog=program_name("scripts.replay_upstream"), description=__doc__.splitlines()[0])
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
    f1, em = _figure(outcomes)
    print(f"replay F1 {f1:.2f} EM {em:.2f}: the agent's own final queries")
    post_f1, post_em = _figure(outcomes, postprocessed=True)
    print(f"{LABEL}: F1 {post_f1:.2f} EM {post_em:.2f} (upstream's published figure {UPSTREAM}, scored so)")
    written = sum(outcome.model_written for outcome in outcomes)
    finals = sum(outcome.result.final_sparql is not None for outcome in outcomes)
    print(f"final queries the recorded model wrote (white space aside): {written}/{len(outcomes)} "
          f"({finals} runs have a final query)")
    extracted = sum("extraction" in outcome.result.end_of_run for outcome in outcomes)
    changed = sum(outcome.postprocessed_sparql != outcome.result.final_sparql for outcome in outcomes
                  if outcome.result.final_sparql is not None)
    print(f"final query written by the extraction call: {extracted} runs; changed by upstream's post-processing: "
          f"{changed} runs")
    fired = [outcome for outcome in outcomes if outcome.result.id_checks]
    print(f"know before use (IDs no observation had shown, named): fired in {len(fired)} runs, "
          f"{sum(outcome.result.id_checks for outcome in outcomes)} times")
    typed = [outcome for outcome in outcomes if set(outcome.final_ids_never_shown) - COMMON_IDS]
    rest = [outcome for outcome in outcomes if outcome not in typed]
    print(f"final queries using an ID no tool had shown ({', '.join(sorted(COMMON_IDS))} aside): {len(typed)}; "
          f"{LABEL} F1 {_figure(typed, postprocessed=True)[0]:.1f} on them, "
          f"{_figure(rest, postprocessed=True)[0]:.1f} on the rest")
    clean = [outcome for outcome in outcomes if outcome.clean]
    print(f"clean runs (no repeated action, no stop after an empty or failed query): {len(clean)}; "
          f"ending, after upstream's post-processing, on upstream's final query: "
          f"{sum(outcome.same_final for outcome in clean)}")
    rolled = [outcome for outcome in outcomes if outcome.rolled_back]
    if rolled:
        rolled_f1, rolled_em = _figure(rolled, postprocessed=True)
        print(f"runs with a rollback (their prompts differ from upstream's after it): {len(rolled)}, "
              f"{LABEL} F1 {rolled_f1:.2f} EM {rolled_em:.2f}; upstream on them F1 "
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
