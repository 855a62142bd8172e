"""A graph's questions read from a file given on the command line, in the formats researchers keep them in.

============================  ====================================================  ==================
format                        shape                                                 gold answers
============================  ====================================================  ==================
QALD-JSON (``.json``)         ``{"questions": [{id, question: [{language,           where ``answers``
                              string}], query: {sparql}, answers}]}``               holds them
TEXT2SPARQL (``.yml``)        ``questions: [{id, question: {en: ...},               no (run the query)
                              query: {sparql}}]``, as CK25's ``questions.yml``
KQA Pro (``.json``)           ``[{question, choices, answer, sparql, program}]``    ``answer`` strings
SPINACH (``.json``)           ``[{id, question, sparql}]``                          no
============================  ====================================================  ==================

The examples are those :mod:`harness.datasets` reads for its named
benchmarks, so a run over a file is scored, reported and resumed like one
over a named split (its ``source`` is the file's name, its split ``file``); an
export names the dataset by the id the file declares, else by the file's name.
"""

from __future__ import annotations

import json
from dataclasses import replace
from pathlib import Path
from typing import Any

import yaml

from harness.datasets import FILE_FORMATS, DatasetError, LoadedDataset

#: The largest question file read (a parse of a file someone else wrote is bounded).
MAX_BYTES = 64 * 1024 * 1024
#: The formats read, each a record of :data:`harness.datasets.FILE_FORMATS` (its loader and its scorers).
FORMATS = tuple(FILE_FORMATS)


def question_format(path: Path, data: Any) -> str:
    """Which of :data:`FORMATS` *data* (read from *path*) is in; :class:`DatasetError` naming what it saw."""
    if path.suffix.lower() in (".yml", ".yaml"):
        return "text2sparql"
    if isinstance(data, dict) and isinstance(data.get("questions"), list):
        return "qald-json"
    if isinstance(data, list) and data and isinstance(data[0], dict):
        if "choices" in data[0]:
            return "kqapro"
        if "sparql" in data[0]:
            return "spinach"
    raise DatasetError(f"{path}: not a question file this harness reads: expected QALD-JSON ({{\"questions\": "
                       "[...]}}), a TEXT2SPARQL questions YAML, KQA Pro's JSON list or a SPINACH-style list "
                       "of {id, question, sparql}")


def read_question_file(path: str | Path, language: str = "en") -> tuple[str, LoadedDataset]:
    """The format and the examples of the question file at *path* in *language* (others counted as left out)."""
    path = Path(path)
    try:
        if path.stat().st_size > MAX_BYTES:
            raise DatasetError(f"{path}: larger than {MAX_BYTES // 2 ** 20} MB, too large for a question file")
        text = path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as error:
        raise DatasetError(f"cannot read {path}: {error}") from error
    try:
        data = yaml.load(text, Loader=getattr(yaml, "CSafeLoader", yaml.SafeLoader)) \
            if path.suffix.lower() in (".yml", ".yaml") else json.loads(text)
    except (yaml.YAMLError, ValueError) as error:
        raise DatasetError(f"{path} is not valid {'YAML' if path.suffix.lower() in ('.yml', '.yaml') else 'JSON'}: "
                           f"{error}") from error
    kind = question_format(path, data)
    loaded = FILE_FORMATS[kind].read(data, language, path.stem, "file", path, entry="a question")
    return kind, replace(loaded, dataset_id=declared_id(data))


def declared_id(data: Any) -> str:
    """The dataset id a file declares (QALD-JSON's and TEXT2SPARQL's ``dataset: {id: ...}``), "" for none."""
    dataset = data.get("dataset") if isinstance(data, dict) else None
    identifier = dataset.get("id") if isinstance(dataset, dict) else None
    return str(identifier) if isinstance(identifier, (str, int)) and str(identifier).strip() else ""
