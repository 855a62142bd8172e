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
from pathlib import Path

from agent.cli import program_name
from harness.datasets import DATASETS


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog=program_name("scripts.evaluate"), description=__doc__.splitlines()[0],
                                     epilog="Environment: OPENAI_API_KEY, OPENAI_BASE_URL, SPINACH_MODEL, "
                                            "WIKIDATA_API_URL, WIKIDATA_SPARQL_URL, WIKIDATA_SPARQL_DIALECT "
                                            "(wdqs, qlever or sparql11), SPINACH_CONTACT.")
    parser.add_argument("--dataset", choices=sorted(DATASETS), help="which benchmark")
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


def rescore_main(directory: Path) -> int:
    from harness.datasets import Gold, dataset_of
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
    if dataset_of(info).gold is Gold.STRINGS:
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
    from agent.llm import LLMConfig
    from harness.run import RunRefused, evaluate

    try:
        api_key = Path(args.api_key_file).read_text().strip() if args.api_key_file else None
    except OSError as error:
        print(f"error: {error}", file=sys.stderr)
        return 2
    llm = LLMConfig.from_env(os.environ, api_key=api_key, base_url=args.base_url, model=args.model,
                             timeout=args.llm_timeout)
    try:
        done = evaluate(out=args.out, dataset=args.dataset, questions=args.questions, split=args.split,
                        data=args.data, language=args.language, limit=args.limit, kb=args.kb, llm=llm,
                        baseline=args.baseline, choices=args.choices, examples=args.examples, gold=args.gold,
                        numbers=args.numbers, repeats=args.repeats, workers=args.workers, cache=args.cache,
                        offline=args.offline, force=args.force, progress=not args.quiet)
    except RunRefused as error:
        print(f"error: {error}", file=sys.stderr)
        return 2
    if done.line:
        print(done.line)
    return 0 if done.complete else 1


if __name__ == "__main__":
    sys.exit(main())
