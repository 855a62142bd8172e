"""Retrieval of solved examples, measured without a model: held-out property recall, prompt characters, links.

    python -m scripts.bench_examples [--shared ../shared] [--draws 5] [--no-replay]

Leave one source out: for each of the eight question sets in
``../shared/datasets`` (SPINACH dev and test, QALD-9 Plus train and test,
QALD-7, QALD-10, WikiWebQuestions dev and test) a store is built from the
other seven, and every question of the held-out set whose gold query uses a
property besides P31 and P279 asks it (examples asking the same question, or
from the same forum thread, are kept out).  Recall at k is the share of the
gold query's properties (P31 and P279 aside) that appear in the queries of
the k examples retrieved; "shown" is how many such properties those k queries
show, and "recall per property shown" divides the one by the other, so that
showing more cannot pass for finding more.

The rankings: the store's as it ships (the ranking by words and the ranking
by meaning fused, with the settings of :mod:`agent.examples.retrieval`); the
ranking chosen on the seven other sources only, each of them held out in turn
from a store without the held-out set, among the fusion with each constant of
``FUSION_CONSTANTS``, meaning alone, and words alone with a fallback to plain
BM25 for questions of at most 0 to 1,000 words (the one whose smallest gain
over plain BM25, at 5 and 10 across them, is largest); words alone; unless ``--no-tuning``, its settings
(property weight, senses) chosen the same way at 5; meaning alone; plain BM25
over the question's words; random.

The prompt figures use the store the project builds (the non-test splits):
the characters the examples add to the first prompt and the share of the gold
properties visible there, on SPINACH test; with
``../shared/reference-outputs`` present, the 387 recorded QALD-10 runs are
replayed (as ``scripts.bench_prompts`` does) and every request is counted
again with the examples retrieved for its question.

What the figures cannot show: whether a model uses the examples, or its F1.
"""

from __future__ import annotations

import argparse
import json
import itertools
import random
import statistics
import sys
import tempfile
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from tqdm import tqdm

from agent.actions import tool_schemas
from agent.examples.meaning import MEANINGS, Meanings
from agent.examples.naming import name_properties
from agent.examples.queries import query_properties
from agent.examples.retrieval import (FUSION_K, GENERIC_PROPERTIES, MAX_SENSES, PROPERTY_WEIGHT, Match, Retriever,
                                      prompt_examples, words_of)
from agent.examples.store import ExampleStore
from agent.kb.local import LocalKB
from agent.loop import AgentContext
from agent.prompts import render
from harness.datasets import Example, load_dataset
from harness.examples import EXAMPLE_SPLITS, as_solved, exclusion_for, thread_of

SHARED = Path(__file__).resolve().parent.parent.parent / "shared"
#: The question sets held out in turn.
SOURCES = (("spinach", "dev"), ("spinach", "test"), ("qald9plus", "train"), ("qald9plus", "test"),
           ("qald7", "test"), ("qald10", "test"), ("wikiwebquestions", "dev"), ("wikiwebquestions", "test"))
KS = (5, 10)
#: The (property weight, senses) settings the tuning chooses from.
SETTINGS = tuple((weight, senses) for senses in (1, 2, 99) for weight in (0.25, 0.5, 1.0, 2.0, 5.0))
#: Questions per source the tuning reads at most (a fixed sample), to keep it short.
TUNING_QUESTIONS = 100
#: The constants of the reciprocal rank fusion the choice on the other sets may take (60: its authors').
FUSION_CONSTANTS = (1, 3, 10, 60)
#: The word counts up to which a fallback from words alone to plain BM25 may take a question (0: never; 1000:
#: always), among the rankings the choice on the other sets may make.
THRESHOLDS = (0, 5, 6, 7, 8, 9, 10, 11, 12, 14, 16, 20, 25, 30, 40, 60, 1000)


@dataclass
class Scores:
    """One question under one ranking: its recall at each k, and the properties (P31, P279 aside) shown at 5."""

    recall: dict[int, float]
    shown: int


