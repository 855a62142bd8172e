"""The evaluation datasets, read into one example type.

==================  ==============================================  ==========================
name                file(s) under the data directory                gold answers in the file
==================  ==============================================  ==========================
spinach             spinach/{dev,test}.json                         no (run the gold query)
qald7               qald7/test.json                                 no
qald9plus           qald9plus/{train,test}.json                     no
qald10              qald10/qald_10.json (QALD-JSON, multilingual)   yes, incl. booleans
wikiwebquestions    wikiwebquestions/{dev,test}.json                dev only
==================  ==============================================  ==========================
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from agent.kb.base import Binding

SPLITS: dict[str, dict[str, str]] = {
    "spinach": {"dev": "spinach/dev.json", "test": "spinach/test.json"},
    "qald7": {"test": "qald7/test.json"},
    "qald9plus": {"train": "qald9plus/train.json", "test": "qald9plus/test.json"},
    "qald10": {"test": "qald10/qald_10.json"},
    "wikiwebquestions": {"dev": "wikiwebquestions/dev.json", "test": "wikiwebquestions/test.json"},
}


class DatasetError(ValueError):
    """A dataset file is missing or not in the expected form; the message names the file."""


@dataclass
class Example:
    id: str
    question: str
    gold_sparql: str
    #: Rows, a boolean, or None when the file has no gold answer.
    gold_answer: list[Binding] | bool | None
    source: str
    split: str


def default_split(dataset: str) -> str:
    return "test" if "test" in SPLITS[dataset] else next(iter(SPLITS[dataset]))


def load_dataset(dataset: str, split: str | None, data_dir: str | Path, language: str = "en") -> list[Example]:
    if dataset not in SPLITS:
        raise DatasetError(f"unknown dataset {dataset!r}; choose one of {', '.join(SPLITS)}")
    split = split or default_split(dataset)
    if split not in SPLITS[dataset]:
        raise DatasetError(f"{dataset} has no split {split!r}; it has {', '.join(SPLITS[dataset])}")
    path = Path(data_dir) / SPLITS[dataset][split]
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except OSError as error:
        raise DatasetError(f"cannot read {path}: {error.strerror} (fetch it with scripts/download_datasets.py)")
    except ValueError as error:
        raise DatasetError(f"{path} is not valid JSON: {error}") from error
    try:
        if dataset == "qald10":
            return [_qald(item, language, dataset, split) for item in data["questions"]]
        return [_flat(item, dataset, split) for item in data]
    except (KeyError, TypeError, IndexError) as error:
        raise DatasetError(f"{path}: an entry lacks a field or has the wrong shape ({error!r})") from error


def _flat(item: dict[str, Any], dataset: str, split: str) -> Example:
    question = item.get("question") or item["utterance"]
    results = item.get("results")
    return Example(id=str(item["id"]), question=question, gold_sparql=item["sparql"],
                   gold_answer=results if isinstance(results, list) else None, source=dataset, split=split)


def _qald(item: dict[str, Any], language: str, dataset: str, split: str) -> Example:
    strings = {entry["language"]: entry["string"] for entry in item["question"]}
    if language not in strings:
        raise KeyError(f"question {item['id']} has no {language!r} text")
    answer = item["answers"][0] if item.get("answers") else None
    gold: list[Binding] | bool | None = None
    if answer is not None:
        gold = bool(answer["boolean"]) if "boolean" in answer else answer["results"]["bindings"]
    return Example(id=str(item["id"]), question=strings[language], gold_sparql=item["query"]["sparql"],
                   gold_answer=gold, source=dataset, split=split)
