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

Each dataset is one :class:`Dataset` record in :data:`DATASETS` (and each
question-file format one in :data:`FILE_FORMATS`): its files, its loader, its
scorers, its graph, its languages, its published sizes and the paper's
figures.  Code asks a run's record (:func:`dataset_of`), never its name.

KQA Pro's questions carry no id: a question's id is its place in its file
(from 0), the order its leaderboard reads predictions in.  Their gold answer
is a string (:attr:`Example.answer`), judged by :mod:`harness.kqapro`.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from enum import Enum
from pathlib import Path
from typing import Any

from agent.kb.base import Binding

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
    record = dataset_named(dataset)
    split = split or record.default_split
    if split not in record.splits:
        raise DatasetError(f"{dataset} has no split {split!r}; it has {', '.join(record.splits)}")
    path = Path(data_dir) / record.splits[split]
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except OSError as error:
        raise DatasetError(f"cannot read {path}: {error.strerror} (fetch it with scripts/download_datasets.py)")
    except ValueError as error:
        raise DatasetError(f"{path} is not valid JSON: {error}") from error
    return record.read(data, language, dataset, split, path)


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
    if not DATASETS.get(dataset, FILE_FORMATS["spinach"]).dated_file_gold:
        return None
    zero = sum(isinstance(gold, list) and len(gold) == 1
               and [term.get("value") for term in gold[0].values()] in ([value] for value in _ZERO) for gold in golds)
    yes_no = [gold for gold in golds if isinstance(gold, bool)]
    false = f" and {sum(not answer for answer in yes_no)} of {len(yes_no)} yes/no answers are false" if yes_no else ""
    return (f"scored against QALD-10's file answers, written in 2022: {zero} questions have the gold answer "
            f"\"0\"{false}, and Wikidata has changed since; the paper ran the gold queries instead. To do so: "
            "add --gold live (in a new --out directory).")


# -- loaders: a parsed file's entries as examples ------------------------------------------------------

def load_flat(data: Any, language: str, source: str, split: str) -> LoadedDataset:
    """SPINACH's layout, also QALD-7's and QALD-9-plus's as SPINACH ships them: ``[{id, question, sparql}]``."""
    return LoadedDataset([flat_example(item, source, split) for item in data], [])


def load_qald_json(data: Any, language: str, source: str, split: str) -> LoadedDataset:
    """QALD-JSON: questions without text in *language* are left out and named."""
    examples = [qald_example(item, language, source, split) for item in data["questions"]]
    if not any(examples):
        raise DatasetError(f"no question has text in {language!r}")
    return LoadedDataset([example for example in examples if example],
                         [str(item["id"]) for item, example in zip(data["questions"], examples) if not example])


def load_text2sparql(data: Any, language: str, source: str, split: str) -> LoadedDataset:
    """A TEXT2SPARQL questions file (CK25's ``questions.yml``), read as QALD-JSON."""
    return load_qald_json({"questions": [_text2sparql(item) for item in data["questions"]]}, language, source, split)


def load_kqapro(data: Any, language: str, source: str, split: str) -> LoadedDataset:
    """KQA Pro's list: a question's id is its place in the file, its source always ``kqapro``."""
    return LoadedDataset([kqapro_example(index, item, split) for index, item in enumerate(data)], [])


def _text2sparql(item: dict[str, Any]) -> dict[str, Any]:
    """A TEXT2SPARQL question as a QALD-JSON one (``question: {en: ...}`` becomes a list of language strings)."""
    return {"id": item["id"], "query": {"sparql": item["query"]["sparql"]},
            "question": [{"language": language, "string": text} for language, text in item["question"].items()]}


Loader = Callable[[Any, str, str, str], LoadedDataset]


# -- the registry ----------------------------------------------------------------------------------------

class Gold(Enum):
    """What a dataset's gold answers are, and so how a run over it is run and judged."""

    #: SPARQL results: the file's, else its gold query's on the knowledge base; answers are compared as results.
    RESULTS = "results"
    #: Answer strings (KQA Pro): the agent's answer is read into a string and judged as the dataset judges it.
    STRINGS = "strings"


