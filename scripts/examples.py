"""Build, update and search the example store: solved requests the agent sees in its first prompt.

    spinach-examples build --data data              # the datasets' non-test splits, then the forum and its archive
    spinach-examples build --data data --no-forum   # the datasets only: no wiki needed
    spinach-examples update                         # archive pages new or changed since the last harvest, the forum
    spinach-examples search "Who were Euler's doctoral advisors?"
    spinach-examples corrections                    # what did people fix under the bot's replies?

The store is one SQLite file: ``--store``, else ``examples_path`` of
``bot.ini`` (``--config``), else ``examples.sqlite``.  The forum is read
through pywikibot as the bot reads it (``user-config.py``; see ``python -m
bot.run --help``); nothing is written to the wiki.  The names of the
properties the examples use are read from the knowledge base (live Wikidata,
or ``--kb DIR``), and live Wikidata says which items and properties exist: a
query naming one it does not have (deleted, or merged) is not stored.  Also
run as ``python -m scripts.examples``.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
from pathlib import Path

from agent.cli import program_name
from agent.examples.existence import Existence
from agent.examples.meaning import MEANINGS, THREADS, THREADS_VARIABLE
from agent.examples.naming import name_properties
from agent.examples.retrieval import Retriever, prompt_examples
from agent.examples.store import ExampleStore
from agent.kb.base import KnowledgeBase
from bot.config import BotConfig
from bot.run import ENVIRONMENT
from bot.short_links import ShortLinks

DEFAULT_STORE = "examples.sqlite"
#: The variables this command reads: the knowledge base that names properties, the wiki read as the bot reads it.
READS = ("WIKIDATA_API_URL", "WIKIDATA_SPARQL_URL", "WIKIDATA_SPARQL_DIALECT", "SPINACH_CONTACT", "SPINACH_BOT_USER",
         "SPINACH_BOT_PASSWORD_FILE", "SPINACH_BOT_API_URL", "SPINACH_BOT_FAMILY", "SPINACH_BOT_LANG", "PYWIKIBOT_DIR")


#: The most seconds one harvest waits on the shortener in all; a link it would not answer in time stays text.
HARVEST_WAIT = 300.0


def environment() -> str:
    """The lines of the bot's environment block (``python -m bot.run --help``) for the variables this command reads."""
    header, *lines = ENVIRONMENT.split("\n\n")[0].splitlines()
    return "\n".join([header, *(line for line in lines if line.split()[0] in READS)])


def build_parser() -> argparse.ArgumentParser:
    common = argparse.ArgumentParser(add_help=False)
    common.add_argument("--store", metavar="FILE", help=f"the example store (default: examples_path of bot.ini, "
                                                        f"else {DEFAULT_STORE})")
    common.add_argument("--config", metavar="FILE", help="the bot's settings (default: bot.ini if present)")
    common.add_argument("--threads", type=_threads, metavar="N",
                        help=f"threads of the multilingual model (default: {THREADS_VARIABLE}, else {THREADS})")
    parser = argparse.ArgumentParser(prog=program_name("scripts.examples"), description=__doc__.splitlines()[0],
                                     formatter_class=argparse.RawDescriptionHelpFormatter,
                                     epilog="\n".join(__doc__.splitlines()[2:8]) + "\n\n" + environment())
    commands = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")

    def forum_options(command: argparse.ArgumentParser) -> None:
        command.add_argument("--page", help="the forum page; its archive is PAGE/Archive/YYYY/MM "
                                            "(default: page of bot.ini, else Wikidata:Request a query)")
        command.add_argument("--short-links", metavar="URL", default=None,
                             help="where w.wiki short links are followed (default: https://w.wiki/)")
        command.add_argument("--archivers", metavar="NAMES", default=None,
                             help="the accounts that archive the forum, comma-separated: only what they wrote on "
                                  "its archive pages is read (default: archivers of bot.ini)")

    def naming_options(command: argparse.ArgumentParser) -> None:
        command.add_argument("--kb", metavar="DIR", help="name properties from a local store (default: live "
                                                         "Wikidata, which also says which items and properties exist)")
        command.add_argument("--cache", metavar="FILE", help="SQLite cache of Wikidata responses")
        command.add_argument("--quiet", action="store_true", help="no progress bar")

    build = commands.add_parser("build", parents=[common],
                                help="add the datasets' non-test splits, then harvest the forum")
    build.add_argument("--data", default="data", metavar="DIR",
                       help="where the dataset files are (default: data; see scripts/download_datasets.py)")
    build.add_argument("--no-forum", action="store_true", help="the datasets only; do not read the wiki")
    forum_options(build)
    naming_options(build)
    update = commands.add_parser("update", parents=[common],
                                 help="harvest archive pages new or changed since, and the forum page")
    forum_options(update)
    naming_options(update)
    search = commands.add_parser("search", parents=[common], help="the examples most like a question")
    search.add_argument("question")
    search.add_argument("-k", type=int, default=5, help="how many (default: 5)")
    search.add_argument("--plain", action="store_true", help="plain BM25 over the question's words only")
    search.add_argument("--prompt", action="store_true", help="print them as the agent's first prompt shows them")
    corrections = commands.add_parser("corrections", parents=[common],
                                      help="the queries people posted to correct the bot's")
    corrections.add_argument("--json", action="store_true", help="one JSON object a line")
    return parser


