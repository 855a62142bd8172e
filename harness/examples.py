"""The datasets as solved examples, and what an evaluation must keep out of the example store.

The store's dataset examples come from the splits no evaluation scores
(:data:`EXAMPLE_SPLITS`).  A run on a test split excludes every example drawn
from that split's own forum threads (same heading and archive month: the
forum archive holds the SPINACH test threads too) and every example whose
question is one of the split's questions, and says how many of each.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from agent.examples.store import ExampleStore, SolvedExample, ThreadRef, month_of
from bot.forum import heading_text
from harness.datasets import DatasetError, Example, load_dataset

#: The splits examples may come from: every split of a dataset but the one evaluations report.
EXAMPLE_SPLITS = (("spinach", "dev"), ("qald9plus", "train"), ("wikiwebquestions", "dev"))


def archive_link(url: str, heading: str) -> str:
    """The wiki link target of a thread: ``Wikidata:Request a query/Archive/2019/11#Heading`` from its URL."""
    title = url.split("/wiki/", 1)[-1].replace("_", " ") if "/wiki/" in url else ""
    return f"{title}#{heading}" if title and heading else title


def as_solved(example: Example) -> SolvedExample:
    """A dataset example as a store example, with its forum thread when it has one."""
    heading = heading_text(example.title)
    return SolvedExample(key=f"{example.source} {example.split} {example.id}", question=example.question,
                         sparql=example.gold_sparql, source=f"{example.source} {example.split}",
                         link=archive_link(example.url, heading), date=month_of(example.url), language="en",
                         heading=heading, month=month_of(example.url))


def thread_of(example: Example) -> ThreadRef | None:
    """The forum thread a dataset question was drawn from, when the dataset says (SPINACH's titles are the
    headings' wikitext: read as the forum reader reads a heading)."""
    month = month_of(example.url)
    return ThreadRef(heading_text(example.title), month, month) if example.title and month else None


def load_example_splits(data_dir: str | Path, splits=EXAMPLE_SPLITS) -> tuple[list[SolvedExample], list[str]]:
    """The examples of *splits* found under *data_dir*, and a note for each split that could not be read."""
    found, notes = [], []
    for dataset, split in splits:
        try:
            found += [as_solved(example) for example in load_dataset(dataset, split, data_dir)]
        except DatasetError as error:
            notes.append(str(error))
    return found, notes


@dataclass
class Exclusion:
    """The examples an evaluation keeps out, by reason."""

    same_thread: set[int]
    same_question: set[int]

    @property
    def ids(self) -> frozenset[int]:
        return frozenset(self.same_thread | self.same_question)

    def describe(self) -> str:
        return describe_exclusion(self.to_dict())

    def to_dict(self) -> dict[str, int]:
        return {"excluded": len(self.ids), "same_thread": len(self.same_thread),
                "same_question": len(self.same_question - self.same_thread)}


def describe_exclusion(counts: dict[str, int]) -> str:
    """An exclusion's counts (:meth:`Exclusion.to_dict`, as ``run.json`` keeps them) in words."""
    return (f"{counts['excluded']} examples excluded: {counts['same_thread']} from the evaluated split's own forum "
            f"threads (same heading and archive month), {counts['same_question']} more asking one of its questions")


def exclusion_for(store: ExampleStore, evaluated: list[Example]) -> Exclusion:
    """What a run over *evaluated* must not show the agent: its threads' examples and its own questions."""
    threads = [thread for thread in map(thread_of, evaluated) if thread is not None]
    return Exclusion(store.ids_in_threads(threads), store.ids_with_questions(example.question for example in evaluated))
