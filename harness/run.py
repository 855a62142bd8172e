"""A whole evaluation as one library call, as ``spinach-eval`` makes it and a notebook can::

    import harness
    from agent.llm import LLMConfig

    done = harness.evaluate(dataset="qald10", out="runs/qald10", llm=LLMConfig(base_url="http://localhost:8000/v1"))
    done.summary.f1, done.summary.gerbil.macro_f1_qald

It reads the dataset (its record in :mod:`harness.datasets`) or a question
file, opens the knowledge base and the model, records the run's settings and
fingerprints (``run.json``), fetches gold answers, answers every question
resumably (:func:`harness.evaluation.evaluate`), and returns the run's summary
as ``spinach-report`` reads the directory.  An option the dataset cannot use,
a missing file or a directory run with other settings raises
:class:`RunRefused` with a one-line reason before anything runs; what the run
skipped, dropped or must retry is said through *say* (default: standard
error).
"""

from __future__ import annotations

import os
import sys
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass, replace
from pathlib import Path
from typing import TYPE_CHECKING, Any

from agent.llm import LLMConfig, LLMConfigurationError
from harness.datasets import DatasetError, Dataset, FILE_FORMATS, Gold, dataset_named, file_gold_caveat, read_dataset

if TYPE_CHECKING:
    from harness.kqapro_report import KqaproSummary
    from harness.reporting import RunSummary


class RunRefused(ValueError):
    """The run cannot start as asked; the message says why in one line, and nothing was run."""


def _to_stderr(line: str) -> None:
    print(line, file=sys.stderr)


@dataclass
class Evaluation:
    """What a call of :func:`evaluate` did: the run's summary (``None`` while no question is finished), this
    call's closing line, and what is left to do (run the same call again to retry it)."""

    out: Path
    #: As ``spinach-report`` reads the directory; KQA Pro's report's for a dataset of answer strings.
    summary: RunSummary | KqaproSummary | None
    #: "N questions: F1 x, EM y" (or KQA Pro's accuracy), "" when nothing is finished.
    line: str
    #: Answers not finished because the model or the knowledge base failed.
    unfinished: int = 0
    #: Questions whose gold query failed (no gold answer yet).
    gold_failed: int = 0

    @property
    def complete(self) -> bool:
        return not self.unfinished and not self.gold_failed


def knowledge_base(kb_dir: str | None, wikidata: Any, out_dir: Path) -> dict[str, str]:
    """What answered the agent's lookups and queries: a local store (relative to the run's directory), or
    Wikidata's endpoints (no credentials)."""
    from harness.run_info import endpoint, portable_path

    if kb_dir:
        return {"store": portable_path(kb_dir, out_dir)}
    return {"api": endpoint(wikidata.api_url), "sparql": endpoint(wikidata.sparql_url), "dialect": wikidata.dialect}


def gold_source(record: Dataset, split: str, gold: str, kb_dir: str | None) -> str:
    """Where the gold answers come from, in words (*kb_dir* as ``run.json`` records it)."""
    where = f"the local store {kb_dir}" if kb_dir else "Wikidata"
    if record.gold is Gold.STRINGS:
        return record.gold_words
    if gold == "file" and split in record.file_gold:
        return f"the dataset file's answers ({record.file_gold[split]}), else the gold queries run on {where}"
    return f"the gold queries run on {where} at the time of the run (gold.jsonl holds each retrieval time)"


def default_numbers(record: Dataset, gold: str) -> str:
    """Numbers by value for dated file answers (QALD-10's, whose 14 signed decimals no query service writes)."""
    return "value" if record.dated_file_gold and gold == "file" else "lexical"


def refused_option(record: Dataset, name: str, *, language: str, split: str | None, questions: Any, choices: bool,
                   numbers: str | None, offline: bool, cache: Any, kb: Any) -> str | None:
    """Why an option given does nothing for the run's dataset *record* (one line), or ``None`` when each one
    works; *name* is the dataset's name in the run."""
    strings = record.gold is Gold.STRINGS
    if language != "en" and record.languages is not None and language not in record.languages:
        return (f"--language is for QALD-10 and QALD-JSON or TEXT2SPARQL question files; {name}'s questions "
                "are in English only")
    if split and questions:
        return "--split names a split of a --dataset; a --questions file is one set of questions"
    if choices and not strings:
        return "--choices is KQA Pro's multiple-choice setting; other datasets have no choices"
    if numbers and strings:
        return "--numbers compares SPARQL literals; KQA Pro judges answer strings as its evaluation does"
    if (offline or cache) and kb:
        return "--offline and --cache are for live Wikidata's responses; --kb answers from the local store"
    return None


