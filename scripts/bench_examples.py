"""Retrieval of solved examples, measured without a model: the first example and the five, the prompt's block, speed.

    python -m scripts.bench_examples [--shared ../shared] [--vectors FILE] [--tune] [--no-scale] [--no-replay]

Held out: each of the eight question sets in ``../shared/datasets`` (SPINACH
dev and test, QALD-9 Plus train and test, QALD-7, QALD-10, WikiWebQuestions
dev and test) is asked of a store of the other seven, and QALD-10's German,
Russian and Chinese questions of a store without QALD-10 (the other languages
of the same requests): German with even ids for tuning, and the odd ids in
German, Russian and Chinese held out, so that no held-out request in another
language was tuned on (the shared data hold no other split in other
languages).  Examples asking one of the held-out questions, or from
its forum threads, are kept out.  Each question whose gold query uses a
property besides P31 and P279 is scored:

* recall at k: the share of the gold query's properties (P31 and P279 aside)
  in the queries of the first k examples;
* MRR: the mean of 1 / the rank of the first example (of ten) whose query
  holds at least half of those properties (0 when none does);
* for the shipped ranking, the whole examples the prompt shows of the five,
  and the characters and estimated tokens they add to it.

The rankings: the shipped one (words and meaning, fused, a strong match by
meaning first, below the relevance floor left out), plain BM25 over the
question's words, meaning alone, words alone.  The shipped settings were
chosen with ``--tune``, which asks :data:`TUNED_ON` alone (the sets marked
"tuning" in the table) and prints nothing else: the fusion whose smallest
margin at rank 1 over the better of plain BM25 and meaning alone, across those
sets, is largest; then the floors that keep most examples out while costing
no set more than :data:`NOISE` of recall at 5 against no floor.  The other
sets were never looked at while choosing.

Off topic: CK25's questions (a company's graph, nothing the store is about)
asked of the store the project builds: how many examples each gets, and how
many of those share no word with it (shown for their meaning alone).

Then the prompt's figures on SPINACH test with the store the project builds,
the speed and memory of a question against stores of 1,000, 10,000 and 50,000
examples (copies of that store's, their vectors kept, each size in a fresh
process) and of computing vectors, the "earlier request" links, and (with
``../shared/reference-outputs``) the 387 recorded QALD-10 runs replayed with
the examples in their first prompt.

``--vectors FILE`` keeps the questions' vectors between runs (computing them
is most of a first run's time on a busy machine).

What the figures cannot show: whether a model uses the examples, or its F1.
"""

from __future__ import annotations

import argparse
import itertools
import json
import statistics
import subprocess
import sys
import tempfile
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
from tqdm import tqdm

from agent.actions import tool_schemas
from agent.examples.meaning import BATCH, MEANINGS
from agent.examples.naming import name_properties
from agent.examples.queries import query_properties
from agent.examples.retrieval import (FUSION_K, GENERIC_PROPERTIES, RELEVANT_ABOVE, RELEVANT_ABOVE_ACROSS,
                                      STRONG_MARGIN, STRONG_MEANING, WORDS_WEIGHT, WORDS_WEIGHT_ACROSS, Match,
                                      Retriever, estimated_tokens, prompt_examples)
from agent.examples.store import ExampleStore
from agent.kb.local import LocalKB
from agent.loop import AgentContext
from agent.prompts import render
from harness.datasets import Example, load_dataset
from harness.examples import EXAMPLE_SPLITS, as_solved, exclusion_for, thread_of
from harness.question_files import read_question_file

SHARED = Path(__file__).resolve().parent.parent.parent / "shared"
#: The question sets held out in turn.
SOURCES = (("spinach", "dev"), ("spinach", "test"), ("qald9plus", "train"), ("qald9plus", "test"),
           ("qald7", "test"), ("qald10", "test"), ("wikiwebquestions", "dev"), ("wikiwebquestions", "test"))
#: QALD-10's other languages, each held out from a store without QALD-10.
LANGUAGES = ("de", "ru", "zh")
#: The held-out sets the shipped settings were chosen on (``--tune``); the rest were never looked at.
TUNED_ON = ("spinach dev", "wikiwebquestions dev", "qald10 test (de, even ids)")
#: The fusions ``--tune`` chooses from: (fusion constant, words' weight, words' weight across languages, the cosine
#: of a strong match by meaning, its margin); a cosine of 2 is no strong match at all.
GRID = tuple(setting for setting in itertools.product((3, 10, 60), (0.75, 1.0), (0.1, 0.25), (0.88, 0.9, 0.92, 2.0),
                                                      (0.0, 0.02, 0.04)) if setting[3] < 2 or setting[4] == 0)
