"""Report on evaluation runs: EM and F1 with 95% intervals beside the paper's, cost, actions, a plot.

    python -m scripts.report runs/qald10 runs/spinach-dev
    python -m scripts.report --compare runs/before runs/after
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from harness.reporting import ACTIONS, PAPER, USAGE, compare, plot_f1_against_actions, summarize


def print_report(directories: list[Path]) -> None:
    summaries = [summarize(directory) for directory in directories]
    print(f"{'run':<28} {'dataset':<22} {'n':>5} {'EM':>6} {'95% CI':>13} {'F1':>6} {'95% CI':>13} "
          f"{'paper EM/F1':>12}")
    for s in summaries:
        key = (s.info.get("dataset", "?"), s.info.get("split", "?"))
        paper = PAPER.get(key)
        label = f"{key[0]} {key[1]}" + (" baseline" if s.info.get("baseline") else "")
        print(f"{s.directory.name:<28} {label:<22} {s.questions:>5} {s.em:6.1f} "
              f"{s.em_interval[0]:5.1f}-{s.em_interval[1]:5.1f}  {s.f1:6.1f} {s.f1_interval[0]:5.1f}-"
              f"{s.f1_interval[1]:5.1f}  {(f'{paper[0]:.1f}/{paper[1]:.1f}' if paper else '-'):>12}")
    print("\nCost per question")
    print(f"{'run':<28} " + " ".join(f"{name:>17}" for name in USAGE))
    for s in summaries:
        print(f"{s.directory.name:<28} " + " ".join(f"{s.cost[name]:17.1f}" for name in USAGE))
    print("\nActions per question (mean)")
    print(f"{'run':<28} " + " ".join(f"{name:>21}" for name in ACTIONS) + f" {'all':>6}")
    for s in summaries:
        print(f"{s.directory.name:<28} " + " ".join(f"{s.actions[name]:21.2f}" for name in ACTIONS)
              + f" {sum(s.actions.values()):6.2f}")
    for s in summaries:
        histogram = ", ".join(f"{count}: {n}" for count, n in s.steps_histogram.items())
        plot = plot_f1_against_actions(s.directory, s.directory / "f1_vs_actions.png")
        print(f"\n{s.directory.name}: questions by number of actions: {histogram}\n  plot: {plot}")


def print_comparison(before: Path, after: Path) -> None:
    for kind, rows in compare(before, after).items():
        print(f"\n{kind}: {len(rows)}")
        for key, question, a, b in rows:
            print(f"  {key:<14} F1 {a:.2f} -> {b:.2f}  {question[:90]}")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m scripts.report", description=__doc__.splitlines()[0])
    parser.add_argument("runs", nargs="*", type=Path, help="output directories of scripts.evaluate")
    parser.add_argument("--compare", nargs=2, type=Path, metavar=("BEFORE", "AFTER"),
                        help="question by question: what got better, what got worse")
    args = parser.parse_args(argv)
    if not args.runs and not args.compare:
        parser.error("name at least one run directory, or --compare BEFORE AFTER")
    try:
        if args.runs:
            print_report(args.runs)
        if args.compare:
            print_comparison(*args.compare)
    except (ValueError, OSError) as error:
        print(f"error: {error}", file=sys.stderr)
        return 2
    return 0


if __name__ == "__main__":
    sys.exit(main())