@dataclass
class Figures:
    """One ranking on one held-out set: mean recall at each k, and the mean number of properties shown at 5."""

    recall: dict[int, float]
    shown: float

    @property
    def per_property(self) -> float:
        return self.recall[5] / self.shown if self.shown else 0.0

    @classmethod
    def of(cls, scores: list[Scores]) -> Figures:
        return cls({k: statistics.mean(score.recall[k] for score in scores) for k in KS},
                   statistics.mean(score.shown for score in scores))


@dataclass
class Asked:
    """A held-out set's questions as each ranking (:data:`RANKINGS`) scores them, with their lengths in words: any
    choice among the rankings, and any threshold of a fallback to plain BM25, is then made without asking again."""

    words: list[int]
    scores: dict[str, list[Scores]]

    def candidates(self) -> dict[str, Figures]:
        """Every ranking the choice on other sets may make, by name."""
        found = {name: Figures.of(self.scores[name]) for name in self.scores if name.startswith("fused")}
        found["meaning alone"] = Figures.of(self.scores["meaning"])
        for up_to in THRESHOLDS:
            found[f"words, plain BM25 up to {up_to} words"] = Figures.of([
                plain if words <= up_to else ranked
                for words, ranked, plain in zip(self.words, self.scores["words"], self.scores["plain"])])
        return found

    def gains(self) -> dict[str, list[float]]:
        """Each candidate's gains in recall over plain BM25 at each k of :data:`KS`."""
        plain = Figures.of(self.scores["plain"])
        return {name: [figures.recall[k] - plain.recall[k] for k in KS] for name, figures in self.candidates().items()}


def source_name(source: tuple[str, str]) -> str:
    return f"{source[0]} {source[1]}"


def load_sources(datasets: Path) -> dict[tuple[str, str], list[Example]]:
    return {source: load_dataset(*source, datasets) for source in SOURCES}


def property_names(shared: Path, directory: Path, questions: list[Example]) -> dict[str, list[str]]:
    """The names (English labels and aliases) of every property the questions' gold queries use, from the shared
    property list loaded into a local store."""
    store = ExampleStore(directory / "names.sqlite")
    store.add(as_solved(example) for example in questions)
    kb = LocalKB(directory / "properties")
    properties = shared / "wikidata" / "properties"
    kb.load([properties / "labels.property.en.tsv.gz", properties / "aliases.property.en.tsv.gz"], progress=False)
    report = name_properties(store, kb, languages=("en",))
    kb.close()
    if report.failed:
        raise SystemExit("error: the property list could not name the properties: " + "; ".join(report.failed))
    names: dict[str, list[str]] = {}
    for name, pid in store.property_names():
        names.setdefault(pid, []).append(name)
    store.close()
    return names


def store_of(path: Path, questions: list[Example], names: dict[str, list[str]]) -> ExampleStore:
    store = ExampleStore(path)
    store.add(as_solved(example) for example in questions)
    store.add_property_names(store.unnamed_properties(), names)
    return store


def gold_properties(example: Example) -> set[str]:
    return query_properties(example.gold_sparql) - GENERIC_PROPERTIES


def recall(gold: set[str], sparqls: list[str]) -> float:
    shown = set().union(*map(query_properties, sparqls)) if sparqls else set()
    return len(gold & shown) / len(gold)


def _shown(sparqls: list[str]) -> int:
    return len(set().union(*map(query_properties, sparqls)) - GENERIC_PROPERTIES) if sparqls else 0


def scores(rank: Callable[[Example], list[Match]], questions: list[Example]) -> list[Scores]:
    """Each question's recall at each k of :data:`KS` in the examples *rank* gives it, and the properties it is
    shown at 5."""
    found = []
    for example in questions:
        sparqls = [match.example.sparql for match in rank(example)[:max(KS)]]
        found.append(Scores({k: recall(gold_properties(example), sparqls[:k]) for k in KS}, _shown(sparqls[:5])))
    return found


def measure(retriever: Retriever, questions: list[Example]) -> Figures:
    """Mean recall at each k of :data:`KS`, and the mean number of properties (P31, P279 aside) shown at 5."""
    return Figures.of(scores(_similar(retriever), questions))