#: The relevance floors ``--tune`` chooses from, for the chosen fusion: how far above the question's usual cosine
#: (in the question's language, across languages).
FLOORS = tuple(itertools.product((0.02, 0.03, 0.04, 0.05, 0.06, 0.07), (0.02, 0.03, 0.04, 0.05, 0.06, 0.07)))
#: The recall at 5 a floor may cost a tuning set against no floor: one question's worth in 400 (noise).
NOISE = 0.0025
#: The store sizes the speed and memory are measured at.
SIZES = (1_000, 10_000, 50_000)
#: Examples retrieved per question: the prompt's five, and ten for the MRR.
SHOWN, DEEP = 5, 10


@dataclass
class HeldOut:
    """One held-out set: its name, its questions, and the examples of the store it is asked of."""

    name: str
    questions: list[Example]
    rest: list[Example]


@dataclass
class Score:
    """One question under one ranking."""

    at_1: float
    at_5: float
    reciprocal_rank: float


@dataclass
class Block:
    """The examples' block of one question's first prompt."""

    shown: int
    chars: int
    tokens: int


def mean(values: list[float]) -> float:
    return statistics.mean(values) if values else 0.0


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
    MEANINGS.of_examples([example.question for example in german.values()])
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


def false_links(retriever: Retriever, questions: list[Example]) -> int:
    """Questions whose best example passes for the same request, though no example comes from their thread."""
    count = 0
    for example in questions:
        matches = retriever.similar(example.question, 1, thread=thread_of(example))
        count += bool(matches) and retriever.same_request(example.question, matches[0])
    return count


def held_out_sets(datasets: Path, tuning: bool = False) -> list[HeldOut]:
    """Each source held out from a store of the others, then QALD-10's other languages from a store without it:
    German with even ids (tuning), and the odd ids in each language; only the :data:`TUNED_ON` sets when
    *tuning*."""
    sources = load_sources(datasets)
    sets = [HeldOut(source_name(source), questions, [example for other, asked in sources.items() if other != source
                                                     for example in asked])
            for source, questions in sources.items()]
    without = [example for other, asked in sources.items() if other != ("qald10", "test") for example in asked]
    for language in LANGUAGES:
        asked = load_dataset("qald10", "test", datasets, language=language)
        for parity, half in ((0, "even"), (1, "odd")):
            name = f"qald10 test ({language}, {half} ids)"
            if parity or name in TUNED_ON:
                sets.append(HeldOut(name, [example for example in asked if int(example.id) % 2 == parity], without))
    return [held_out for held_out in sets if held_out.name in TUNED_ON] if tuning else sets


def scored(questions: list[Example]) -> list[Example]:
    """The questions whose gold query uses a property besides P31 and P279: the ones recall can score."""
    return [example for example in questions if gold_properties(example)]


def score(gold: set[str], sparqls: list[str]) -> Score:
    """Recall at 1 and 5 of *gold* in *sparqls*, and the reciprocal rank of the first that holds half of it."""
    def recall(k: int) -> float:
        return len(gold & set().union(*map(query_properties, sparqls[:k]))) / len(gold) if sparqls else 0.0
    first = next((1 / rank for rank, sparql in enumerate(sparqls[:DEEP], 1)
                  if 2 * len(gold & query_properties(sparql)) >= len(gold)), 0.0)
    return Score(recall(1), recall(SHOWN), first)


def block_of(matches: list[Match]) -> Block:
    """The block the first prompt shows for *matches* (the first five)."""
    shown = prompt_examples(matches[:SHOWN])
    lines = [f"- {example.question} → {example.query}\n" for example in shown]
    return Block(len(shown), sum(map(len, lines)), sum(map(estimated_tokens, lines)))


