"""Replay the upstream SPINACH agent's recorded runs through our agent and say which end the same way.

    python -m scripts.replay_upstream RUNS.json

RUNS.json is the upstream run log (a JSON list of runs with their thoughts,
actions and observations), e.g. the QALD-10 traces the SPINACH authors
published.  Nothing is sent to any model or knowledge base.
"""

from __future__ import annotations

import argparse
import json
import sys
from collections import Counter
from pathlib import Path

from tqdm import tqdm

from harness.replay import replay


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("runs", type=Path, help="the upstream run log (JSON list)")
    parser.add_argument("--show", type=int, default=3, help="questions to name per reason (default: 3)")
    args = parser.parse_args(argv)
    try:
        runs = json.loads(args.runs.read_text())
    except (OSError, ValueError) as error:
        print(f"error: cannot read {args.runs}: {error}", file=sys.stderr)
        return 2
    reasons: Counter[tuple[bool, str]] = Counter()
    examples: dict[tuple[bool, str], list[str]] = {}
    for run in tqdm(runs, desc="replaying", unit="run", file=sys.stderr):
        outcome = replay(run)
        key = (outcome.clean, outcome.reason)
        reasons[key] += 1
        examples.setdefault(key, []).append(outcome.question)
    reproduced = sum(count for (_, reason), count in reasons.items() if reason == "reproduced")
    print(f"{reproduced} of {len(runs)} runs reproduce exactly (same actions, same final query)\n")
    print(f"{'runs':>5}  {'clean':<5}  reason")
    for (clean, reason), count in reasons.most_common():
        print(f"{count:>5}  {'yes' if clean else 'no':<5}  {reason}")
        for question in examples[(clean, reason)][:args.show] if reason != "reproduced" else []:
            print(f"{'':>14}e.g. {question}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
