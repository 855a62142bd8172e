"""Score the agent (or the one-call baseline) on a benchmark, resumably.

    python -m scripts.evaluate --dataset qald10 --out runs/qald10-gpt4o
    python -m scripts.evaluate --dataset qald10 --gold live --out runs/qald10-live   # gold from the query service
    python -m scripts.evaluate --dataset spinach --split dev --limit 20 --kb stores/wikidata --out runs/dev20
    python -m scripts.evaluate --dataset qald10 --gold live --base-url http://localhost:8000/v1 --out runs/local
    python -m scripts.evaluate --dataset qald10 --gold live --repeats 3 --out runs/qald10-x3   # spread of sampling
    python -m scripts.evaluate --rescore runs/qald10-gpt4o     # score stored predictions again, no model, no network
    python -m scripts.evaluate --dataset kqapro --split val --kb stores/kqapro --out runs/kqapro-val
    python -m scripts.evaluate --dataset kqapro --split val --kb stores/kqapro --choices --out runs/kqapro-val-mc
    python -m scripts.evaluate --questions ck25/questions.yml --kb stores/ck25 --out runs/ck25   # any graph's file

Run the same command again after an interruption: finished questions are kept,
failed ones (model, knowledge base, gold query) are tried again.  Resuming a
directory with another model, split, language, knowledge base or prompt, or
whose fingerprint differs (the questions' text and gold, the graph's triples,
its profile, the prompts as rendered for it, the model's settings, the example
store: harness/fingerprints.py), is refused unless --force, naming what
differs.  An option the dataset cannot use is refused in one line.  Without --model, an endpoint of your own is asked
which model it serves.  Also installed as ``spinach-eval``.
"""

from __future__ import annotations

import argparse
import os
import sys
from collections import Counter
from dataclasses import replace
from pathlib import Path
from typing import Any

from agent.cli import program_name
from harness.datasets import FILE_GOLD, SPLITS, DatasetError, default_split, file_gold_caveat, read_dataset


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog=program_name("scripts.evaluate"), description=__doc__.splitlines()[0],
                                     epilog="Environment: OPENAI_API_KEY, OPENAI_BASE_URL, SPINACH_MODEL, "
                                            "WIKIDATA_API_URL, WIKIDATA_SPARQL_URL, WIKIDATA_SPARQL_DIALECT "
                                            "(wdqs, qlever or sparql11), SPINACH_CONTACT.")
    parser.add_argument("--dataset", choices=sorted(SPLITS), help="which benchmark")
    parser.add_argument("--questions", type=Path, metavar="FILE",
                        help="instead of --dataset, the questions in FILE, for the graph of --kb: QALD-JSON, a "
                             "TEXT2SPARQL questions YAML (CK25's questions.yml), KQA Pro's JSON or SPINACH's")
    parser.add_argument("--split", help="dev, val, test or train (default: test, or the only split; val for kqapro)")
    parser.add_argument("--data", default="data", metavar="DIR",
                        help="where the dataset files are (default: data; see scripts/download_datasets.py)")
    parser.add_argument("--language", default="en",
                        help="question language for QALD-10 (default: en); questions without it are skipped "
                             "and counted")
    parser.add_argument("--limit", type=int, metavar="N", help="only the first N questions")
    parser.add_argument("--model", help="model name (default: SPINACH_MODEL; else the one model --base-url serves, "
                                        "or gpt-4o on OpenAI)")
    parser.add_argument("--base-url", help="OpenAI-compatible endpoint, e.g. a local vLLM or llama.cpp server "
                                           "(default: OPENAI_BASE_URL or OpenAI)")
    parser.add_argument("--llm-timeout", type=float, metavar="SECONDS",
                        help="seconds one model reply may take (default: 60; a local model may need more)")
    parser.add_argument("--repeats", type=int, default=1, metavar="N",
                        help="answer the split N times (sampling is at temperature 1.0); the report gives the mean "
                             "and spread across repeats beside the interval over questions (default: 1)")
    parser.add_argument("--api-key-file", metavar="PATH",
                        help="read the API key from this file instead of OPENAI_API_KEY")
    parser.add_argument("--kb", metavar="DIR", help="a local Oxigraph store instead of live Wikidata")
    parser.add_argument("--cache", metavar="PATH", default=None,
                        help="SQLite cache of Wikidata responses (default: OUT/wikidata-cache.sqlite)")
    parser.add_argument("--offline", action="store_true", help="answer Wikidata requests from the cache only")
    parser.add_argument("--workers", type=int, default=4, help="questions answered at once (default: 4)")
    parser.add_argument("--baseline", action="store_true", help="one LLM call writes the query, no exploration")
    parser.add_argument("--choices", action="store_true",
                        help="kqapro: the multiple-choice setting (the agent sees the ten choices; its answer counts "
                             "as the choice it is); default: open-ended")
    parser.add_argument("--examples", metavar="FILE",
                        help="an example store (spinach-examples): the agent's first prompt shows the 5 solved "
                             "examples most like each question; the evaluated split's own threads and questions are "
                             "excluded, and counted")
    parser.add_argument("--gold", choices=("file", "live"), default="file",
                        help="gold answers from the dataset file where it has them (default; QALD-10's are from "
                             "2022), or from running every gold query on the knowledge base now (as the paper did "
                             "for QALD-10)")
    parser.add_argument("--numbers", choices=("value", "lexical"),
                        help="compare typed numeric literals by value (\"+100\"^^xsd:decimal = 100) or by their "
                             "text (default: value for QALD-10's file answers, lexical otherwise)")
    parser.add_argument("--out", type=Path, metavar="DIR", help="where results and traces go")
    parser.add_argument("--force", action="store_true",
                        help="resume OUT even if it was run with other settings (recorded as a new part)")
    parser.add_argument("--rescore", type=Path, metavar="DIR", help="score the predictions stored in DIR again")
    parser.add_argument("--quiet", action="store_true", help="no progress bar")
    return parser


