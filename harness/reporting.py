"""Numbers for a report: EM and F1 with bootstrap intervals, cost, actions per question, comparisons."""

from __future__ import annotations

import json
import random
from collections import Counter
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from harness.evaluation import read_jsonl

#: The paper's figures (EM, F1) for the SPINACH agent with GPT-4o.
PAPER = {
    ("spinach", "dev"): (21.4, 46.4), ("spinach", "test"): (16.4, 45.3),
    ("qald7", "test"): (62.2, 74.6), ("qald9plus", "test"): (58.3, 71.6), ("qald10", "test"): (63.1, 69.5),
    ("wikiwebquestions", "dev"): (61.2, 72.3), ("wikiwebquestions", "test"): (59.9, 70.3),
}
ACTIONS = ("search_wikidata", "get_wikidata_entry", "get_property_examples", "execute_sparql", "stop")
USAGE = ("llm_calls", "prompt_tokens", "completion_tokens", "cached_tokens", "kb_calls", "seconds")


def bootstrap_interval(values: list[float], resamples: int = 1000, seed: int = 0) -> tuple[float, float]:
    """The 95% percentile bootstrap interval of the mean (seeded: the same data give the same interval)."""
    if not values:
        return 0.0, 0.0
    rng = random.Random(seed)
    means = sorted(sum(rng.choices(values, k=len(values))) / len(values) for _ in range(resamples))
    return means[int(0.025 * resamples)], means[min(resamples - 1, int(0.975 * resamples))]


@dataclass
class RunSummary:
    directory: Path
    info: dict[str, Any]
    questions: int
    em: float
    em_interval: tuple[float, float]
    f1: float
    f1_interval: tuple[float, float]
    cost: dict[str, float]
    actions: dict[str, float]
    steps_histogram: dict[int, int]


def load_run(directory: Path) -> tuple[dict[str, Any], list[dict[str, Any]]]:
    info_path = directory / "run.json"
    info = json.loads(info_path.read_text()) if info_path.exists() else {}
    records = read_jsonl(directory / "results.jsonl")
    if not records:
        raise ValueError(f"{directory} holds no results")
    return info, records


def summarize(directory: Path) -> RunSummary:
    info, records = load_run(directory)
    count = len(records)
    ems = [100.0 * record["em"] for record in records]
    f1s = [100.0 * record["f1"] for record in records]
    cost = {name: sum(record["usage"][name] for record in records) / count for name in USAGE}
    actions = {name: sum(record["actions"].get(name, 0) for record in records) / count for name in ACTIONS}
    histogram = Counter(sum(record["actions"].values()) for record in records)
    return RunSummary(directory, info, count, sum(ems) / count, bootstrap_interval(ems), sum(f1s) / count,
                      bootstrap_interval(f1s), cost, actions, dict(sorted(histogram.items())))


def compare(before: Path, after: Path) -> dict[str, list[tuple[str, str, float, float]]]:
    """Questions (id, question, F1 before, F1 after) that got better, got worse, or are only in one run."""
    _, first = load_run(before)
    _, second = load_run(after)
    old = {record["id"]: record for record in first}
    new = {record["id"]: record for record in second}
    changes: dict[str, list[tuple[str, str, float, float]]] = {"better": [], "worse": []}
    for key in sorted(set(old) & set(new), key=str):
        a, b = old[key]["f1"], new[key]["f1"]
        if b > a:
            changes["better"].append((key, new[key]["question"], a, b))
        elif b < a:
            changes["worse"].append((key, new[key]["question"], a, b))
    changes["only before"] = [(key, old[key]["question"], old[key]["f1"], 0.0) for key in sorted(set(old) - set(new))]
    changes["only after"] = [(key, new[key]["question"], 0.0, new[key]["f1"]) for key in sorted(set(new) - set(old))]
    return changes


def plot_f1_against_actions(directory: Path, path: Path) -> Path:
    """A PNG: each question's F1 against the number of actions it took, with the mean per count."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    _, records = load_run(directory)
    counts = [sum(record["actions"].values()) for record in records]
    f1s = [record["f1"] for record in records]
    figure, axes = plt.subplots(figsize=(6, 4))
    axes.scatter(counts, f1s, alpha=0.4, label="questions")
    means = {count: [f for c, f in zip(counts, f1s) if c == count] for count in sorted(set(counts))}
    axes.plot(list(means), [sum(v) / len(v) for v in means.values()], color="C1", marker="o", label="mean F1")
    axes.set_xlabel("actions taken")
    axes.set_ylabel("row-major F1")
    axes.set_ylim(-0.05, 1.05)
    axes.legend()
    figure.tight_layout()
    figure.savefig(path, dpi=100)
    plt.close(figure)
    return path
