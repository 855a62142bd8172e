"""The figure of a run: each answer's F1 against the number of actions it took, with the mean per count.

An answer is one question's run (with ``--repeats``, each repeat gives one).
Points are spread sideways (a seeded jitter) so that answers with the same
count and score do not hide each other, and each count is labelled with its
number of answers, so a mean resting on two answers reads as such.  The
figure is written as PNG and as SVG (for papers).
"""

from __future__ import annotations

import random
from pathlib import Path

JITTER = 0.18


def plot_f1_against_actions(counts: list[int], f1s: list[float], title: str, stem: Path) -> tuple[Path, Path]:
    """Write ``stem.png`` and ``stem.svg``; return their paths."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    rng = random.Random(0)
    by_count: dict[int, list[float]] = {}
    for count, f1 in zip(counts, f1s):
        by_count.setdefault(count, []).append(f1)
    figure, axes = plt.subplots(figsize=(7, 5))
    axes.scatter([count + rng.uniform(-JITTER, JITTER) for count in counts], f1s, s=18, alpha=0.45, color="C0",
                 label="one answer (spread sideways)")
    ordered = sorted(by_count)
    means = [sum(by_count[count]) / len(by_count[count]) for count in ordered]
    axes.plot(ordered, means, color="C1", marker="o", linewidth=2, label="mean F1 at that count")
    for count in ordered:
        axes.annotate(f"n={len(by_count[count])}", (count, 1.07), ha="center", fontsize=8, color="0.3")
    axes.set_xticks(ordered)
    axes.set_xlim(min(ordered) - 0.6, max(ordered) + 0.6)
    axes.set_ylim(-0.05, 1.13)
    axes.set_yticks([0, 0.25, 0.5, 0.75, 1.0])
    axes.set_xlabel("actions on the final path (count per answer)")
    axes.set_ylabel("row-major F1 (0 to 1)")
    axes.set_title(title, fontsize=10)
    axes.grid(axis="y", alpha=0.3)
    axes.legend(loc="upper center", bbox_to_anchor=(0.5, -0.14), ncol=2, fontsize=8, frameon=False)
    figure.tight_layout()
    png, svg = stem.with_suffix(".png"), stem.with_suffix(".svg")
    figure.savefig(png, dpi=120)
    figure.savefig(svg)
    plt.close(figure)
    return png, svg
