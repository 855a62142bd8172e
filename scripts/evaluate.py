"""Score the agent (or the one-call baseline) on a benchmark, resumably.

    python -m scripts.evaluate --dataset qald10 --out runs/qald10-gpt4o
    python -m scripts.evaluate --dataset spinach --split dev --limit 20 --kb stores/wikidata --out runs/dev20
    python -m scripts.evaluate --replay runs/qald10-gpt4o      # re-score stored predictions, no model, no network

Run the same command again after an interruption: finished questions are kept.
"""

from __future__ import annotations

import argparse
import os
import sys
from pathlib import Path

from harness.datasets import SPLITS, DatasetError, default_split, load_dataset


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="python -m scripts.evaluate", description=__doc__.splitlines()[0])
    parser.add_argument("--dataset", choices=sorted(SPLITS), help="which benchmark")
    parser.add_argument("--split", help="dev, test or train (default: test, or the only split)")
    parser.add_argument("--data", default="data", metavar="DIR",
                        help="where the dataset files are (default: data; see scripts/download_datasets.py)")
    parser.add_argument("--language", default="en", help="question language for QALD-10 (default: en)")
    parser.add_argument("--limit", type=int, metavar="N", help="only the first N questions")
    parser.add_argument("--model", help="model name (default: SPINACH_MODEL or gpt-4o)")
    parser.add_argument("--base-url", help="OpenAI-compatible endpoint (default: OPENAI_BASE_URL or OpenAI)")
    parser.add_argument("--kb", metavar="DIR", help="a local Oxigraph store instead of live Wikidata")
    parser.add_argument("--cache", metavar="PATH", default=None,
                        help="SQLite cache of Wikidata responses (default: OUT/wikidata-cache.sqlite)")
    parser.add_argument("--offline", action="store_true", help="answer Wikidata requests from the cache only")
    parser.add_argument("--workers", type=int, default=4, help="questions answered at once (default: 4)")
    parser.add_argument("--baseline", action="store_true", help="one LLM call writes the query, no exploration")
    parser.add_argument("--out", type=Path, metavar="DIR", help="where results and traces go")
    parser.add_argument("--replay", type=Path, metavar="DIR", help="re-score the predictions stored in DIR")
    parser.add_argument("--quiet", action="store_true", help="no progress bar")
    return parser


def main(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    from harness.evaluation import rescore

    if args.replay:
        records = rescore(args.replay)
        if not records:
            print(f"error: {args.replay} holds no results", file=sys.stderr)
            return 2
        print(f"re-scored {len(records)} questions: F1 {100 * sum(r['f1'] for r in records) / len(records):.1f}, "
              f"EM {100 * sum(r['em'] for r in records) / len(records):.1f}")
        return 0
    if not args.dataset or not args.out:
        print("error: --dataset and --out are needed (or --replay DIR)", file=sys.stderr)
        return 2
    from agent import Agent, AgentConfig
    from harness.evaluation import baseline_answerer, evaluate, with_gold_answers, write_run_info
    from agent.kb import open_kb
    from agent.llm import ChatModel, LLMConfig, LLMConfigurationError

    split = args.split or default_split(args.dataset)
    try:
        examples = load_dataset(args.dataset, split, args.data, args.language)[: args.limit]
        write_run_info(args.out, dataset=args.dataset, split=split, baseline=args.baseline,
                       model=args.model or os.environ.get("SPINACH_MODEL") or "gpt-4o", kb=args.kb)
        kb = open_kb(args.kb, cache_path=args.cache or args.out / "wikidata-cache.sqlite", offline=args.offline)
        llm = ChatModel.from_config(LLMConfig.from_env(os.environ, base_url=args.base_url, model=args.model))
    except (DatasetError, LLMConfigurationError, ValueError, OSError) as error:
        print(f"error: {error}", file=sys.stderr)
        return 2
    examples, dropped = with_gold_answers(examples, kb, args.out, progress=not args.quiet)
    if dropped:
        print(f"{dropped} questions dropped: their gold query returns nothing", file=sys.stderr)
    if args.baseline:
        answer = baseline_answerer(llm, kb)
    else:
        agent = Agent(llm=llm, kb=kb, config=AgentConfig(answer_guaranteed=True))

        def answer(example):
            return agent.run(example.question)

    records = evaluate(examples, answer, args.out, workers=args.workers, progress=not args.quiet)
    unfinished = len(examples) - len(records)
    if records:
        print(f"{len(records)} questions: F1 {100 * sum(r['f1'] for r in records) / len(records):.1f}, "
              f"EM {100 * sum(r['em'] for r in records) / len(records):.1f}"
              + (f"; {unfinished} unfinished (run again to retry them)" if unfinished else ""))
    return 0 if not unfinished else 1


if __name__ == "__main__":
    sys.exit(main())