#: The rankings each held-out question is scored by: how a retriever over the store (its excluded ids given)
#: ranks an example's question.
RANKINGS: dict[str, Callable[[ExampleStore, frozenset[int]], Callable[[Example], list[Match]]]] = {
    **{f"fused, k {constant}": lambda store, excluded, constant=constant: _similar(
        Retriever(store, excluded=excluded, fusion_k=constant)) for constant in FUSION_CONSTANTS},
    "words": lambda store, excluded: _similar(Retriever(store, use_meaning=False, excluded=excluded)),
    "meaning": lambda store, excluded: _by_meaning(Retriever(store, excluded=excluded)),
    "plain": lambda store, excluded: _similar(Retriever(store, use_properties=False, use_meaning=False,
                                                        excluded=excluded)),
}


def _similar(retriever: Retriever) -> Callable[[Example], list[Match]]:
    return lambda example: retriever.similar(example.question, max(KS), thread_of(example))


def _by_meaning(retriever: Retriever) -> Callable[[Example], list[Match]]:
    return lambda example: retriever.by_meaning(example.question, thread_of(example))


def asked_of(store: ExampleStore, questions: list[Example]) -> Asked:
    """*questions* (those recall can score) asked of *store* in each ranking."""
    excluded = exclusion_for(store, questions).ids
    asked = scored(questions)
    return Asked([len(words_of(example.question)) for example in asked],
                 {name: scores(ranking(store, excluded), asked) for name, ranking in RANKINGS.items()})


def chosen_ranking(sets: list[Asked]) -> str:
    """The candidate ranking whose smallest gain over plain BM25 (at 5 and 10, across *sets*) is largest; of equals,
    the one with the largest mean gain, then the first."""
    gains = [held_out.gains() for held_out in sets]
    names = list(gains[0])

    def merit(name: str) -> tuple[float, float, int]:
        found = [gain for held_out in gains for gain in held_out[name]]
        return min(found), statistics.mean(found), -names.index(name)
    return max(names, key=merit)


def computed_once(questions: list[str]) -> None:
    """The vectors of *questions*, computed now in batches (as a store's examples' are) and kept: each set's
    questions are asked of eight stores, and are the examples of the others."""
    for start in tqdm(range(0, len(questions), 100), desc="vectors of the questions", unit="batch",
                      file=sys.stderr):
        MEANINGS.of_examples(questions[start:start + 100])


def inner_sets(sources: dict[tuple[str, str], list[Example]], names: dict[str, list[str]],
               directory: Path) -> dict[tuple[tuple[str, str], tuple[str, str]], Asked]:
    """For the choice of a held-out set's ranking: each other set as held out from a store of the six left,
    keyed (held-out set, other set); one store per pair of sets serves both."""
    found = {}
    pairs = list(itertools.combinations(sources, 2))
    for first, second in tqdm(pairs, desc="pairs of sets held out, for the choice on the others", unit="pair",
                              file=sys.stderr):
        rest = [example for source, questions in sources.items() if source not in (first, second)
                for example in questions]
        store = store_of(directory / "pair.sqlite", rest, names)
        found[first, second] = asked_of(store, sources[second])
        found[second, first] = asked_of(store, sources[first])
        store.close()
        store.path.unlink()
    return found


def measure_random(store: ExampleStore, questions: list[Example], draws: int, excluded: frozenset[int]) -> Figures:
    pool = [example for example in store.examples() if example.id not in excluded]
    found = []
    for draw in range(draws):
        rng = random.Random(draw)
        found += scores(lambda example: [Match(chosen, 0.0) for chosen in rng.sample(pool, max(KS))], questions)
    return Figures.of(found)


def scored(questions: list[Example]) -> list[Example]:
    """The questions whose gold query uses a property besides P31 and P279: the ones recall can score."""
    return [example for example in questions if gold_properties(example)]


