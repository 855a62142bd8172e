"""Numbers for a report: EM and F1 with bootstrap intervals, QALD's metric, what was left out, cost, actions.

Intervals are 95% percentile bootstrap intervals of the mean over questions
(``scipy.stats.bootstrap``, seeded, so the same data give the same interval);
with repeats, over each question's mean across repeats, and the mean and
spread of the repeats' own figures are given beside it.  The paper's figures
are shown only beside a run they can be compared with (:func:`paper_gaps`).
"""

from __future__ import annotations

import json
import re
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
from scipy import stats

import agent.actions
from harness.datasets import FILE_GOLD, file_gold_caveat
from harness.diagnostics import DIAGNOSES
from harness.evaluation import question_key, read_jsonl
from harness.gerbil_metric import GerbilScores, count_matches, gerbil_scores
from harness.prices import Price
from harness.qald_metric import QaldScores, QuestionScore, aggregate, score_question
from harness.run_info import MEASURED, read_run_info
from harness.qald_json import qald_answer
from harness.text2sparql_metric import SetScores
from harness.text2sparql_metric import aggregate as set_aggregate
from harness.text2sparql_metric import score_question as set_score

#: The paper's figures (EM, F1) for the SPINACH agent with GPT-4o; the baseline's are not recorded here.
PAPER = {
    ("spinach", "dev"): (21.4, 46.4), ("spinach", "test"): (16.4, 45.3),
    ("qald7", "test"): (62.2, 74.6), ("qald9plus", "test"): (58.3, 71.6), ("qald10", "test"): (63.1, 69.5),
    ("wikiwebquestions", "dev"): (61.2, 72.3), ("wikiwebquestions", "test"): (59.9, 70.3),
}
#: Questions in each published split (English): a run over a file of another size is not the paper's split.
SPLIT_SIZES = {("spinach", "dev"): 155, ("spinach", "test"): 165, ("qald7", "test"): 50, ("qald9plus", "test"): 136,
               ("qald10", "test"): 394, ("wikiwebquestions", "dev"): 454, ("wikiwebquestions", "test"): 1431}
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
    #: The project's stricter variant of QALD's figures, for QALD datasets (:mod:`harness.qald_metric`).
    qald: QaldScores | None
    #: What the last part left out: dropped, excluded, skipped, failed (see :func:`left_out`).
    left_out: dict[str, Any] = field(default_factory=dict)
    #: The mean F1 and EM of each repeat of the split, in order (one figure without repeats).
    repeat_f1: list[float] = field(default_factory=list)
    repeat_em: list[float] = field(default_factory=list)
    #: F1 and EM after upstream's post-processing, a separate figure (``None``: not recorded).
    postprocessed: tuple[float, float] | None = None
    #: How many answers got each diagnosis, and which questions (id, repeat) got each.
    diagnoses: dict[str, int] = field(default_factory=dict)
    diagnosed: dict[str, list[tuple[str, int]]] = field(default_factory=dict)
    #: The model names the endpoint reported, with how many answers each; the protocols used; how runs ended.
    models: dict[str, int] = field(default_factory=dict)
    protocols: dict[str, int] = field(default_factory=dict)
    stop_reasons: dict[str, int] = field(default_factory=dict)
    #: Why the paper's figures are not comparable with this run (empty: they are).
    paper_gaps: list[str] = field(default_factory=list)
    #: A caveat about the run's gold answers (QALD-10's 2022 file answers), "" when none.
    gold_caveat: str = ""
    #: GERBIL QA's figures, for QALD datasets and QALD-JSON question files (:mod:`harness.gerbil_metric`).
    gerbil: GerbilScores | None = None
    #: The TEXT2SPARQL client's set figures (:mod:`harness.text2sparql_metric`).
    text2sparql: SetScores | None = None
    #: Which engine answered each final query (``wdqs``; ``qlever`` when the query service was busy or too
    #: slow), with how many answers each; "(not recorded)" for records without a final query or written before.
    engines: dict[str, int] = field(default_factory=dict)


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
    """The last part's counts of questions in the split, skipped, dropped, excluded and not yet answered, and of
    the examples an example store kept out of the prompts (``None`` without a store)."""
    parts = info.get("parts", [])
    summary = next((part["summary"] for part in reversed(parts) if "summary" in part), None)
    if summary is None:
        return {}
    gold = summary.get("gold", {})
    return {"in_split": summary.get("in_split"), "asked": summary.get("asked"),
            "skipped_language": len(summary.get("skipped_language", [])),
            "dropped_empty": len(gold.get("empty", [])), "excluded_cut": len(gold.get("cut", [])),
            "gold_failed": sum(len(ids) for ids in gold.get("failed", {}).values()),
            "unfinished": sum(summary.get("failures", {}).values()),
            "examples": summary.get("examples")}