def _threads(text: str) -> int:
    if not text.isdigit() or int(text) < 1:
        raise argparse.ArgumentTypeError(f"{text!r} is not a whole number of 1 or more")
    return int(text)


def _config(args: argparse.Namespace) -> BotConfig:
    path = args.config or ("bot.ini" if Path("bot.ini").exists() else None)
    return BotConfig.from_file(path) if path else BotConfig()


def _knowledge_base(args: argparse.Namespace) -> KnowledgeBase:
    """The knowledge base that names the properties and (live Wikidata) says which IDs exist."""
    from agent.kb import open_kb

    return open_kb(args.kb, cache_path=args.cache, read_only=False)


def _existence(kb: KnowledgeBase, args: argparse.Namespace) -> Existence | None:
    """Who says which IDs exist: live Wikidata; not a local store, which may hold part of the graph (said once)."""
    if args.kb:
        print(f"note: the examples' items and properties are not checked against Wikidata: {args.kb} may hold part "
              "of the graph", file=sys.stderr)
        return None
    return Existence(kb)


def _existence_lines(existence: Existence | None) -> list[str]:
    if existence is None or not existence.failed:
        return []
    return [f"IDs not checked (the examples naming them were stored): {failure}" for failure in existence.failed]


def _name_properties(store: ExampleStore, kb: KnowledgeBase) -> None:
    report = name_properties(store, kb)
    print(f"properties named: {report.looked_up} looked up, {report.names} names"
          + (f"; {len(report.failed)} batches not read (looked up again next time)" if report.failed else ""))


def _keep_vectors(store: ExampleStore, args: argparse.Namespace) -> None:
    if MEANINGS.available():
        print(f"vectors: {MEANINGS.keep(store, progress=not args.quiet)} computed and kept")
    else:
        print("vectors: none (the multilingual model did not load: examples are ranked by their words alone)")


def _harvest(store: ExampleStore, args: argparse.Namespace, config: BotConfig,
             existence: Existence | None = None) -> int:
    import pywikibot

    from bot.archive import harvest
    from bot.forum import normalize_user

    try:
        site = pywikibot.Site()
    except pywikibot.exceptions.Error as error:
        print(f"error: cannot reach the wiki: {error}", file=sys.stderr)
        return 2
    bot = normalize_user(site.username() or "")
    if not bot:
        print("note: no bot account is configured (SPINACH_BOT_USER): corrections under the bot's replies cannot "
              "be told apart", file=sys.stderr)
    # One harvest is one long pass: each link's Retry-After is honoured, up to HARVEST_WAIT seconds in all.
    links = ShortLinks(args.short_links or config.short_links, os.environ.get("SPINACH_CONTACT", ""),
                       question_wait=HARVEST_WAIT, pass_wait=HARVEST_WAIT)
    archivers = args.archivers.split(",") if args.archivers else config.archiver_names
    if not archivers:
        print("note: no archivers are named (--archivers, or archivers in bot.ini): only pages the forum page was "
              "moved to are harvested from its archive", file=sys.stderr)
    report = harvest(site, store, args.page or config.page, bot, links.query, progress=not args.quiet,
                     archivers=archivers, existence=existence)
    for line in report.lines():
        print(line)
    return 0


