"""The evaluation datasets, read into one example type.

==================  ==============================================  ==========================
name                file(s) under the data directory                gold answers in the file
==================  ==============================================  ==========================
spinach             spinach/{dev,test}.json                         no (run the gold query)
qald7               qald7/test.json                                 no
qald9plus           qald9plus/{train,test}.json                     no
qald10              qald10/qald_10.json (QALD-JSON, multilingual)   yes, incl. booleans
wikiwebquestions    wikiwebquestions/{dev,test}.json                dev only
kqapro              kqapro/{train,val,test}.json                    train and val (strings)
==================  ==============================================  ==========================

KQA Pro's questions carry no id: a question's id is its place in its file
(from 0), the order its leaderboard reads predictions in.  Their gold answer
is a string (:attr:`Example.answer`), judged by :mod:`harness.kqapro`.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from agent.kb.base import Binding

SPLITS: dict[str, dict[str, str]] = {
    "spinach": {"dev": "spinach/dev.json", "test": "spinach/test.json"},
    "qald7": {"test": "qald7/test.json"},
    "qald9plus": {"train": "qald9plus/train.json", "test": "qald9plus/test.json"},
    "qald10": {"test": "qald10/qald_10.json"},
    "wikiwebquestions": {"dev": "wikiwebquestions/dev.json", "test": "wikiwebquestions/test.json"},
    "kqapro": {"train": "kqapro/train.json", "val": "kqapro/val.json", "test": "kqapro/test.json"},
}
#: The split a run takes when none is named, where it is not the test split (KQA Pro's has no answers).
DEFAULT_SPLITS = {"kqapro": "val"}


#: Splits whose file carries gold answers, and what those answers are.
FILE_GOLD: dict[str, dict[str, str]] = {
    "qald10": {"test": "QALD-10's answers of 2022"},
    "wikiwebquestions": {"dev": "WikiWebQuestions' results of 2023"},
}
#: Typed zero as QALD-10's file writes it: a "how many" question whose answer was 0 in 2022.
_ZERO = ("0", "+0")


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
    #: KQA Pro: the gold answer string (None in its test split), the ten choices, the program's functions.
    answer: str | None = None
    choices: list[str] = field(default_factory=list)
    functions: list[str] = field(default_factory=list)
    #: The forum thread a SPINACH question was drawn from: its heading and its archive month's URL.
    title: str = ""
    url: str = ""


def default_split(dataset: str) -> str:
    if dataset in DEFAULT_SPLITS:
        return DEFAULT_SPLITS[dataset]
    return "test" if "test" in SPLITS[dataset] else next(iter(SPLITS[dataset]))


@dataclass
class LoadedDataset:
    """The examples of one split, and the ids of questions left out for want of text in the language asked."""

    examples: list[Example]
    without_language: list[str]
    #: The id a question file declares for its dataset (``dataset: {id: ...}``), "" when it declares none.
    dataset_id: str = ""


def load_dataset(dataset: str, split: str | None, data_dir: str | Path, language: str = "en") -> list[Example]:
    """The examples of *dataset*'s *split* in *language* (QALD-10 questions without that language left out)."""
    return read_dataset(dataset, split, data_dir, language).examples


def read_dataset(dataset: str, split: str | None, data_dir: str | Path, language: str = "en") -> LoadedDataset:
    """Like :func:`load_dataset`, also saying which questions had no text in *language* (QALD-10 in ``zh``: 12)."""
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
            examples = [qald_example(item, language, dataset, split) for item in data["questions"]]
            if not any(examples):
                raise DatasetError(f"{path}: no question has text in {language!r}")
            return LoadedDataset([example for example in examples if example],
                                 [str(item["id"]) for item, example in zip(data["questions"], examples) if not example])
        if dataset == "kqapro":
            return LoadedDataset([kqapro_example(index, item, split) for index, item in enumerate(data)], [])
        return LoadedDataset([flat_example(item, dataset, split) for item in data], [])
    except (KeyError, TypeError, IndexError) as error:
        raise DatasetError(f"{path}: an entry lacks a field or has the wrong shape ({error!r})") from error


def flat_example(item: dict[str, Any], dataset: str, split: str) -> Example:
    question = item.get("question") or item["utterance"]
    results = item.get("results")
    return Example(id=str(item["id"]), question=question, gold_sparql=item["sparql"],
                   gold_answer=results if isinstance(results, list) else None, source=dataset, split=split,
                   title=str(item.get("title") or ""), url=str(item.get("url") or ""))


def kqapro_example(index: int, item: dict[str, Any], split: str) -> Example:
    choices = item["choices"]
    if not isinstance(item["question"], str) or not isinstance(choices, list):
        raise TypeError(f"question {index}: question must be text and choices a list")
    return Example(id=str(index), question=item["question"], gold_sparql=item.get("sparql", ""), gold_answer=None,
                   source="kqapro", split=split, answer=item.get("answer"), choices=[str(c) for c in choices],
                   functions=[step["function"] for step in item.get("program", [])])


def qald_example(item: dict[str, Any], language: str, dataset: str, split: str) -> Example | None:
    strings = {entry["language"]: entry["string"] for entry in item["question"]}
    if not strings.get(language):
        return None
    answer = item["answers"][0] if item.get("answers") else None
    gold: list[Binding] | bool | None = None
    if answer is not None:
        gold = bool(answer["boolean"]) if "boolean" in answer else answer["results"]["bindings"]
    return Example(id=str(item["id"]), question=strings[language], gold_sparql=item["query"]["sparql"],
                   gold_answer=gold, source=dataset, split=split)


def file_gold_caveat(dataset: str, golds: list[list[Binding] | bool | None]) -> str | None:
    """What to know before scoring against QALD-10's file answers, counted from *golds*; ``None`` otherwise."""
    if dataset != "qald10":
        return None
    zero = sum(isinstance(gold, list) and len(gold) == 1
               and [term.get("value") for term in gold[0].values()] in ([value] for value in _ZERO) for gold in golds)
    yes_no = [gold for gold in golds if isinstance(gold, bool)]
    false = f" and {sum(not answer for answer in yes_no)} of {len(yes_no)} yes/no answers are false" if yes_no else ""
    return (f"scored against QALD-10's file answers, written in 2022: {zero} questions have the gold answer "
            f"\"0\"{false}, and Wikidata has changed since; the paper ran the gold queries instead. To do so: "
            "add --gold live (in a new --out directory).")