def open_examples(path: str, evaluated: list, graph: str):
    """The retriever over the store at *path* for questions on *graph*, without the examples of the *evaluated*
    split's own threads and questions, and that exclusion (which the run records)."""
    from agent.examples import ExampleStore, Retriever
    from harness.examples import exclusion_for

    store = ExampleStore(path, read_only=True)
    exclusion = exclusion_for(store, evaluated)
    return Retriever(store, excluded=exclusion.ids, graph=graph), exclusion


def example_answerer(agent, retriever, question_of=None):
    """The agent answering each example, shown the solved examples most like it when there is a *retriever*;
    *question_of* gives the text the agent reads (KQA Pro's choices after the question)."""
    from agent import AgentContext
    from agent.examples import prompt_examples
    from harness.examples import thread_of

    def answer(example):
        question = question_of(example) if question_of else example.question
        if retriever is None:
            return agent.run(question)
        shown = prompt_examples(retriever.similar(example.question, 5, thread=thread_of(example)))
        return agent.run(question, context=AgentContext(examples=shown))

    return answer


def _answers(records: int, questions: int, repeats: int) -> str:
    return f"{records} answers ({questions} questions x {repeats} repeats)" if repeats > 1 else f"{records} questions"


def _retry(unfinished: int) -> str:
    return f"; {unfinished} unfinished (run again to retry them)" if unfinished else ""


def evaluate(*, out: str | Path, dataset: str | None = None, questions: str | Path | None = None,
             split: str | None = None, data: str | Path = "data", language: str = "en", limit: int | None = None,
             kb: str | None = None, llm: LLMConfig | None = None, baseline: bool = False, choices: bool = False,
             examples: str | None = None, gold: str = "file", numbers: str | None = None, repeats: int = 1,
             workers: int = 4, cache: str | None = None, offline: bool = False, force: bool = False,
             progress: bool = True, say: Callable[[str], None] = _to_stderr) -> Evaluation:
    """Run the agent (or with *baseline* the one-call baseline) over *dataset*'s *split* (or the *questions*
    file) into *out*, resumably, and summarise it; the keywords are ``spinach-eval``'s options (*llm*: where the
    model is, default from the environment).  :class:`RunRefused` when the run cannot start."""
    out = Path(out)
    questions = Path(questions) if questions is not None else None
    if not (dataset or questions) or dataset and questions:
        raise RunRefused("name a dataset or a questions file (one of them)")
    if repeats < 1:
        raise RunRefused("--repeats needs a number of at least 1")
    try:
        return _evaluate(out=out, dataset=dataset, questions=questions, split=split, data=data, language=language,
                         limit=limit, kb=kb, llm=llm, baseline=baseline, choices=choices, examples=examples,
                         gold=gold, numbers=numbers, repeats=repeats, workers=workers, cache=cache,
                         offline=offline, force=force, progress=progress, say=say)
    except (DatasetError, LLMConfigurationError) as error:
        raise RunRefused(str(error)) from error