def tuned_setting(held_out: tuple[str, str], sources: dict[tuple[str, str], list[Example]],
                  names: dict[str, list[str]], directory: Path) -> tuple[float, int]:
    """The (property weight, senses) whose smallest gain in recall at 5 over plain BM25, across the sources other
    than *held_out* (each held out in turn from a store of the rest, *held_out* never in it), is largest."""
    worst = dict.fromkeys(SETTINGS, float("inf"))
    for inner in sources:
        if inner == held_out:
            continue
        rest = [example for source, questions in sources.items() if source not in (held_out, inner)
                for example in questions]
        store = store_of(directory / "tuning.sqlite", rest, names)
        asked = scored(sources[inner])
        asked = random.Random(0).sample(asked, min(len(asked), TUNING_QUESTIONS))
        excluded = exclusion_for(store, sources[inner]).ids
        plain = measure(Retriever(store, use_properties=False, use_meaning=False, excluded=excluded), asked).recall[5]
        for weight, senses in SETTINGS:
            gain = measure(Retriever(store, use_meaning=False, excluded=excluded, property_weight=weight,
                                     max_senses=senses), asked).recall[5] - plain
            worst[weight, senses] = min(worst[weight, senses], gain)
        store.close()
        store.path.unlink()
    return max(SETTINGS, key=lambda setting: worst[setting])


def leave_one_source_out(shared: Path, directory: Path, draws: int, tune: bool) -> Iterator[str]:
    """The table's lines, as they are measured: each source held out in turn from a store of the others."""
    sources = load_sources(shared / "datasets")
    names = property_names(shared, directory, [example for questions in sources.values() for example in questions])
    computed_once([example.question for questions in sources.values() for example in questions])
    inner = inner_sets(sources, names, directory)
    yield "| held out | questions | ranking | recall @5 | recall @10 | shown @5 | recall per property shown @5 |"
    yield "|---|---:|---|---:|---:|---:|---:|"
    #: Per ranking compared (shipped, chosen on the others) and k: the held-out sets where it beats or equals plain
    #: BM25, and where it beats it.
    kept = {(ranking, k): 0 for ranking in ("shipped", "chosen") for k in KS}
    wins = dict(kept)
    chosen: dict[tuple[str, str], str] = {}
    outer: list[Asked] = []
    for held_out, questions in sources.items():
        rest = [example for source, others in sources.items() if source != held_out for example in others]
        store = store_of(directory / f"held-out-{source_name(held_out)}.sqlite".replace(" ", "-"), rest, names)
        excluded = exclusion_for(store, questions).ids
        asked = asked_of(store, questions)
        outer.append(asked)
        chosen[held_out] = chosen_ranking([inner[held_out, other] for other in sources if other != held_out])
        shipped = (f"the store's ranking: words (weight {PROPERTY_WEIGHT:g}, senses {MAX_SENSES}) and meaning, "
                   f"fused (k {FUSION_K})")
        blind = f"  chosen on the others: {chosen[held_out]}"
        rows = {shipped: Figures.of(asked.scores[f"fused, k {FUSION_K}"]), blind: asked.candidates()[chosen[held_out]],
                "  words alone": Figures.of(asked.scores["words"])}
        if tune:
            weight, senses = tuned_setting(held_out, sources, names, directory)
            rows[f"  words alone, setting chosen on the others (weight {weight:g}, senses {senses})"] = \
                measure(Retriever(store, use_meaning=False, excluded=excluded, property_weight=weight,
                                  max_senses=senses), scored(questions))
        rows["  meaning alone"] = Figures.of(asked.scores["meaning"])
        rows["plain BM25"] = Figures.of(asked.scores["plain"])
        rows[f"random ({draws} draws)"] = measure_random(store, scored(questions), draws, excluded)
        for (ranking, k) in kept:
            figures = rows[shipped if ranking == "shipped" else blind]
            kept[ranking, k] += figures.recall[k] >= rows["plain BM25"].recall[k]
            wins[ranking, k] += figures.recall[k] > rows["plain BM25"].recall[k]
        for number, (name, figures) in enumerate(rows.items()):
            first = (source_name(held_out), str(len(asked.words))) if number == 0 else ("", "")
            yield (f"| {first[0]} | {first[1]} | {name} | {figures.recall[5]:.1%} | {figures.recall[10]:.1%} | "
                   f"{figures.shown:.1f} | {figures.per_property:.1%} |")
        store.close()
    yield ""
    for ranking, name in (("shipped", "the store's ranking"), ("chosen", "the ranking chosen on the others")):
        yield (f"{name} beats or equals plain BM25 on {kept[ranking, 5]} of {len(sources)} held-out sets at 5, "
               f"{kept[ranking, 10]} at 10 (beats: {wins[ranking, 5]} at 5, {wins[ranking, 10]} at 10)")
    yield ("the ranking chosen on the others, per held-out set: "
           + "; ".join(f"{source_name(source)}: {name}" for source, name in chosen.items())
           + f"; chosen the same way on all eight: {chosen_ranking(outer)}")