def _qald_scores(records: list[dict[str, Any]], numbers_by_value: bool) -> QaldScores:
    scores = [QuestionScore(**record["qald"]) if "qald" in record
              else score_question(record["predicted_answer"], record["gold_answer"], numbers_by_value)
              for record in records]
    return aggregate(scores)


def _gerbil_scores(records: list[dict[str, Any]]) -> GerbilScores:
    return gerbil_scores(count_matches(record["predicted_answer"], record["gold_answer"]) for record in records)


def _text2sparql_scores(records: list[dict[str, Any]]) -> SetScores:
    return set_aggregate(set_score(qald_answer(record["gold_answer"]),
                                   qald_answer(record["predicted_answer"], record.get("predicted_variables")))
                         for record in records)


def per_question(records: list[dict[str, Any]], field_name: str) -> list[float]:
    """Each question's *field_name* (``f1``, ``em``) in percent, its mean across repeats."""
    grouped: dict[tuple, list[float]] = {}
    for record in records:
        grouped.setdefault(question_key(record), []).append(100.0 * float(record[field_name]))
    return [sum(values) / len(values) for values in grouped.values()]


def per_repeat(records: list[dict[str, Any]], field_name: str) -> list[float]:
    """Each repeat's mean *field_name* in percent, repeats in order."""
    grouped: dict[int, list[float]] = {}
    for record in records:
        grouped.setdefault(int(record.get("repeat", 1)), []).append(100.0 * float(record[field_name]))
    return [sum(values) / len(values) for _, values in sorted(grouped.items())]


def is_qald_run(info: dict[str, Any]) -> bool:
    """Whether QALD's figures (GERBIL's and the stricter variant) apply: a named QALD dataset, or a researcher's
    own QALD-JSON question file."""
    settings = last_settings(info)
    return settings.get("dataset") in QALD_DATASETS or settings.get("questions_format") == "qald-json"


def dataset_id(info: dict[str, Any]) -> str:
    """The dataset's id in an export: the id a question file declares, else its name; ``dataset-split`` for a
    named benchmark."""
    settings = last_settings(info)
    if settings.get("split") == "file":
        return str(settings.get("dataset_id") or settings.get("dataset") or "run")
    return f"{settings.get('dataset', 'run')}-{settings.get('split', '')}"


def last_settings(info: dict[str, Any]) -> dict[str, Any]:
    return info.get("parts", [{}])[-1].get("settings", info) if info.get("parts") else info


def graph_of_run(info: dict[str, Any]) -> str:
    """The name of the graph a run asked: ``wikidata`` for live Wikidata, and for a run that names none."""
    graph = str(last_settings(info).get("graph", "live Wikidata"))
    return "wikidata" if graph == "live Wikidata" else graph.removesuffix(" (local store)")


def action_columns(infos: list[dict[str, Any]]) -> dict[str, str]:
    """Each action as records count it, and its name in a report: as the runs' graph names it when they share
    one (``search_graph`` off Wikidata), as recorded when they do not."""
    graphs = {graph_of_run(info) for info in infos}
    return agent.actions.shown_names(graphs.pop()) if len(graphs) == 1 else {name: name for name in ACTIONS}


def paper_gaps(info: dict[str, Any], left: dict[str, Any], models: dict[str, int]) -> list[str]:
    """Why the paper's figures cannot stand beside this run: not the whole split, another gold, a local
    knowledge base, another language, no model name reported, parts run with different settings."""
    settings = last_settings(info)
    dataset, split = settings.get("dataset", "?"), settings.get("split", "?")
    gaps = []
    if settings.get("baseline"):
        gaps.append("a one-call baseline run (the paper's figures here are the agent's)")
    if (dataset, split) not in PAPER:
        gaps.append(f"the paper gives no figure for {dataset} {split}")
    if not left:
        gaps.append("run.json records no counts, so whether the whole split was scored is unknown")
    else:
        if left.get("asked") != left.get("in_split"):
            gaps.append(f"not the whole split: {left.get('asked')} of {left.get('in_split')} questions asked")
        elif (dataset, split) in SPLIT_SIZES and left.get("in_split") != SPLIT_SIZES[dataset, split]:
            gaps.append(f"the dataset file holds {left.get('in_split')} questions, the published split "
                        f"{SPLIT_SIZES[dataset, split]}")
        unscored = left.get("unfinished", 0) + left.get("gold_failed", 0)
        if unscored:
            gaps.append(f"{unscored} questions not scored yet (model, knowledge base or gold query failed)")
    if settings.get("language", "en") != "en":
        gaps.append("the paper's questions are in English")
    if settings.get("gold", "file") == "file" and split in FILE_GOLD.get(dataset, {}):
        gaps.append(f"gold from the dataset file ({FILE_GOLD[dataset][split]}); the paper ran the gold queries")
    if settings.get("kb", "wikidata") != "wikidata":
        gaps.append("answered from a local store, not live Wikidata")
    if not [name for name in models if name != "(not reported)"]:
        gaps.append("the endpoint reported no model name")
    if len({json.dumps({key: part["settings"].get(key) for key in MEASURED}, sort_keys=True)
            for part in info.get("parts", [])}) > 1:
        gaps.append("its parts were run with different settings (--force)")
    return gaps