@dataclass
class Asked:
    """One held-out set's questions, ranked once by words, by meaning and by plain BM25: the fusion of any setting
    is then made without asking again."""

    held_out: HeldOut
    store: ExampleStore
    excluded: frozenset[int]
    #: Per question: its text, gold properties, and its rankings by words, by meaning and by plain BM25.
    rankings: list[tuple[str, set[str], list[Match], list[Match], list[Match]]]

    def fused(self, retriever: Retriever) -> list[list[Match]]:
        return [retriever.fuse(question, [words, meaning], DEEP)
                for question, _, words, meaning, _ in self.rankings]

    def scores(self, ranked: list[list[Match]]) -> list[Score]:
        return [score(gold, [match.example.sparql for match in matches])
                for (_, gold, *_), matches in zip(self.rankings, ranked)]

    def baselines(self) -> dict[str, list[Score]]:
        words_alone = Retriever(self.store, use_meaning=False, excluded=self.excluded)
        return {"plain BM25": self.scores([plain for *_, plain in self.rankings]),
                "meaning alone": self.scores([meaning[:DEEP] for *_, meaning, _ in self.rankings]),
                "words alone": self.scores([words_alone.fuse(question, [words], DEEP)
                                            for question, _, words, _, _ in self.rankings])}


def asked_of(held_out: HeldOut, names: dict[str, list[str]], directory: Path) -> Asked:
    store = store_of(directory / f"held-out-{len(list(directory.glob('held-out-*')))}.sqlite", held_out.rest, names)
    excluded = exclusion_for(store, held_out.questions).ids
    ours = Retriever(store, excluded=excluded)
    plain = Retriever(store, use_properties=False, use_meaning=False, stopwords=False, excluded=excluded)
    rankings = []
    for example in tqdm(scored(held_out.questions), desc=held_out.name, unit="question", file=sys.stderr):
        thread = thread_of(example)
        rankings.append((example.question, gold_properties(example), ours.by_words(example.question, thread),
                         ours.by_meaning(example.question, thread), plain.similar(example.question, DEEP, thread)))
    return Asked(held_out, store, excluded, rankings)


def retriever_of(asked: Asked, setting: tuple[int, float, float, float, float],
                 floors: tuple[float, float] = (RELEVANT_ABOVE, RELEVANT_ABOVE_ACROSS)) -> Retriever:
    constant, weight, across, strong, margin = setting
    return Retriever(asked.store, excluded=asked.excluded, fusion_k=constant, words_weight=weight,
                     words_weight_across=across, strong=strong, strong_margin=margin, above=floors[0],
                     above_across=floors[1])


def tuned(tuning: list[Asked]) -> Iterator[str]:
    """The fusion of :data:`GRID` whose smallest margin at rank 1 over the better of plain BM25 and meaning alone,
    across the *tuning* sets, is largest (then the largest mean margin, then the largest mean recall at 5): a
    margin at 1 not worse anywhere, better on the whole; then, for the best, the floors of
    :data:`FLOORS` that show fewest examples while no set's recall at 5 falls more than :data:`NOISE` below its
    recall without a floor."""
    bars = [max(mean([item.at_1 for item in scores]) for name, scores in asked.baselines().items()
                if name != "words alone") for asked in tuning]

    def merit(setting: tuple[int, float, float, float, float]) -> tuple[float, float, float]:
        found = [asked.scores(asked.fused(retriever_of(asked, setting))) for asked in tuning]
        margins = [mean([item.at_1 for item in scores]) - bar for scores, bar in zip(found, bars)]
        return min(margins), mean(margins), mean([mean([item.at_5 for item in scores]) for scores in found])
    merits = {setting: merit(setting) for setting in tqdm(GRID, desc="fusions", file=sys.stderr)}
    ranked = sorted(merits.items(), key=lambda item: item[1], reverse=True)
    for setting, (smallest, margin, at_5) in ranked[:5]:
        yield (f"fusion k {setting[0]}, words' weight {setting[1]:g} (across languages {setting[2]:g}), a cosine of "
               f"{setting[3]:g} first when nearer by {setting[4]:g}: smallest margin at 1 {smallest:+.2%}, mean "
               f"{margin:+.2%}, mean recall at 5 {at_5:.1%}")
    best = ranked[0][0]
    unfloored = [mean([item.at_5 for item in asked.scores(asked.fused(retriever_of(asked, best, (-1.0, -1.0))))])
                 for asked in tuning]
    kept = []
    for floors in tqdm(FLOORS, desc="floors", file=sys.stderr):
        ranked_sets = [asked.fused(retriever_of(asked, best, floors)) for asked in tuning]
        losses = [bare - mean([item.at_5 for item in asked.scores(found)])
                  for asked, found, bare in zip(tuning, ranked_sets, unfloored)]
        shown = mean([mean([min(len(matches), SHOWN) for matches in found]) for found in ranked_sets])
        if max(losses) <= NOISE:
            kept.append((shown, -floors[0], -floors[1], floors, max(losses)))
    yield "the floors that cost no tuning set more than noise at 5, fewest examples shown first:"
    for shown, _, _, floors, loss in sorted(kept)[:5]:
        yield (f"floor {floors[0]:g} above the usual cosine (across languages {floors[1]:g}): {shown:.2f} shown of 5, "
               "largest loss at 5 "
               f"{loss:+.2%}")