def first_link(retriever: Retriever, question: str, excluded: frozenset[int] = frozenset()) -> int | None:
    """The id of the example the bot would link as "an earlier request" (the first of the five shown that passes
    for the same request), as the bot picks it; ``None`` for no link."""
    matches = Retriever(retriever.store, excluded=excluded).similar(question, 5) if excluded else \
        retriever.similar(question, 5)
    return next((match.example.id for match in matches if retriever.same_request(question, match)), None)


def language_figures(shared: Path, directory: Path) -> list[str]:
    """QALD-10's questions in German and in English against a store holding the English ones as earlier
    requests: how often each links its English twin, another request, or (the twin removed) anything."""
    sources = load_sources(shared / "datasets")
    english = sources[("qald10", "test")]
    german = {example.id: example for example in load_dataset("qald10", "test", shared / "datasets", language="de")}
    computed_once([example.question for example in german.values()])
    names = property_names(shared, directory, [example for questions in sources.values() for example in questions])
    store = store_of(directory / "languages.sqlite", [example for source in EXAMPLE_SPLITS
                                                      for example in sources[source]] + english, names)
    ids = {example.key: example.id for example in store.examples()}
    retriever, by_words = Retriever(store), Retriever(store, use_meaning=False)
    lines = ["| asked in | questions | its English twin among the five shown (words alone / shipped) | "
             "its English twin linked | another request linked | a link, the twin removed |",
             "|---|---:|---:|---:|---:|---:|"]
    for language, asked in (("English (the same words)", {example.id: example for example in english}),
                            ("German", german)):
        shown = {"words": 0, "shipped": 0}
        twin, other, removed = 0, 0, 0
        for example in english:
            if example.id not in asked:
                continue
            own = ids[f"qald10 test {example.id}"]
            question = asked[example.id].question
            shown["words"] += own in {match.example.id for match in by_words.similar(question, 5)}
            shown["shipped"] += own in {match.example.id for match in retriever.similar(question, 5)}
            linked = first_link(retriever, question)
            twin += linked == own
            other += linked is not None and linked != own
            removed += first_link(retriever, question, frozenset({own})) is not None
        lines.append(f"| {language} | {len(asked)} | {shown['words']} / {shown['shipped']} | {twin} | {other} | "
                     f"{removed} |")
    store.close()
    return lines


def shipped_store(shared: Path, directory: Path) -> ExampleStore:
    """The store the project builds from the shared data: the non-test splits, named from the property list."""
    sources = load_sources(shared / "datasets")
    names = property_names(shared, directory, [example for questions in sources.values() for example in questions])
    return store_of(directory / "examples.sqlite", [example for source in EXAMPLE_SPLITS
                                                    for example in sources[source]], names)


def examples_block(question: str, retriever: Retriever, thread=None) -> tuple[str, str]:
    """The first prompt's user message without and with the examples for *question*."""
    shown = prompt_examples(retriever.similar(question, 5, thread=thread))
    return (render("question", question=question, context=None),
            render("question", question=question, context=AgentContext(examples=shown)))