@dataclass(frozen=True)
class Dataset:
    """Everything the harness knows about one dataset (or one question-file format), in one place.

    The evaluation reads its files through *loader*, scores each answer with
    its *scorers* (names in :data:`harness.scoring.SCORERS`, the headline
    first), and a report sets a run beside *paper*'s figures only when the
    run can be compared with them.
    """

    name: str
    #: Where each split's file is under the data directory (empty for a question-file format).
    splits: Mapping[str, str]
    #: Reads the parsed file into examples: ``loader(data, language, source, split)``.
    loader: Loader
    #: The scorers that judge its answers, by name, the headline figure's first.
    scorers: tuple[str, ...]
    #: The graph its questions are asked of (a profile name of :mod:`agent.graph`; "" for any).
    graph: str = "wikidata"
    #: What its gold answers are: SPARQL results (or the gold queries that give them), or answer strings.
    gold: Gold = Gold.RESULTS
    #: Where its gold answers come from, in words, when they are strings in its file.
    gold_words: str = ""
    #: The languages its questions come in; ``None``: any language its file holds (``--language``).
    languages: tuple[str, ...] | None = ("en",)
    #: The split a run takes when none is named ("": test, else its only split).
    default: str = ""
    #: Splits whose file carries gold answers, and what those answers are.
    file_gold: Mapping[str, str] = field(default_factory=dict)
    #: Its file's gold answers are dated (QALD-10's of 2022): numbers compare by value, a caveat is printed.
    dated_file_gold: bool = False
    #: The paper's figures (EM, F1) for the SPINACH agent with GPT-4o, by split.
    paper: Mapping[str, tuple[float, float]] = field(default_factory=dict)
    #: Questions in each published split: a run over a file of another size is not the published split.
    published: Mapping[str, int] = field(default_factory=dict)

    @property
    def default_split(self) -> str:
        return self.default or ("test" if "test" in self.splits else next(iter(self.splits), "file"))

    def read(self, data: Any, language: str, source: str, split: str, path: Path, entry: str = "an entry"
             ) -> LoadedDataset:
        """*data* parsed from *path*, as examples; a :class:`DatasetError` naming *path* (and what *entry* of it
        lacks a field) when it is malformed."""
        try:
            return self.loader(data, language, source, split)
        except DatasetError as error:
            raise DatasetError(f"{path}: {error}") from error
        except (KeyError, TypeError, IndexError, AttributeError) as error:
            raise DatasetError(f"{path}: {entry} lacks a field or has the wrong shape ({error!r})") from error


#: What a run over Wikidata's answers is scored with: the paper's row-major figures, and the TEXT2SPARQL
#: client's; QALD's datasets add GERBIL's figures and the project's stricter reading of them.
ROWS = ("row_major", "text2sparql")
QALD = ("row_major", "qald", "gerbil", "text2sparql")

#: The named benchmarks (``--dataset``).
DATASETS: dict[str, Dataset] = {record.name: record for record in (
    Dataset("spinach", {"dev": "spinach/dev.json", "test": "spinach/test.json"}, load_flat, ROWS,
            paper={"dev": (21.4, 46.4), "test": (16.4, 45.3)}, published={"dev": 155, "test": 165}),
    Dataset("qald7", {"test": "qald7/test.json"}, load_flat, QALD,
            paper={"test": (62.2, 74.6)}, published={"test": 50}),
    Dataset("qald9plus", {"train": "qald9plus/train.json", "test": "qald9plus/test.json"}, load_flat, QALD,
            paper={"test": (58.3, 71.6)}, published={"test": 136}),
    Dataset("qald10", {"test": "qald10/qald_10.json"}, load_qald_json, QALD, languages=None,
            file_gold={"test": "QALD-10's answers of 2022"}, dated_file_gold=True,
            paper={"test": (63.1, 69.5)}, published={"test": 394}),
    Dataset("wikiwebquestions", {"dev": "wikiwebquestions/dev.json", "test": "wikiwebquestions/test.json"},
            load_flat, ROWS, file_gold={"dev": "WikiWebQuestions' results of 2023"},
            paper={"dev": (61.2, 72.3), "test": (59.9, 70.3)}, published={"dev": 454, "test": 1431}),
    Dataset("kqapro", {"train": "kqapro/train.json", "val": "kqapro/val.json", "test": "kqapro/test.json"},
            load_kqapro, ("kqapro",), graph="kqapro", gold=Gold.STRINGS, default="val",
            gold_words="KQA Pro's answers in the dataset file (its test split has none)",
            published={"train": 94_376, "val": 11_797, "test": 11_797}),
)}

#: The formats of question files (``--questions``, :mod:`harness.question_files`): a run over one is scored as
#: a named benchmark in that format is; its graph is the one the store holds.
FILE_FORMATS: dict[str, Dataset] = {record.name: record for record in (
    Dataset("qald-json", {}, load_qald_json, QALD, graph="", languages=None),
    Dataset("text2sparql", {}, load_text2sparql, ROWS, graph="", languages=None),
    Dataset("kqapro", {}, load_kqapro, ("kqapro",), graph="kqapro", gold=Gold.STRINGS,
            gold_words="KQA Pro's answers in the question file"),
    Dataset("spinach", {}, load_flat, ROWS, graph=""),
)}


def dataset_named(name: str) -> Dataset:
    """The named benchmark *name*; a :class:`DatasetError` listing the others."""
    if name not in DATASETS:
        raise DatasetError(f"unknown dataset {name!r}; choose one of {', '.join(DATASETS)}")
    return DATASETS[name]


def default_split(dataset: str) -> str:
    return dataset_named(dataset).default_split


def dataset_of(settings: Mapping[str, Any]) -> Dataset:
    """The record of the dataset a run's *settings* (``run.json``) name: its question file's format for a run
    over a file (SPINACH's for runs recorded before formats were), else the named benchmark."""
    if settings.get("split") == "file":
        return FILE_FORMATS.get(settings.get("questions_format") or "spinach", FILE_FORMATS["spinach"])
    return DATASETS.get(settings.get("dataset", ""), FILE_FORMATS["spinach"])


def dataset_of_line(record: Mapping[str, Any]) -> Dataset:
    """The record of the dataset a results line's ``source`` names (SPINACH's format for a question file's)."""
    return DATASETS.get(record.get("source", ""), FILE_FORMATS["spinach"])