def build_main(store: ExampleStore, args: argparse.Namespace, config: BotConfig) -> int:
    from harness.examples import load_example_splits

    examples, notes = load_example_splits(args.data)
    for note in notes:
        print(f"note: {note}", file=sys.stderr)
    kb = _knowledge_base(args)
    existence = _existence(kb, args)
    counts = store.add(examples, existence)
    print(f"datasets: {len(examples)} examples ({counts.added} new, {counts.updated} updated"
          + (f", {len(counts.refused)} not stored: their query does not parse or names a malformed or missing ID"
             if counts.refused else "") + ")")
    for line in counts.refusal_lines():
        print(line)
    status = 0 if args.no_forum else _harvest(store, args, config, existence)
    for line in _existence_lines(existence):
        print(line)
    _name_properties(store, kb)
    _keep_vectors(store, args)
    return status


def update_main(store: ExampleStore, args: argparse.Namespace, config: BotConfig) -> int:
    kb = _knowledge_base(args)
    existence = _existence(kb, args)
    status = _harvest(store, args, config, existence)
    for line in _existence_lines(existence):
        print(line)
    _name_properties(store, kb)
    _keep_vectors(store, args)
    return status


def search_main(store: ExampleStore, args: argparse.Namespace) -> int:
    retriever = Retriever(store, use_properties=not args.plain, use_meaning=not args.plain)
    named = retriever.named_properties(args.question) if not args.plain else {}
    if named:
        print("properties named: " + ", ".join(f"{pid} ({phrase})" for pid, phrase in named.items()))
    matches = retriever.similar(args.question, args.k)
    if not matches:
        print("no example matches")
        return 1
    if args.prompt:
        for shown in prompt_examples(matches):
            print(f"- {shown.question} → {shown.query}")
        return 0
    for rank, match in enumerate(matches, 1):
        example = match.example
        print(f"{rank}. [{example.source}] {example.question}  (score {match.score:.3f}"
              + (f", shows {' '.join(sorted(match.shows))}" if match.shows else "") + ")")
        if example.link:
            print(f"   {example.link}" + (f" ({example.date})" if example.date else ""))
        print("   " + example.sparql.replace("\n", "\n   "))
    return 0


def corrections_main(store: ExampleStore, args: argparse.Namespace) -> int:
    found = store.corrections()
    for example in found:
        if args.json:
            print(json.dumps({"date": example.date, "link": example.link, "user": example.author,
                              "question": example.question, "bot_query": example.bot_sparql,
                              "their_query": example.sparql}, ensure_ascii=False))
            continue
        print(f"{example.date}  {example.link}  by {example.author}")
        print(f"  question: {example.question}")
        print("  the bot's query:\n    " + example.bot_sparql.replace("\n", "\n    "))
        print("  their query:\n    " + example.sparql.replace("\n", "\n    ") + "\n")
    if not args.json:
        print(f"{len(found)} correction{'' if len(found) == 1 else 's'}")
    return 0


def main(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    if args.threads:
        MEANINGS.threads = args.threads
    try:
        config = _config(args)
        path = args.store or config.examples_path or DEFAULT_STORE
        store = ExampleStore(path, read_only=args.command in ("search", "corrections"))
    except (ValueError, OSError) as error:
        print(f"error: {error}", file=sys.stderr)
        return 2
    try:
        if args.command == "build":
            return build_main(store, args, config)
        if args.command == "update":
            return update_main(store, args, config)
        if args.command == "search":
            return search_main(store, args)
        return corrections_main(store, args)
    except (ValueError, OSError) as error:  # a local store that cannot be opened, a bad dataset directory
        print(f"error: {error}", file=sys.stderr)
        return 2
    finally:
        store.close()


if __name__ == "__main__":
    sys.exit(main())