def prompt_figures(retriever: Retriever, questions: list[Example]) -> list[str]:
    added, visible, shown = [], [], []
    for example in questions:
        without, with_examples = examples_block(example.question, retriever, thread_of(example))
        added.append(len(with_examples) - len(without))
        block = with_examples[len(without):]
        shown.append(sum(line.startswith("- ") for line in block.splitlines()))
        gold = gold_properties(example)
        if gold:
            visible.append(len(gold & query_properties(block.replace("→", " "))) / len(gold))
    return [f"characters the examples add to the first prompt: median {statistics.median(added):,.0f}, "
            f"mean {statistics.mean(added):,.0f}, max {max(added):,}",
            f"whole examples shown of the five retrieved: mean {statistics.mean(shown):.2f}, none for "
            f"{shown.count(0)} of {len(shown)} questions",
            f"gold properties (P31, P279 aside) visible in the examples shown: {statistics.mean(visible):.1%}"]


def _replay_costs(runs: list[dict[str, Any]], outputs: list[dict[str, Any]], retriever: Retriever) -> list[dict]:
    from scripts.bench_prompts import Cost, request_text
    from agent.loop import AgentConfig
    from harness.replay import replay

    rows = []
    for run, output in zip(runs, outputs):
        sent: list[dict[str, Any]] = []
        replay(run, output, AgentConfig(prune_threshold=10**9), sent)
        without, with_examples = examples_block(run["question"], retriever)
        block = with_examples[len(without):]
        costs = {"without": Cost(), "in the first prompt": Cost(), "as an action": Cost()}
        earlier: dict[str, list[str]] = {name: [] for name in costs}
        for index, body in enumerate(sent):
            costs["without"].add(request_text(body), earlier["without"])
            asks = len(body["messages"]) > 1 and body["messages"][1].get("content") == without
            prompted = json.loads(json.dumps(body))
            if asks:
                prompted["messages"][1]["content"] = with_examples
            costs["in the first prompt"].add(request_text(prompted), earlier["in the first prompt"])
            acted = json.loads(json.dumps(body))
            if asks:
                if index == 0:  # the call that asks for the examples: the first prompt as it is
                    costs["as an action"].add(request_text(body), earlier["as an action"])
                acted["messages"][2:2] = [
                    {"role": "assistant", "content": None, "tool_calls": [{"id": "call_examples", "type": "function",
                     "function": {"name": "find_similar_requests", "arguments": json.dumps({"thought": ""})}}]},
                    {"role": "tool", "tool_call_id": "call_examples", "content": block.strip()}]
                acted["tools"] = tool_schemas() + [{"type": "function", "function": {
                    "name": "find_similar_requests", "parameters": {"type": "object", "properties": {
                        "thought": {"type": "string"}}, "required": ["thought"]}}}]
            costs["as an action"].add(request_text(acted), earlier["as an action"])
        rows.append(costs)
    return rows


def replay_figures(shared: Path, retriever: Retriever) -> list[str]:
    outputs_dir = shared / "reference-outputs"
    try:
        runs = json.loads((outputs_dir / "qald10_spinach_traces_test.log").read_text())
        outputs = json.loads((outputs_dir / "qald10_spinach_output_test.json").read_text())
    except (OSError, ValueError) as error:
        return [f"(no replay: {error})"]
    rows = _replay_costs(runs, outputs, retriever)
    lines = [f"QALD-10, {len(rows)} recorded runs replayed: prompt characters per question",
             "| examples | chars median | chars mean | added (median of ratios) | uncached median | uncached mean |",
             "|---|---:|---:|---:|---:|---:|"]
    for name in ("without", "in the first prompt", "as an action"):
        chars = [row[name].chars for row in rows]
        uncached = [row[name].uncached for row in rows]
        ratio = statistics.median(row[name].chars / row["without"].chars - 1 for row in rows)
        lines.append(f"| {name} | {statistics.median(chars):,.0f} | {statistics.mean(chars):,.0f} | {ratio:+.1%} | "
                     f"{statistics.median(uncached):,.0f} | {statistics.mean(uncached):,.0f} |")
    return lines


