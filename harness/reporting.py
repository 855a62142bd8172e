"""Numbers for a report: EM and F1 with bootstrap intervals, QALD's metric, what was left out, cost, actions.

Intervals are 95% percentile bootstrap intervals of the mean
(``scipy.stats.bootstrap``, seeded, so the same data give the same interval).
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
from scipy import stats

import agent.actions
from harness.evaluation import read_jsonl
from harness.prices import Price
from harness.qald_metric import QaldScores, QuestionScore, aggregate, score_question
from harness.run_info import read_run_info

#: The paper's figures (EM, F1) for the SPINACH agent with GPT-4o; the baseline's are not recorded here.
PAPER = {
    ("spinach", "dev"): (21.4, 46.4), ("spinach", "test"): (16.4, 45.3),
    ("qald7", "test"): (62.2, 74.6), ("qald9plus", "test"): (58.3, 71.6), ("qald10", "test"): (63.1, 69.5),
    ("wikiwebquestions", "dev"): (61.2, 72.3), ("wikiwebquestions", "test"): (59.9, 70.3),
}
#: The paper's cost of the agent on QALD-10 with GPT-4o, dollars per question.
PAPER_COST = 0.1253
QALD_DATASETS = ("qald7", "qald9plus", "qald10")
ACTIONS = tuple(agent.actions.ACTIONS)  # the one definition of the actions
USAGE = ("llm_calls", "prompt_tokens", "completion_tokens", "cached_tokens", "kb_calls", "seconds")


def bootstrap_interval(values: list[float], resamples: int = 1000, seed: int = 0) -> tuple[float, float]:
    """The 95% percentile bootstrap interval of the mean (fewer than two values: the mean itself)."""
    if not values:
        return 0.0, 0.0
    if len(values) < 2:
        return values[0], values[0]
    result = stats.bootstrap((np.asarray(values, dtype=float),), np.mean, confidence_level=0.95,
                             n_resamples=resamples, method="percentile", random_state=seed)
    return float(result.confidence_interval.low), float(result.confidence_interval.high)


@dataclass
class RunSummary:
    directory: Path
    info: dict[str, Any]
    questions: int
    em: float
    em_interval: tuple[float, float]
    f1: float
    f1_interval: tuple[float, float]
    #: Mean usage per question (tokens, calls, seconds).
    cost: dict[str, float]
    #: Mean dollars per question; ``None`` when a model of the run is not in the price table.
    dollars: float | None
    #: Mean actions per question on the final path (rolled-back actions left out).
    actions: dict[str, float]
    steps_histogram: dict[int, int]
    #: QALD's figures, for QALD datasets.
    qald: QaldScores | None
    #: What the last part left out: dropped, excluded, skipped, failed (see :func:`left_out`).
    left_out: dict[str, Any] = field(default_factory=dict)


def load_run(directory: Path) -> tuple[dict[str, Any], list[dict[str, Any]]]:
    if not directory.is_dir():
        raise ValueError(f"{directory} is not a directory: name the --out directory of a run")
    info = read_run_info(directory)
    records = read_jsonl(directory / "results.jsonl")
    if not records:
        raise ValueError(f"{directory} holds no results")
    return info, records


def model_of(info: dict[str, Any], record: dict[str, Any]) -> str:
    """The model that answered *record* (its part's, when the directory has several parts)."""
    parts = info.get("parts", [])
    part = record.get("part", 0)
    if part < len(parts):
        return parts[part]["settings"].get("model", info.get("model", "?"))
    return info.get("model", "?")


def left_out(info: dict[str, Any]) -> dict[str, Any]:
    """The last part's counts of questions in the split, skipped, dropped, excluded and not yet answered."""
    parts = info.get("parts", [])
    summary = next((part["summary"] for part in reversed(parts) if "summary" in part), None)
    if summary is None:
        return {}
    gold = summary.get("gold", {})
    return {"in_split": summary.get("in_split"), "asked": summary.get("asked"),
            "skipped_language": len(summary.get("skipped_language", [])),
            "dropped_empty": len(gold.get("empty", [])), "excluded_cut": len(gold.get("cut", [])),
            "gold_failed": sum(len(ids) for ids in gold.get("failed", {}).values()),
            "unfinished": sum(summary.get("failures", {}).values())}


def _qald_scores(records: list[dict[str, Any]], numbers_by_value: bool) -> QaldScores:
    scores = [QuestionScore(**record["qald"]) if "qald" in record
              else score_question(record["predicted_answer"], record["gold_answer"], numbers_by_value)
              for record in records]
    return aggregate(scores)


def summarize(directory: Path, prices: dict[str, Price] | None = None) -> RunSummary:
    info, records = load_run(directory)
    count = len(records)
    ems = [100.0 * record["em"] for record in records]
    f1s = [100.0 * record["f1"] for record in records]
    cost = {name: sum(record["usage"].get(name, 0) for record in records) / count for name in USAGE}
    dollars = None
    if prices is not None:
        models = [model_of(info, record) for record in records]
        if all(model in prices for model in models):
            dollars = sum(prices[model].dollars(record["usage"]) for model, record in zip(models, records)) / count
    actions = {name: sum(record["actions"].get(name, 0) for record in records) / count for name in ACTIONS}
    histogram = Counter(sum(record["actions"].values()) for record in records)
    qald = _qald_scores(records, info.get("numbers") == "value") if info.get("dataset") in QALD_DATASETS else None
    return RunSummary(directory, info, count, sum(ems) / count, bootstrap_interval(ems), sum(f1s) / count,
                      bootstrap_interval(f1s), cost, dollars, actions, dict(sorted(histogram.items())), qald,
                      left_out(info))


def plot_title(summary: RunSummary) -> str:
    info = summary.info
    system = "one-call baseline" if info.get("baseline") else "SPINACH agent"
    models = sorted({part["settings"].get("model", "?") for part in info.get("parts", [])}) or ["?"]
    return (f"F1 against actions: {system}, {' + '.join(models)}, {info.get('dataset', '?')} "
            f"{info.get('split', '?')} ({summary.questions} questions)")


def plot_run(summary: RunSummary) -> tuple[Path, Path]:
    """The run's F1-against-actions figure, as PNG and SVG beside its results."""
    from harness.plots import plot_f1_against_actions

    _, records = load_run(summary.directory)
    counts = [sum(record["actions"].values()) for record in records]
    return plot_f1_against_actions(counts, [record["f1"] for record in records], plot_title(summary),
                                   summary.directory / "f1_vs_actions")