def knowledge_base(kb_dir: str | None, wikidata: Any, out_dir: Path) -> dict[str, str]:
    """What answered the agent's lookups and queries: a local store (relative to the run's directory), or
    Wikidata's endpoints (no credentials)."""
    from harness.run_info import endpoint, portable_path

    if kb_dir:
        return {"store": portable_path(kb_dir, out_dir)}
    return {"api": endpoint(wikidata.api_url), "sparql": endpoint(wikidata.sparql_url), "dialect": wikidata.dialect}


def gold_source(dataset: str, split: str, gold: str, kb_dir: str | None) -> str:
    """Where the gold answers come from, in words (*kb_dir* as ``run.json`` records it)."""
    where = f"the local store {kb_dir}" if kb_dir else "Wikidata"
    if dataset == "kqapro":
        return "KQA Pro's answers in the dataset file (its test split has none)"
    if gold == "file" and dataset in FILE_GOLD and split in FILE_GOLD[dataset]:
        return f"the dataset file's answers ({FILE_GOLD[dataset][split]}), else the gold queries run on {where}"
    return f"the gold queries run on {where} at the time of the run (gold.jsonl holds each retrieval time)"


def default_numbers(dataset: str, gold: str) -> str:
    """Numbers by value for QALD-10's file answers, whose 14 signed decimals no query service writes."""
    return "value" if dataset == "qald10" and gold == "file" else "lexical"


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


def refused_option(args: argparse.Namespace, dataset: str, kind: str | None) -> str | None:
    """Why an option given does nothing for this run's dataset (one line), or ``None`` when each one works."""
    kqapro = dataset == "kqapro"
    languages = dataset == "qald10" or kind in ("qald-json", "text2sparql")
    if args.language != "en" and not languages:
        return (f"--language is for QALD-10 and QALD-JSON or TEXT2SPARQL question files; {dataset}'s questions "
                "are in English only")
    if args.split and args.questions:
        return "--split names a split of a --dataset; a --questions file is one set of questions"
    if args.choices and not kqapro:
        return "--choices is KQA Pro's multiple-choice setting; other datasets have no choices"
    if args.numbers and kqapro:
        return "--numbers compares SPARQL literals; KQA Pro judges answer strings as its evaluation does"
    if (args.offline or args.cache) and args.kb:
        return "--offline and --cache are for live Wikidata's responses; --kb answers from the local store"
    return None