def held_out_figures(shared: Path, directory: Path, tune: bool) -> Iterator[str]:
    """The table's lines, as they are measured; with *tune*, the tuning sets' choice of settings alone."""
    sets = held_out_sets(shared / "datasets", tuning=tune)
    names = property_names(shared, directory, [example for held_out in sets for example in held_out.questions])
    MEANINGS.of_examples([example.question for held_out in sets for example in held_out.questions])
    asked = [asked_of(held_out, names, directory) for held_out in sets]
    if tune:
        yield f"the best settings on {', '.join(TUNED_ON)} alone:"
        yield from tuned(asked)
        return
    shipped = (f"shipped: fused (k {FUSION_K}, words {WORDS_WEIGHT:g}, across languages {WORDS_WEIGHT_ACROSS:g}), "
               f"{STRONG_MEANING:g} first by {STRONG_MARGIN:g}, floor {RELEVANT_ABOVE:g} ({RELEVANT_ABOVE_ACROSS:g}) "
               "above the usual cosine")
    yield "| held out | questions | ranking | recall @1 | recall @5 | MRR | shown of 5 | chars | tokens |"
    yield "|---|---:|---|---:|---:|---:|---:|---:|---:|"
    wins = {"plain BM25": 0, "meaning alone": 0}
    for one in asked:
        ranked = one.fused(Retriever(one.store, excluded=one.excluded))
        blocks = [block_of(matches) for matches in ranked]
        rows = {shipped: one.scores(ranked), **one.baselines()}
        for number, (name, scores) in enumerate(rows.items()):
            first = (one.held_out.name + (" (tuning)" if one.held_out.name in TUNED_ON else ""),
                     str(len(scores))) if number == 0 else ("", "")
            prompt = (f"{mean([block.shown for block in blocks]):.2f} | {mean([block.chars for block in blocks]):,.0f}"
                      f" | {mean([block.tokens for block in blocks]):,.0f}") if number == 0 else " | | "
            yield (f"| {first[0]} | {first[1]} | {name} | {mean([item.at_1 for item in scores]):.1%} | "
                   f"{mean([item.at_5 for item in scores]):.1%} | {mean([item.reciprocal_rank for item in scores]):.3f}"
                   f" | {prompt} |")
        for baseline in wins:
            wins[baseline] += mean([item.at_1 for item in rows[shipped]]) >= mean([item.at_1 for item in
                                                                                   rows[baseline]])
    yield ""
    yield (f"at rank 1 the shipped ranking equals or beats plain BM25 on {wins['plain BM25']} of {len(asked)} "
           f"held-out sets, meaning alone on {wins['meaning alone']}")
    for one in asked:
        one.store.close()