def speed_figures(store: ExampleStore, questions: list[Example]) -> list[str]:
    """The vectors of the store's examples computed and kept (as ``spinach-examples build`` does), then read from
    the store (as the bot's first question does), a new question's vector, and the time a question takes to rank
    with and without the ranking by meaning, its vector at hand."""
    examples = store.examples()
    fresh = Meanings()
    started = time.perf_counter()
    fresh.keep(store, progress=False)
    lines = [f"vectors of the store's {len(examples)} examples, computed and kept: "
             f"{time.perf_counter() - started:.1f} s"]
    started = time.perf_counter()
    Meanings().of_store(store, examples)
    lines.append(f"the same, read from the store: {(time.perf_counter() - started) * 1000:.0f} ms")
    times = _times(fresh.of_question, questions)  # SPINACH test questions: none is an example of this store
    lines.append(f"a new question's vector: median {statistics.median(times) * 1000:.1f} ms, max "
                 f"{max(times) * 1000:.1f} ms")
    for name, retriever in (("words alone", Retriever(store, use_meaning=False)), ("shipped", Retriever(store))):
        retriever.similar(questions[0].question)
        times = _times(retriever.similar, questions)
        lines.append(f"a question ranked, {name}: median {statistics.median(times) * 1000:.1f} ms, "
                     f"max {max(times) * 1000:.1f} ms ({len(times)} SPINACH test questions, their vectors at hand)")
    return lines


def _times(call: Callable[[str], object], questions: list[Example]) -> list[float]:
    """The seconds *call* takes on each question's text."""
    times = []
    for example in questions:
        started = time.perf_counter()
        call(example.question)
        times.append(time.perf_counter() - started)
    return times


def false_links(retriever: Retriever, questions: list[Example]) -> int:
    """Questions whose best example passes for the same request, though no example comes from their thread."""
    count = 0
    for example in questions:
        matches = retriever.similar(example.question, 1, thread=thread_of(example))
        count += bool(matches) and retriever.same_request(example.question, matches[0])
    return count


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--shared", type=Path, default=SHARED, help="the shared data directory (default: ../shared)")
    parser.add_argument("--draws", type=int, default=5, help="random draws averaged for the random row")
    parser.add_argument("--no-tuning", action="store_true", help="skip the nested tuning of the property weight "
                                                                 "(the longest part)")
    parser.add_argument("--no-replay", action="store_true", help="skip the QALD-10 replay (about two minutes)")
    args = parser.parse_args(argv)
    if not (args.shared / "datasets").is_dir():
        print(f"error: {args.shared}/datasets is missing", file=sys.stderr)
        return 2
    with tempfile.TemporaryDirectory(prefix="bench-examples-") as scratch:
        print("leave one source out: each set held out from a store of the other seven; recall of the gold "
              "query's properties (P31, P279 aside)\n")
        for line in leave_one_source_out(args.shared, Path(scratch), args.draws, not args.no_tuning):
            print(line, flush=True)
        store = shipped_store(args.shared, Path(scratch))
        sources = ", ".join(f"{source} {count}" for source, count in store.counts_by_source().items())
        print(f"\nthe store the project builds: {store.count()} examples ({sources})")
        test = load_dataset("spinach", "test", args.shared / "datasets")
        dev = load_dataset("spinach", "dev", args.shared / "datasets")
        ours = Retriever(store, excluded=exclusion_for(store, test).ids)
        for line in prompt_figures(ours, test):
            print(line)
        for line in speed_figures(store, test):
            print(line)
        print(f"false 'earlier request' links (best example passes for the same request, from another thread): "
              f"{false_links(ours, test)} of {len(test)} SPINACH test questions, {false_links(ours, dev)} of "
              f"{len(dev)} dev")
        print("\nacross languages: QALD-10 against a store holding its English questions as earlier requests")
        for line in language_figures(args.shared, Path(scratch)):
            print(line)
        if not args.no_replay:
            print()
            for line in replay_figures(args.shared, ours):
                print(line)
        store.close()
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
