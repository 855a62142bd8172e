"""Answer one question from the command line, printing the agent's steps as it takes them.

    python -m agent "Who were the doctoral advisors of Leonhard Euler?"
    python -m agent --kb stores/wikidata "..."            # a local Oxigraph store, no network
    python -m agent --kb stores/kqapro "..."              # KQA Pro's store: its graph profile comes with it
    python -m agent --cache cache.sqlite --offline "..."  # replay from the response cache only
"""

from __future__ import annotations

import argparse
import itertools
import json
import os
import sys
from collections.abc import Callable
from datetime import timezone
from pathlib import Path

from agent import Agent, AgentConfig
from agent.kb import open_kb
from agent.cli import add_engine_options, program_name, protocol_line
from agent.kb.base import CrossCheck, EngineOutcome
from agent.kb.live import WikidataConfig, read_days
from agent.llm import ChatModel, LLMConfig, LLMConfigurationError
from agent.observations import format_table
from agent.trace import AgentResult, Step, StopReason


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog=program_name("agent"),
        description="Answer a question about Wikidata with a SPARQL query, exploring Wikidata step by step.",
        epilog="Environment: OPENAI_API_KEY, OPENAI_BASE_URL, SPINACH_MODEL (the language model); "
               "WIKIDATA_API_URL, WIKIDATA_SPARQL_URL (other Wikibase or SPARQL endpoints), "
               "WIKIDATA_SPARQL_DIALECT (what that endpoint speaks: wdqs, qlever or sparql11); "
               "WIKIDATA_ENGINES, WIKIDATA_STALE_AFTER_DAYS (as --engines, --stale-after-days); "
               "SPINACH_CONTACT (your contact, sent in the User-Agent as Wikimedia asks).",
    )
    parser.add_argument("question", help="the question, in quotes")
    parser.add_argument("--kb", metavar="DIR", help="answer from a local Oxigraph store instead of live Wikidata "
                                                    "(the graph it holds: Wikidata, KQA Pro, or another by profile)")
    parser.add_argument("--cache", metavar="PATH", help="SQLite file caching every Wikidata response")
    parser.add_argument("--offline", action="store_true", help="answer only from --cache; never touch the network")
    parser.add_argument("--model", help="model name (default: SPINACH_MODEL; else the one an endpoint of your own "
                                        "serves, or gpt-4o on OpenAI)")
    parser.add_argument("--base-url", help="OpenAI-compatible endpoint (default: OPENAI_BASE_URL or OpenAI)")
    parser.add_argument("--api-key-file", metavar="PATH",
                        help="read the API key from this file instead of OPENAI_API_KEY")
    parser.add_argument("--llm-timeout", type=float, metavar="SECONDS",
                        help="seconds one model reply may take (default: 60; a local model may need more)")
    parser.add_argument("--llm-stream", action="store_true",
                        help="ask for replies in chunks, so that a request closed at its timeout stops a local "
                             "server's generation (llama-cpp-python's server)")
    parser.add_argument("--max-seconds", type=float, metavar="SECONDS",
                        help="seconds the whole run may take, its model calls and the end-of-run extraction "
                             "included (default: no limit but the steps')")
    add_engine_options(parser)
    parser.add_argument("--contact", help="contact for the User-Agent (default: SPINACH_CONTACT)")
    parser.add_argument("--answer-guaranteed", action="store_true",
                        help="tell the model an answer exists in Wikidata (as in benchmarks)")
    parser.add_argument("--max-path-actions", type=int, default=15, metavar="N",
                        help="most actions on the final path (default: 15)")
    parser.add_argument("--max-total-actions", type=int, default=30, metavar="N",
                        help="most actions in all, rolled-back ones included (default: 30)")
    parser.add_argument("--json", action="store_true", help="print the whole run as JSON instead of text")
    return parser