def _evaluate(*, out: Path, dataset: str | None, questions: Path | None, split: str | None, data: str | Path,
              language: str, limit: int | None, kb: str | None, llm: LLMConfig | None, baseline: bool,
              choices: bool, examples: str | None, gold: str, numbers: str | None, repeats: int, workers: int,
              cache: str | None, offline: bool, force: bool, progress: bool, say: Callable[[str], None]
              ) -> Evaluation:
    from agent import Agent, AgentConfig
    from agent.kb import open_kb
    from agent.kb.live import WikidataConfig
    from agent.llm import ChatModel
    from agent.prompts import fingerprint
    from harness import fingerprints
    from harness.evaluation import now
    from harness.question_files import read_question_file
    from harness.run_info import begin_part, code_version, endpoint, portable_path

    kind, loaded = read_question_file(questions, language) if questions else (None, None)
    record = FILE_FORMATS[kind] if kind else dataset_named(dataset)
    strings = record.gold is Gold.STRINGS
    name = dataset or (record.name if strings else questions.stem)
    if strings and (baseline or gold == "live" or not kb):
        raise RunRefused("KQA Pro runs the agent on its converted store: give --kb DIR (built with `python -m "
                         "agent.kb load --graph kqapro`), without --baseline or --gold live")
    if examples and baseline:
        raise RunRefused("--examples is for the agent; the one-call baseline shows none")
    refusal = refused_option(record, name, language=language, split=split, questions=questions, choices=choices,
                             numbers=numbers, offline=offline, cache=cache, kb=kb)
    if refusal:
        raise RunRefused(refusal)
    split = "file" if questions else split or record.default_split
    numbers = numbers or default_numbers(record, gold)
    agent_config = AgentConfig(answer_guaranteed=True)
    try:
        loaded = loaded or read_dataset(dataset, split, data, language)
        chosen = loaded.examples[:limit]
        caveat = file_gold_caveat(name, [example.gold_answer for example in chosen]) if gold == "file" else None
        if gold == "live":
            chosen = [replace(example, gold_answer=None) for example in chosen]
        knowledge = open_kb(kb, cache_path=cache or out / "wikidata-cache.sqlite", offline=offline)
        if record.graph and (record.graph == "kqapro") != (knowledge.graph.name == "kqapro") \
                and (dataset or strings):
            raise ValueError(f"{kb or 'Wikidata'} holds the graph {knowledge.graph.name!r}; {name} needs "
                             + ("KQA Pro's" if strings else "Wikidata"))
        if baseline and knowledge.graph.name != "wikidata":
            raise ValueError(f"--baseline writes Wikidata Query Service queries; {kb} holds the graph "
                             f"{knowledge.graph.name!r}: run the agent")
        retriever, exclusion = open_examples(examples, loaded.examples, knowledge.graph.name) if examples \
            else (None, None)
        llm_config = llm or LLMConfig.from_env(os.environ)
        model = ChatModel.from_config(llm_config)
        settings = {
            "dataset": name, "split": split, "language": language, "model": model.resolve_model(),
            "kb": portable_path(kb, out) if kb else "wikidata", "prompt": fingerprint(),
            "baseline": baseline, "gold": gold, "numbers": numbers,
            "examples": portable_path(examples, out),
            "example_ranking": retriever.ranking() if retriever else None, "endpoint": endpoint(llm_config.base_url),
            "sampling": {"temperature": 0.0 if baseline else agent_config.temperature,
                         "top_p": None if baseline else agent_config.top_p,
                         "max_completion_tokens": None if baseline else agent_config.max_completion_tokens,
                         "max_path_actions": agent_config.max_path_actions,
                         "max_total_actions": agent_config.max_total_actions, "llm_timeout": llm_config.timeout},
            "kb_source": knowledge_base(kb, WikidataConfig.from_env(), out),
            "graph": f"{knowledge.graph.name} (local store)" if kb else "live Wikidata",
            "gold_source": gold_source(record, split, gold, portable_path(kb, out)),
            "code": code_version(),
            "repeats": repeats, "limit": limit}
        if questions:
            settings["questions"] = portable_path(questions, out)
            settings["questions_format"] = kind
            settings["dataset_id"] = loaded.dataset_id or questions.stem
        if strings:
            settings["setting"] = "choices" if choices else "open"
        scholarly = knowledge.graph.scholarly_service if agent_config.scholarly_service is None \
            else agent_config.scholarly_service
        settings["fingerprint"] = {
            "questions": fingerprints.questions_digest(loaded.examples),
            "graph": fingerprints.graph_digest(knowledge, settings["kb_source"], out, progress=progress),
            "profile": fingerprints.profile_digest(knowledge.graph),
            "prompts": fingerprints.prompts_digest(knowledge.graph, agent_config.answer_guaranteed, scholarly),
            "model": fingerprints.model_digest(settings),
            "examples": fingerprints.examples_digest(retriever.store if retriever else None, knowledge.graph.name,
                                                     settings["example_ranking"])}
        part = begin_part(out, settings, now(), force=force)
    except (DatasetError, LLMConfigurationError, ValueError, OSError) as error:
        raise RunRefused(str(error)) from error
    if retriever is not None and not retriever.store.count_for_graph(knowledge.graph.name):
        say(f"example store {examples}: no examples for the graph {knowledge.graph.name!r} "
            f"(its {retriever.store.count()} are for other graphs): none is shown")
    if exclusion is not None:
        say(f"example store {examples}: {exclusion.describe()}")
    if caveat:
        say(f"warning: {caveat}")
    if loaded.without_language:
        say(f"{len(loaded.without_language)} questions skipped: no {language!r} text "
            f"({', '.join(loaded.without_language)})")
    run = _Run(out=out, part=part, loaded=loaded, examples=chosen, kb=knowledge, llm=model,
               agent=Agent(llm=model, kb=knowledge, config=agent_config), retriever=retriever, exclusion=exclusion,
               repeats=repeats, workers=workers, progress=progress, say=say)
    if strings:
        return run.strings(data, choices, split)
    return run.results(baseline, numbers == "value")