def rescore_main(directory: Path) -> int:
    from harness.evaluation import rescore
    from harness.run_info import read_run_info

    try:
        info = read_run_info(directory) if directory.is_dir() else {}
        records = rescore(directory, numbers_by_value=info.get("numbers") == "value")
    except (OSError, ValueError) as error:
        print(f"error: {error}", file=sys.stderr)
        return 2
    if not records:
        print(f"error: {directory} holds no results", file=sys.stderr)
        return 2
    if info.get("dataset") == "kqapro":
        judged = [record["correct"] for record in records if record["correct"] is not None]
        print(f"re-scored {len(records)} KQA Pro questions: " + (f"accuracy {100 * sum(judged) / len(judged):.2f}"
                                                                if judged else "none has a public answer"))
        return 0
    print(f"re-scored {len(records)} questions (numbers compared {info.get('numbers', 'lexical')}ly): "
          f"F1 {100 * sum(r['f1'] for r in records) / len(records):.1f}, "
          f"EM {100 * sum(r['em'] for r in records) / len(records):.1f}")
    return 0


def main(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    if args.rescore:
        return rescore_main(args.rescore)
    if not (args.dataset or args.questions) or not args.out or args.dataset and args.questions:
        print("error: --dataset or --questions, and --out, are needed (or --rescore DIR)", file=sys.stderr)
        return 2
    from agent import Agent, AgentConfig
    from harness.question_files import read_question_file
    from agent.kb import open_kb
    from agent.kb.live import WikidataConfig
    from agent.llm import ChatModel, LLMConfig, LLMConfigurationError
    from agent.prompts import fingerprint
    from harness import fingerprints
    from harness.evaluation import now
    from harness.run_info import begin_part, code_version, endpoint, portable_path

    if args.repeats < 1:
        print("error: --repeats needs a number of at least 1", file=sys.stderr)
        return 2
    try:
        kind, loaded = read_question_file(args.questions, args.language) if args.questions else (None, None)
    except DatasetError as error:
        print(f"error: {error}", file=sys.stderr)
        return 2
    dataset = args.dataset or ("kqapro" if kind == "kqapro" else args.questions.stem)
    split = "file" if args.questions else args.split or default_split(args.dataset)
    numbers = args.numbers or default_numbers(dataset, args.gold)
    kqapro = dataset == "kqapro"
    if kqapro and (args.baseline or args.gold == "live" or not args.kb):
        print("error: KQA Pro runs the agent on its converted store: give --kb DIR (built with `python -m "
              "agent.kb load --graph kqapro`), without --baseline or --gold live", file=sys.stderr)
        return 2
    if args.examples and args.baseline:
        print("error: --examples is for the agent; the one-call baseline shows none", file=sys.stderr)
        return 2
    refusal = refused_option(args, dataset, kind)
    if refusal:
        print(f"error: {refusal}", file=sys.stderr)
        return 2
    agent_config = AgentConfig(answer_guaranteed=True)
    try:
        loaded = loaded or read_dataset(args.dataset, split, args.data, args.language)
        examples = loaded.examples[: args.limit]
        caveat = file_gold_caveat(dataset, [example.gold_answer for example in examples]) \
            if args.gold == "file" else None
        if args.gold == "live":
            examples = [replace(example, gold_answer=None) for example in examples]
        kb = open_kb(args.kb, cache_path=args.cache or args.out / "wikidata-cache.sqlite", offline=args.offline)
        if kqapro != (kb.graph.name == "kqapro") and (args.dataset or kqapro):
            raise ValueError(f"{args.kb or 'Wikidata'} holds the graph {kb.graph.name!r}; {dataset} needs "
                             + ("KQA Pro's" if kqapro else "Wikidata"))
        if args.baseline and kb.graph.name != "wikidata":
            raise ValueError(f"--baseline writes Wikidata Query Service queries; {args.kb} holds the graph "
                             f"{kb.graph.name!r}: run the agent")
        retriever, exclusion = open_examples(args.examples, loaded.examples, kb.graph.name) if args.examples \
            else (None, None)
        api_key = Path(args.api_key_file).read_text().strip() if args.api_key_file else None
        llm_config = LLMConfig.from_env(os.environ, api_key=api_key, base_url=args.base_url, model=args.model,
                                        timeout=args.llm_timeout)
        llm = ChatModel.from_config(llm_config)
        settings = {
            "dataset": dataset, "split": split, "language": args.language, "model": llm.resolve_model(),
            "kb": portable_path(args.kb, args.out) if args.kb else "wikidata", "prompt": fingerprint(),
            "baseline": args.baseline, "gold": args.gold, "numbers": numbers,
            "examples": portable_path(args.examples, args.out),
            "example_ranking": retriever.ranking() if retriever else None, "endpoint": endpoint(llm_config.base_url),
            "sampling": {"temperature": 0.0 if args.baseline else agent_config.temperature,
                         "top_p": None if args.baseline else agent_config.top_p,
                         "max_completion_tokens": None if args.baseline else agent_config.max_completion_tokens,
                         "max_path_actions": agent_config.max_path_actions,
                         "max_total_actions": agent_config.max_total_actions, "llm_timeout": llm_config.timeout},
            "kb_source": knowledge_base(args.kb, WikidataConfig.from_env(), args.out),
            "graph": f"{kb.graph.name} (local store)" if args.kb else "live Wikidata",
            "gold_source": gold_source(dataset, split, args.gold, portable_path(args.kb, args.out)),
            "code": code_version(),
            "repeats": args.repeats, "limit": args.limit}
        if args.questions:
            settings["questions"] = portable_path(args.questions, args.out)
            settings["questions_format"] = kind
            settings["dataset_id"] = loaded.dataset_id or args.questions.stem
        if kqapro:
            settings["setting"] = "choices" if args.choices else "open"
        scholarly = kb.graph.scholarly_service if agent_config.scholarly_service is None \
            else agent_config.scholarly_service
        settings["fingerprint"] = {
            "questions": fingerprints.questions_digest(loaded.examples),
            "graph": fingerprints.graph_digest(kb, settings["kb_source"], args.out, progress=not args.quiet),
            "profile": fingerprints.profile_digest(kb.graph),
            "prompts": fingerprints.prompts_digest(kb.graph, agent_config.answer_guaranteed, scholarly),
            "model": fingerprints.model_digest(settings),
            "examples": fingerprints.examples_digest(retriever.store if retriever else None, kb.graph.name,
                                                     settings["example_ranking"])}
        part = begin_part(args.out, settings, now(), force=args.force)
    except (DatasetError, LLMConfigurationError, ValueError, OSError) as error:
        print(f"error: {error}", file=sys.stderr)
        return 2
    if retriever is not None and not retriever.store.count_for_graph(kb.graph.name):
        print(f"example store {args.examples}: no examples for the graph {kb.graph.name!r} "
              f"(its {retriever.store.count()} are for other graphs): none is shown", file=sys.stderr)
    if exclusion is not None:
        print(f"example store {args.examples}: {exclusion.describe()}", file=sys.stderr)
    if caveat:
        print(f"warning: {caveat}", file=sys.stderr)
    if loaded.without_language:
        print(f"{len(loaded.without_language)} questions skipped: no {args.language!r} text "
              f"({', '.join(loaded.without_language)})", file=sys.stderr)
    asked = len(examples)
    if kqapro:
        return run_kqapro(args, examples, loaded, kb, llm, part, retriever, exclusion)
    from harness.evaluation import baseline_answerer, evaluate, with_gold_answers
    from harness.run_info import finish_part

    examples, gold = with_gold_answers(examples, kb, args.out, progress=not args.quiet)
    if gold.empty:
        print(f"{len(gold.empty)} questions dropped: their gold query returns nothing", file=sys.stderr)
    if gold.cut:
        print(f"{len(gold.cut)} questions excluded: their gold result was cut at the size limit", file=sys.stderr)
    for status, ids in sorted(gold.failed.items()):
        print(f"{len(ids)} questions without gold yet: gold query {status} (retried next run): "
              f"{', '.join(ids[:10])}{' ...' if len(ids) > 10 else ''}", file=sys.stderr)
    answer = baseline_answerer(llm, kb) if args.baseline \
        else example_answerer(Agent(llm=llm, kb=kb, config=agent_config), retriever)

    records, failures = evaluate(examples, answer, args.out, workers=args.workers, progress=not args.quiet,
                                 part=part, numbers_by_value=numbers == "value",
                                 postprocess_kb=None if args.baseline else kb, repeats=args.repeats)
    unfinished = len(examples) * args.repeats - len(records)
    gold_failed = sum(len(ids) for ids in gold.failed.values())
    this_part = [record for record in records if record.get("part") == part]
    finish_part(args.out, part, {
        "in_split": len(loaded.examples) + len(loaded.without_language), "skipped_language": loaded.without_language,
        "asked": asked, "gold": gold.to_dict(), "scored": len(records), "failures": dict(failures),
        "examples": exclusion.to_dict() if exclusion is not None else None,
        "models_reported": dict(Counter(record.get("model") or "(not reported)" for record in this_part)),
        "protocols": dict(Counter(record.get("protocol", "tools") for record in this_part)),
        "finished_at": now()})
    if records:
        answers = f"{len(records)} answers ({len(examples)} questions x {args.repeats} repeats)" \
            if args.repeats > 1 else f"{len(records)} questions"
        print(f"{answers}: F1 {100 * sum(r['f1'] for r in records) / len(records):.1f}, "
              f"EM {100 * sum(r['em'] for r in records) / len(records):.1f}"
              + (f"; {unfinished} unfinished (run again to retry them)" if unfinished else ""))
    return 0 if not unfinished and not gold_failed else 1


def run_kqapro(args: argparse.Namespace, examples: list, loaded, kb, llm, part: int, retriever=None,
               exclusion=None) -> int:
    """A KQA Pro run: the agent on the converted store, each answer read and judged as KQA Pro does, *repeats*
    times, shown the solved examples of *retriever* (those for KQA Pro's graph) when there is one."""
    from agent import Agent, AgentConfig
    from harness.evaluation import evaluate, now
    from harness.kqapro import result_record, with_choices
    from harness.run_info import finish_part

    setting = "choices" if args.choices else "open"
    train = Path(args.data) / "kqapro" / "train.json"
    train_answers = {example.answer for example in read_dataset("kqapro", "train", args.data).examples} \
        if train.exists() else None
    agent = Agent(llm=llm, kb=kb, config=AgentConfig(answer_guaranteed=True))
    answer = example_answerer(agent, retriever, (lambda example: with_choices(example.question, example.choices))
                              if args.choices else None)
    records, failures = evaluate(examples, answer, args.out, workers=args.workers, progress=not args.quiet, part=part,
                                 record=lambda example, result: result_record(example, result, kb, setting, part,
                                                                              train_answers), repeats=args.repeats)
    unfinished = len(examples) * args.repeats - len(records)
    this_part = [record for record in records if record.get("part") == part]
    finish_part(args.out, part, {
        "in_split": len(loaded.examples), "skipped_language": [], "asked": len(examples), "gold": {},
        "scored": len(records), "failures": dict(failures),
        "examples": exclusion.to_dict() if exclusion is not None else None,
        "models_reported": dict(Counter(record.get("model") or "(not reported)" for record in this_part)),
        "finished_at": now()})
    judged = [record for record in records if record["correct"] is not None]
    answers = f"{len(records)} answers ({len(examples)} questions x {args.repeats} repeats)" \
        if args.repeats > 1 else f"{len(records)} questions"
    if judged:
        print(f"{answers}: accuracy {100 * sum(r['correct'] for r in judged) / len(judged):.2f} "
              f"({setting})" + (f"; {unfinished} unfinished (run again to retry them)" if unfinished else ""))
    elif records:
        print(f"{answers} answered ({setting}); the {args.split} split has no public answers: export "
              f"them with `python -m scripts.report --kqapro-predictions FILE {args.out}`"
              + (f"; {unfinished} unfinished (run again to retry them)" if unfinished else ""))
    return 0 if not unfinished else 1


if __name__ == "__main__":
    sys.exit(main())