#: The peak memory of a process, in MB, as Linux counts it for the program it runs (``ru_maxrss`` would count the
#: benchmark that started it: it survives the exec).
PEAK = """def peak():
    with open("/proc/self/status") as status:
        return next(int(line.split()[1]) for line in status if line.startswith("VmHWM:")) / 1024
"""
#: A fresh process's view of one store: its first question (the store's vectors read), then others.
SCALE_CHILD = """import json, statistics, sys, time
from agent.examples import ExampleStore, Retriever
""" + PEAK + """
store = ExampleStore(sys.argv[1], read_only=True)
questions = json.loads(sys.argv[2])
retriever = Retriever(store)
started = time.perf_counter()
retriever.similar(questions[0])
first = time.perf_counter() - started
times, ranking = [], []
for question in questions[1:]:
    started = time.perf_counter()
    retriever.similar(question)
    times.append(time.perf_counter() - started)
    retriever.meanings.remember([question], [retriever.meanings.of_question(question)])  # its vector known now:
    started = time.process_time()  # what follows is the ranking alone
    retriever.similar(question)
    ranking.append(time.process_time() - started)
print(json.dumps({"first": first, "median": statistics.median(times), "max": max(times),
                  "ranking": statistics.median(ranking), "memory": peak()}))
"""
#: A fresh process computing the vectors of some texts, a batch at a time.
COMPUTE_CHILD = """import json, sys, time
from agent.examples.meaning import Meanings
""" + PEAK + """
texts = json.loads(sys.argv[1])
meanings = Meanings()
meanings.of_question("warm up")
started = time.perf_counter()
meanings.of_examples(texts)
print(json.dumps({"seconds": time.perf_counter() - started, "threads": meanings.threads, "batch": meanings.batch,
                  "memory": peak()}))
"""


def _child(script: str, *arguments: str) -> dict[str, float]:
    ran = subprocess.run([sys.executable, "-c", script, *arguments], capture_output=True, text=True, timeout=3600,
                         cwd=Path(__file__).resolve().parent.parent)
    if ran.returncode:
        raise SystemExit(f"error: a measuring process failed: {ran.stderr.strip().splitlines()[-1:]}")
    return json.loads(ran.stdout.splitlines()[-1])


def copied_store(path: Path, base: ExampleStore, size: int) -> ExampleStore:
    """A store of *size* examples: copies of *base*'s (checked when *base* was built), each copy's question numbered,
    with its original's kept vector, written as the store keeps them."""
    from agent.examples.meaning import _read

    model = MEANINGS.model()
    examples, vectors = base.examples(), base.vectors(model)
    copy = ExampleStore(path)
    with copy.connection:
        for number in range(size):
            original = examples[number % len(examples)]
            question = original.question + (f" ({number // len(examples)})" if number >= len(examples) else "")
            properties = " ".join(sorted(original.properties, key=lambda pid: int(pid[1:])))
            rowid = copy.connection.execute(
                "INSERT INTO examples (key, question, sparql, source, thread, properties) VALUES (?, ?, ?, ?, ?, ?)",
                (f"{original.key} {number}", question, original.sparql, original.source, "", properties)).lastrowid
            copy.connection.execute("INSERT INTO examples_text (rowid, question, properties) VALUES (?, ?, ?)",
                                    (rowid, question, properties.lower()))
            copy.connection.execute("INSERT INTO vectors (id, model, text, vector) VALUES (?, ?, ?, ?)",
                                    (rowid, model, _read(question), vectors[original.id][1]))
    copy.add_property_names(copy.unnamed_properties(), {})
    return copy


def scale_figures(base: ExampleStore, questions: list[str], texts: list[str], directory: Path) -> list[str]:
    """A new question against stores of :data:`SIZES` examples (their vectors kept, as ``spinach-examples build``
    keeps them), and the vectors of one and of three batches computed, each in a fresh process."""
    MEANINGS.keep(base, progress=True)
    lines = ["| examples | first question (vectors read) | a question, median | max | its ranking alone, CPU "
             "(median) | peak memory |", "|---:|---:|---:|---:|---:|---:|"]
    for size in SIZES:
        copy = copied_store(directory / f"scale-{size}.sqlite", base, size)
        copy.close()
        found = _child(SCALE_CHILD, str(copy.path), json.dumps(questions))
        lines.append(f"| {size:,} | {found['first']:.2f} s | {found['median'] * 1000:.0f} ms | "
                     f"{found['max'] * 1000:.0f} ms | {found['ranking'] * 1000:.0f} ms | {found['memory']:.0f} MB |")
        copy.path.unlink()
    lines += ["", "| vectors computed | threads | batch | seconds | per 1,000 | peak memory |",
              "|---:|---:|---:|---:|---:|---:|"]
    for count in (BATCH, 3 * BATCH):
        found = _child(COMPUTE_CHILD, json.dumps(texts[:count]))
        lines.append(f"| {count} | {found['threads']:.0f} | {found['batch']:.0f} | {found['seconds']:.1f} | "
                     f"{found['seconds'] * 1000 / count:.0f} s | {found['memory']:.0f} MB |")
    return lines


