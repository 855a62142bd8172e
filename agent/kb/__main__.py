"""Build and use a local Wikidata store.

    python -m agent.kb load --store DIR FILE...      # Turtle/N-Triples, Wikidata JSON, KGTK TSV (.gz, .bz2)
    python -m agent.kb query --store DIR [SPARQL]    # SPARQL from the argument or standard input
    python -m agent.kb search --store DIR TEXT
"""

from __future__ import annotations

import argparse
import json
import sys

from agent.kb.local import LoadError, LocalKB
from agent.observations import format_query_result, format_search, format_table


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="python -m agent.kb", description=__doc__.splitlines()[0])
    commands = parser.add_subparsers(dest="command", required=True)
    load = commands.add_parser("load", help="add files to the store (each file all or nothing)")
    load.add_argument("--store", required=True, metavar="DIR", help="the store directory (created if missing)")
    load.add_argument("files", nargs="+", help="files to load")
    query = commands.add_parser("query", help="run a SPARQL query written for query.wikidata.org")
    query.add_argument("--store", required=True, metavar="DIR", help="the store directory")
    query.add_argument("sparql", nargs="?", help="the query (default: read from standard input)")
    query.add_argument("--json", action="store_true", help="print SPARQL JSON results instead of a table")
    query.add_argument("--timeout", type=float, default=60.0, help="seconds before the query is stopped")
    search = commands.add_parser("search", help="find items and properties by label or alias")
    search.add_argument("--store", required=True, metavar="DIR", help="the store directory")
    search.add_argument("text", help="what to look for")
    return parser


def main(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    kb = LocalKB(args.store)
    if args.command == "load":
        try:
            added = kb.load(args.files)
        except LoadError as error:
            print(f"error: {error}; the store was left as it was before this file", file=sys.stderr)
            return 1
        print(f"loaded {added} triples from {len(args.files)} file(s) into {args.store}")
        return 0
    if args.command == "search":
        print(format_search(kb.search(args.text)))
        return 0
    sparql = args.sparql if args.sparql is not None else sys.stdin.read()
    result = kb.execute(sparql, timeout=args.timeout)
    if args.json:
        if result.boolean is not None:
            print(json.dumps({"head": {}, "boolean": result.boolean}))
        else:
            print(json.dumps({"head": {"vars": result.variables}, "results": {"bindings": result.bindings}}))
    elif result.status == "ok" and result.boolean is None:
        print(format_table(result.variables, result.bindings, head=len(result.bindings), tail=0))
    else:
        print(format_query_result(result))
    return 0 if result.status in ("ok", "empty") else 1


if __name__ == "__main__":
    sys.exit(main())