@dataclass
class _Run:
    """A run whose settings are recorded: answering, scoring, closing the part, summarising."""

    out: Path
    part: int
    loaded: Any
    examples: list
    kb: Any
    llm: Any
    agent: Any
    retriever: Any
    exclusion: Any
    repeats: int
    workers: int
    progress: bool
    say: Callable[[str], None]

    def results(self, baseline: bool, numbers_by_value: bool) -> Evaluation:
        """SPARQL results: gold answers first, then every question, scored by the dataset's scorers."""
        from harness.evaluation import baseline_answerer, evaluate, now, with_gold_answers
        from harness.reporting import summarize
        from harness.run_info import finish_part

        asked = len(self.examples)
        examples, gold = with_gold_answers(self.examples, self.kb, self.out, progress=self.progress)
        if gold.empty:
            self.say(f"{len(gold.empty)} questions dropped: their gold query returns nothing")
        if gold.cut:
            self.say(f"{len(gold.cut)} questions excluded: their gold result was cut at the size limit")
        for status, ids in sorted(gold.failed.items()):
            self.say(f"{len(ids)} questions without gold yet: gold query {status} (retried next run): "
                     f"{', '.join(ids[:10])}{' ...' if len(ids) > 10 else ''}")
        answer = baseline_answerer(self.llm, self.kb) if baseline else example_answerer(self.agent, self.retriever)
        records, failures = evaluate(examples, answer, self.out, workers=self.workers, progress=self.progress,
                                     part=self.part, numbers_by_value=numbers_by_value,
                                     postprocess_kb=None if baseline else self.kb, repeats=self.repeats)
        unfinished = len(examples) * self.repeats - len(records)
        this_part = [record for record in records if record.get("part") == self.part]
        finish_part(self.out, self.part, {
            "in_split": len(self.loaded.examples) + len(self.loaded.without_language),
            "skipped_language": self.loaded.without_language, "asked": asked, "gold": gold.to_dict(),
            "scored": len(records), "failures": dict(failures),
            "examples": self.exclusion.to_dict() if self.exclusion is not None else None,
            "models_reported": dict(Counter(record.get("model") or "(not reported)" for record in this_part)),
            "protocols": dict(Counter(record.get("protocol", "tools") for record in this_part)),
            "finished_at": now()})
        line = ""
        if records:
            line = (f"{_answers(len(records), len(examples), self.repeats)}: "
                    f"F1 {100 * sum(r['f1'] for r in records) / len(records):.1f}, "
                    f"EM {100 * sum(r['em'] for r in records) / len(records):.1f}" + _retry(unfinished))
        return Evaluation(self.out, summarize(self.out) if records else None, line, unfinished,
                          sum(len(ids) for ids in gold.failed.values()))

    def strings(self, data: str | Path, choices: bool, split: str) -> Evaluation:
        """Answer strings (KQA Pro): the agent on the converted store, each answer read and judged as KQA Pro
        does, shown the solved examples of the retriever (those for KQA Pro's graph) when there is one."""
        from harness.evaluation import evaluate, now
        from harness.kqapro import result_record, with_choices
        from harness.kqapro_report import summarize_kqapro
        from harness.run_info import finish_part

        setting = "choices" if choices else "open"
        train = Path(data) / "kqapro" / "train.json"
        train_answers = {example.answer for example in read_dataset("kqapro", "train", data).examples} \
            if train.exists() else None
        answer = example_answerer(self.agent, self.retriever,
                                  (lambda example: with_choices(example.question, example.choices))
                                  if choices else None)
        records, failures = evaluate(
            self.examples, answer, self.out, workers=self.workers, progress=self.progress, part=self.part,
            record=lambda example, result: result_record(example, result, self.kb, setting, self.part, train_answers),
            repeats=self.repeats)
        unfinished = len(self.examples) * self.repeats - len(records)
        this_part = [record for record in records if record.get("part") == self.part]
        finish_part(self.out, self.part, {
            "in_split": len(self.loaded.examples), "skipped_language": [], "asked": len(self.examples), "gold": {},
            "scored": len(records), "failures": dict(failures),
            "examples": self.exclusion.to_dict() if self.exclusion is not None else None,
            "models_reported": dict(Counter(record.get("model") or "(not reported)" for record in this_part)),
            "finished_at": now()})
        judged = [record for record in records if record["correct"] is not None]
        answers = _answers(len(records), len(self.examples), self.repeats)
        line = ""
        if judged:
            line = (f"{answers}: accuracy {100 * sum(r['correct'] for r in judged) / len(judged):.2f} "
                    f"({setting})" + _retry(unfinished))
        elif records:
            line = (f"{answers} answered ({setting}); the {split} split has no public answers: export "
                    f"them with `python -m scripts.report --kqapro-predictions FILE {self.out}`" + _retry(unfinished))
        return Evaluation(self.out, summarize_kqapro(self.out) if records else None, line, unfinished)
