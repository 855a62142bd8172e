"""Two runs question by question: what changed, and whether the change in mean F1 is more than chance.

Questions are paired by (dataset, split, id), so runs over several datasets
never pair two different questions that share an id; a run with repeats
counts each question's mean F1 across its repeats.  The test is a paired
approximate randomization (``scipy.stats.permutation_test`` swapping each
question's two scores, exact when there are few questions) on per-question
row-major F1; the interval of the mean difference is a paired bootstrap.

Two runs are comparable only when they measured the same thing: the same
dataset and split, gold from the same source, numbers compared the same
way, the same answer mode (KQA Pro's open or multiple-choice setting), the
same graph, and by content (:mod:`harness.fingerprints`) the same questions
and gold and the same graph's triples: names alone pair two files both called
``questions.yml`` (:func:`comparison_gaps`, :func:`question_gaps`).  What
the comparison measures (the prompts, the model, the profile, the example
store) may differ, and is said above the table (:func:`compared_parts`).
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any

import numpy as np
from scipy import stats

from harness.evaluation import Key, question_key
from harness.datasets import Gold, dataset_of
from harness.fingerprints import MEASURED_PARTS, PARTS, differences
from harness.reporting import last_settings


#: The settings two compared runs must share, with the words that name them.
COMPARED = {"dataset": "dataset", "split": "split", "gold": "gold source", "numbers": "numbers mode",
            "setting": "answer mode", "graph": "graph"}


def _settings(info: dict[str, Any]) -> dict[str, Any]:
    """The last part's settings, with defaults for settings older runs did not record."""
    settings = dict(last_settings(info))
    settings.setdefault("gold", "file")
    settings.setdefault("numbers", "lexical")
    if dataset_of(settings).gold is Gold.STRINGS:
        settings.setdefault("setting", "open")
    if "graph" not in settings:
        settings["graph"] = "live Wikidata" if settings.get("kb", "wikidata") == "wikidata" else "a local store"
    return settings


def comparison_gaps(before: dict[str, Any], after: dict[str, Any]) -> list[str]:
    """Why the runs recorded by two ``run.json`` (*before*, *after*) measured different things; empty when they
    did not."""
    first, second = _settings(before), _settings(after)
    gaps = [f"{words} {first.get(key)!r} (before) and {second.get(key)!r} (after)"
            for key, words in COMPARED.items() if first.get(key) != second.get(key)]
    prints, later = first.get("fingerprint") or {}, second.get("fingerprint") or {}
    for part in MEASURED_PARTS:
        if differences(prints, later, (part,)):
            gaps.append(f"{PARTS[part]} (fingerprint {prints[part]} before, {later[part]} after)")
    return gaps


def compared_parts(before: dict[str, Any], after: dict[str, Any]) -> list[str]:
    """What the two runs differ in that a comparison measures (prompts, model, profile, example store), in words
    (nothing is known of a run made before runs kept fingerprints)."""
    first, second = _settings(before), _settings(after)
    return differences(first.get("fingerprint"), second.get("fingerprint"),
                       tuple(part for part in PARTS if part not in MEASURED_PARTS))


def unfingerprinted(before: dict[str, Any], after: dict[str, Any]) -> list[str]:
    """Which of the two runs (``before``, ``after``) record no fingerprint: their content is known by names."""
    return [name for name, info in (("before", before), ("after", after))
            if "fingerprint" not in _settings(info)]


def question_gaps(first: list[dict[str, Any]], second: list[dict[str, Any]]) -> list[str]:
    """Paired questions (same dataset, split and id) that are not the same question: other text or gold query."""
    old, new = _by_question(first), _by_question(second)
    unlike = [key for key in sorted(set(old) & set(new), key=_natural)
              if (old[key].get("question"), old[key].get("gold_sparql"))
              != (new[key].get("question"), new[key].get("gold_sparql"))]
    if not unlike:
        return []
    dataset, split, key = unlike[0]
    return [f"{len(unlike)} paired questions with other text or gold query (e.g. {dataset} {split} {key}: "
            f"{old[unlike[0]].get('question', '')[:60]!r} before, {new[unlike[0]].get('question', '')[:60]!r} "
            "after)"]


@dataclass
class Change:
    key: Key
    question: str
    before: float
    after: float


@dataclass
class Comparison:
    better: list[Change]
    worse: list[Change]
    only_before: list[Change]
    only_after: list[Change]
    paired: int
    mean_before: float
    mean_after: float
    #: 95% paired bootstrap interval of mean(after - before).
    difference_interval: tuple[float, float]
    #: Two-sided p-value of the paired randomization test (1.0 when nothing changed).
    p_value: float


def _natural(key: Key) -> tuple:
    """Sort ids as people count: 2 before 10."""
    return (key[0], key[1], [int(part) if part.isdigit() else part for part in re.split(r"(\d+)", key[2])])


def _by_question(records: list[dict[str, Any]]) -> dict[Key, dict[str, Any]]:
    """One line per question, its F1 the mean over the question's repeats."""
    grouped: dict[Key, list[dict[str, Any]]] = {}
    for record in records:
        grouped.setdefault(question_key(record), []).append(record)
    return {key: {**lines[0], "f1": sum(float(line["f1"]) for line in lines) / len(lines)}
            for key, lines in grouped.items()}


def compare_records(first: list[dict[str, Any]], second: list[dict[str, Any]], resamples: int = 9999,
                    seed: int = 0) -> Comparison:
    old, new = _by_question(first), _by_question(second)
    shared = sorted(set(old) & set(new), key=_natural)
    changes = [Change(key, new[key]["question"], old[key]["f1"], new[key]["f1"]) for key in shared]
    before = np.array([change.before for change in changes], dtype=float)
    after = np.array([change.after for change in changes], dtype=float)
    interval, p_value = (0.0, 0.0), 1.0
    if len(changes) >= 2 and np.any(before != after):
        p_value = float(stats.permutation_test(
            (before, after), lambda x, y, axis: np.mean(y - x, axis=axis), permutation_type="samples",
            vectorized=True, n_resamples=resamples, random_state=seed).pvalue)
        bootstrap = stats.bootstrap((before, after), lambda x, y, axis: np.mean(y - x, axis=axis), paired=True,
                                    vectorized=True, n_resamples=resamples, method="percentile", random_state=seed)
        interval = (float(bootstrap.confidence_interval.low), float(bootstrap.confidence_interval.high))
    elif changes:
        difference = float(np.mean(after - before))
        interval = (difference, difference)
    return Comparison(
        better=[change for change in changes if change.after > change.before],
        worse=[change for change in changes if change.after < change.before],
        only_before=[Change(key, old[key]["question"], old[key]["f1"], 0.0)
                     for key in sorted(set(old) - set(new), key=_natural)],
        only_after=[Change(key, new[key]["question"], 0.0, new[key]["f1"])
                    for key in sorted(set(new) - set(old), key=_natural)],
        paired=len(changes), mean_before=float(before.mean()) if len(changes) else 0.0,
        mean_after=float(after.mean()) if len(changes) else 0.0, difference_interval=interval, p_value=p_value)