def summarize(directory: Path, prices: dict[str, Price] | None = None) -> RunSummary:
    info, records = load_run(directory)
    count = len(records)
    ems, f1s = per_question(records, "em"), per_question(records, "f1")
    cost = {name: sum(record["usage"].get(name, 0) for record in records) / count for name in USAGE}
    dollars = None
    if prices is not None:
        models = [model_of(info, record) for record in records]
        if all(model in prices for model in models):
            dollars = sum(prices[model].dollars(record["usage"]) for model, record in zip(models, records)) / count
    actions = {name: sum(record["actions"].get(name, 0) for record in records) / count for name in ACTIONS}
    histogram = Counter(sum(record["actions"].values()) for record in records)
    is_qald = is_qald_run(info)
    qald = _qald_scores(records, info.get("numbers") == "value") if is_qald else None
    postprocessed = None
    if any("postprocessed" in record for record in records):
        scored = [record.get("postprocessed") or record for record in records]
        postprocessed = (100 * sum(float(r["f1"]) for r in scored) / count,
                         100 * sum(float(r["em"]) for r in scored) / count)
    diagnosed: dict[str, list[tuple[str, int]]] = {name: [] for name in DIAGNOSES}
    for record in records:
        if "diagnosis" in record:
            diagnosed.setdefault(record["diagnosis"], []).append((str(record["id"]), int(record.get("repeat", 1))))
    models = dict(Counter(record.get("model") or "(not reported)" for record in records))
    left = left_out(info)
    settings = last_settings(info)
    golds = {question_key(record): record["gold_answer"] for record in records}
    gold_caveat = file_gold_caveat(settings.get("dataset", ""), list(golds.values())) \
        if settings.get("gold", "file") == "file" else None
    return RunSummary(directory, info, len({question_key(record) for record in records}), sum(ems) / len(ems),
                      bootstrap_interval(ems), sum(f1s) / len(f1s), bootstrap_interval(f1s), cost, dollars, actions,
                      dict(sorted(histogram.items())), qald, left, per_repeat(records, "f1"),
                      per_repeat(records, "em"), postprocessed,
                      {name: len(found) for name, found in diagnosed.items()},
                      {name: sorted(found, key=_natural_id) for name, found in diagnosed.items() if found},
                      models, dict(Counter(record.get("protocol", "tools") for record in records)),
                      dict(Counter(record.get("stop_reason", "?") for record in records).most_common()),
                      paper_gaps(info, left, models), gold_caveat or "",
                      _gerbil_scores(records) if is_qald else None, _text2sparql_scores(records),
                      dict(Counter(record.get("engine") or "(not recorded)" for record in records).most_common()))


def _natural_id(item: tuple[str, int]) -> tuple:
    return ([int(part) if part.isdigit() else part for part in re.split(r"(\d+)", item[0])], item[1])


def model_label(summary: RunSummary) -> str:
    """The models that answered, as the endpoint named them; the name asked for too when it differs."""
    asked = sorted({part["settings"].get("model", "?") for part in summary.info.get("parts", [])}) or ["?"]
    reported = [name for name in summary.models if name != "(not reported)"]
    if not reported:
        return " + ".join(asked) + " (not reported by the endpoint)"
    return " + ".join(reported) + ("" if set(reported) <= set(asked) else f" (asked for {' + '.join(asked)})")


def plot_title(summary: RunSummary, answers: int) -> str:
    """The figure's title; it counts what the figure's points and bins count: *answers*, one per question and
    repeat."""
    info = summary.info
    system = "one-call baseline" if info.get("baseline") else "SPINACH agent"
    models = [model_label(summary)]
    repeats = len(summary.repeat_f1)
    counted = (f"{answers} answers: {summary.questions} questions x {repeats} repeats" if repeats > 1
               else f"{answers} questions")
    return (f"F1 against actions: {system}, {' + '.join(models)}, {info.get('dataset', '?')} "
            f"{info.get('split', '?')} ({counted})")


def plot_run(summary: RunSummary) -> tuple[Path, Path]:
    """The run's F1-against-actions figure, as PNG and SVG beside its results."""
    from harness.plots import plot_f1_against_actions

    _, records = load_run(summary.directory)
    counts = [sum(record["actions"].values()) for record in records]
    return plot_f1_against_actions(counts, [record["f1"] for record in records], plot_title(summary, len(records)),
                                   summary.directory / "f1_vs_actions")