def step_printer() -> Callable[[Step], None]:
    """Print each step as the agent takes it, numbered."""
    numbers = itertools.count(1)

    def show(step: Step) -> None:
        print(f"\n[{next(numbers)}] Thought: {step.thought}")
        print(f"    Action: {step.action}({step.argument})")
        if step.rolled_back:
            print("    (rolled back: this action repeats an earlier one, or stops without a usable query)")
        elif step.observation is not None:
            print("    Observation: " + step.observation.replace("\n", "\n    "))
        sys.stdout.flush()

    return show


def engine_lines(check: CrossCheck) -> list[str]:
    """The final query on each engine, one line each: what it found or why not, how fresh its data is, its link."""
    lines = []
    for run in check.runs:
        found = f"{run.rows} rows" if run.outcome is EngineOutcome.ANSWERED else f"{run.outcome.value}: {run.reason}"
        if run.outcome is EngineOutcome.ANSWERED and len(check.answered) > 1 and check.only_in(run):
            found += f", {check.only_in(run)} only here"
        date = f"; data of {run.data_date.modified.astimezone(timezone.utc):%Y-%m-%d %H:%M} UTC " \
               f"({run.data_date.source})" if run.data_date else ""
        stale = " (stale)" if run.engine.key in check.stale else ""
        lines.append(f"On {run.engine.name}: {found}{date}{stale}" + (f"\n    {run.try_link}" if run.try_link else ""))
    return lines


def print_result(result: AgentResult) -> None:
    print(f"\nEnded: {result.stop_reason} ({result.stop_message})")
    if switched := protocol_line(result):
        print(switched)
    if result.end_of_run:
        print("End of run: " + ", ".join(result.end_of_run))
    if result.stop_reason == StopReason.CANNOT_ANSWER:
        print("The model found that Wikidata cannot answer the question.")
    elif result.final_sparql is None:
        print("No query answers the question.")
    else:
        print(("\nBest-effort SPARQL" if result.best_effort else "\nFinal SPARQL") + ":\n" + result.final_sparql)
        if isinstance(result.answer, bool):
            print(f"\nAnswer: {result.answer}")
        elif result.answer is not None:
            print("\n" + format_table(result.variables, result.answer, head=20, tail=5))
    if result.cross_check is not None:
        print("\n" + "\n".join(engine_lines(result.cross_check)))
    if result.explanation:
        print(f"\nExplanation{f' ({result.language})' if result.language else ''}: {result.explanation}")
    usage = result.usage
    print(f"\n{usage.llm_calls} LLM calls, {usage.prompt_tokens} prompt tokens ({usage.cached_tokens} cached), "
          f"{usage.completion_tokens} completion tokens, {usage.kb_calls} knowledge-base calls, {usage.seconds:.1f} s")


def main(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    api_key = None
    if args.api_key_file:
        try:
            api_key = Path(args.api_key_file).read_text().strip()
        except OSError as error:
            print(f"error: cannot read the API key file: {error}", file=sys.stderr)
            return 2
    try:
        llm = ChatModel.from_config(LLMConfig.from_env(os.environ, base_url=args.base_url, api_key=api_key,
                                                       model=args.model, timeout=args.llm_timeout,
                                                       stream=True if args.llm_stream else None))
        config = WikidataConfig.from_env()
        if args.contact:
            config.contact = args.contact
        if args.engines is not None:
            config = config.with_engines(args.engines, "--engines")
        if args.stale_after_days is not None:
            config.stale_after_days = read_days(args.stale_after_days, "--stale-after-days")
        kb = open_kb(args.kb, cache_path=args.cache, offline=args.offline, config=config)
    except (LLMConfigurationError, ValueError, OSError) as error:
        print(f"error: {error}", file=sys.stderr)
        return 2
    agent = Agent(llm=llm, kb=kb, config=AgentConfig(
        answer_guaranteed=args.answer_guaranteed, max_path_actions=args.max_path_actions,
        max_total_actions=args.max_total_actions, max_seconds=args.max_seconds))
    result = agent.run(args.question, on_step=None if args.json else step_printer())
    if args.json:
        print(json.dumps(result.to_dict(), ensure_ascii=False, indent=1))
    else:
        print_result(result)
    return 0 if result.final_sparql is not None else 1


if __name__ == "__main__":
    sys.exit(main())