def prompt_figures(retriever: Retriever, questions: list[Example]) -> list[str]:
    blocks = [block_of(retriever.similar(example.question, SHOWN, thread_of(example))) for example in questions]
    shown = [block.shown for block in blocks]
    return [f"the examples' block in the first prompt: median {statistics.median(b.chars for b in blocks):,.0f} "
            f"characters, {statistics.median(b.tokens for b in blocks):,.0f} tokens (estimated), max "
            f"{max(b.tokens for b in blocks):,}",
            f"whole examples shown: mean {mean(shown):.2f} (of five retrieved at most), none for {shown.count(0)} of "
            f"{len(shown)} questions"]


def off_topic_figures(retriever: Retriever, shared: Path) -> str:
    """CK25's questions, about a company's graph, asked of the store the project builds: the examples each gets of
    five, and of them those sharing no word with it (let in for their meaning alone)."""
    _, loaded = read_question_file(shared / "datasets" / "ck25" / "questions.yml")
    found = [retriever.similar(example.question, SHOWN) for example in loaded.examples]
    return (f"\noff topic: {len(found)} CK25 questions (a company's graph) get {mean([len(m) for m in found]):.2f} "
            f"examples of 5, {mean([sum(not match.shares_words for match in m) for m in found]):.2f} of them sharing "
            f"no word (their meaning alone); none at all for {sum(not m for m in found)}")


def load_vectors(path: Path | None) -> None:
    if path is not None and path.exists():
        kept = np.load(path, allow_pickle=False)
        MEANINGS.remember(list(kept["texts"]), kept["vectors"])


def save_vectors(path: Path | None) -> None:
    if path is not None:
        texts, vectors = MEANINGS.known()
        with path.open("wb") as file:
            np.savez(file, texts=np.array(texts), vectors=vectors)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--shared", type=Path, default=SHARED, help="the shared data directory (default: ../shared)")
    parser.add_argument("--vectors", type=Path, metavar="FILE", help="keep the questions' vectors in FILE (.npz)")
    parser.add_argument("--tune", action="store_true",
                        help="only rank the settings on the tuning sets (nothing held out is asked)")
    parser.add_argument("--no-scale", action="store_true", help="skip the speed and memory at 1k, 10k, 50k")
    parser.add_argument("--no-replay", action="store_true", help="skip the QALD-10 replay (about two minutes)")
    args = parser.parse_args(argv)
    if not (args.shared / "datasets").is_dir():
        print(f"error: {args.shared}/datasets is missing", file=sys.stderr)
        return 2
    if not MEANINGS.available():
        print("error: the multilingual model did not load: the shipped ranking cannot be measured", file=sys.stderr)
        return 2
    load_vectors(args.vectors)
    with tempfile.TemporaryDirectory(prefix="bench-examples-") as scratch:
        print(("tuning: the tuning sets alone, each asked of a store of the others" if args.tune else
               "held out: each set asked of a store of the others") + "; recall of the gold query's properties (P31, "
              "P279 aside), MRR of the first example holding half of them; the prompt's block for the shipped "
              "ranking\n")
        for line in held_out_figures(args.shared, Path(scratch), args.tune):
            print(line, flush=True)
        save_vectors(args.vectors)
        if args.tune:
            return 0
        store = shipped_store(args.shared, Path(scratch))
        sources = ", ".join(f"{source} {count}" for source, count in store.counts_by_source().items())
        print(f"\nthe store the project builds: {store.count()} examples ({sources})")
        test = load_dataset("spinach", "test", args.shared / "datasets")
        dev = load_dataset("spinach", "dev", args.shared / "datasets")
        ours = Retriever(store, excluded=exclusion_for(store, test).ids)
        for line in prompt_figures(ours, test):
            print(line)
        if not args.no_scale:
            print("\nspeed and memory: a new question (its vector computed on one thread) against copies of that "
                  "store, each size in a fresh process")
            webquestions = load_dataset("wikiwebquestions", "test", args.shared / "datasets")
            for line in scale_figures(store, [example.question for example in test[:21]],
                                      [example.question for example in webquestions], Path(scratch)):
                print(line, flush=True)
        print(off_topic_figures(ours, args.shared))
        print(f"\nfalse 'earlier request' links (best example passes for the same request, from another thread): "
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
