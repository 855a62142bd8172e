"""Build and use a local Wikidata store (or another graph's), or query another engine in the query service's dialect.

    python -m agent.kb load --store DIR FILE...      # add files to the store, each all or nothing
    python -m agent.kb load --graph kqapro --store DIR kb.json   # KQA Pro's knowledge base, as its SPARQL expects
    python -m agent.kb query --store DIR [SPARQL]    # SPARQL from the argument or standard input
    python -m agent.kb query --endpoint URL --dialect qlever [SPARQL]
    python -m agent.kb search --store DIR TEXT
"""

from __future__ import annotations

import argparse
import json
import logging
import sys

from agent.cli import program_name
from agent.graph import ProfileError, load_graph, profile_names
from agent.kb.base import KnowledgeBase, QueryStatus
from agent.kb.dialect import DIALECTS
from agent.kb.live import LiveWikidata, WikidataConfig
from agent.kb.local import LoadError, LocalKB, OtherGraph, StoreInUse
from agent.observations import format_query_result, format_search, format_table

FORMATS = """formats it loads (each plain, .gz or .bz2; streamed, so a file may be larger than memory):
  .ttl, .nt        query-service RDF dumps (Turtle, N-Triples), as they are
  .json, .ndjson   Wikidata JSON: Special:EntityData/Q42.json, a wbgetentities answer, or a dump
                   with one entity a line; a later load of an entity replaces its terms and statements
  .tsv             KGTK edge files (node1, label, node2, optional id, rank, node2;wikidatatype);
                   without a rank column every claim is best rank, so wdt: returns every value

dialects it speaks (query --endpoint URL --dialect NAME):
  wdqs       the Wikidata Query Service: queries go as written (the default)
  qlever     QLever: the WDQS prefixes a query uses are declared, SERVICE wikibase:label becomes
             OPTIONAL rdfs:label patterns with the same language fallback and bare-ID last resort;
             wikibase:mwapi, around and box say "not supported"
  sparql11   any SPARQL 1.1 endpoint holding Wikidata, prepared as for qlever
The agent and the bot take the same two settings from WIKIDATA_SPARQL_URL and WIKIDATA_SPARQL_DIALECT.
The local store speaks wdqs itself (it emulates the label service, hints and named subqueries) for Wikidata,
and runs the queries of a graph whose profile says sparql11 as written.

other graphs (load --graph NAME or PROFILE.toml; a store keeps its graph, so query and search need no --graph):
  kqapro     KQA Pro's kb.json, mapped as its SPARQL engine builds the graph (names, value nodes,
             fact nodes with qualifiers); its queries run as written (<pred:name>, <population>)
  ck25       CK25, the TEXT2SPARQL'25 corporate graph: load graphs/prod-inst.ttl and text2sparql.ttl
             (never queries.ttl, which holds the reference queries)
  a profile  any RDF graph (.ttl, .nt) whose label predicate, IDs and entries a profile file names;
             FILE.ttl.graph beside a file names the named graph it loads into (queries see their union)"""


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog=program_name("agent.kb"), description=__doc__.splitlines()[0],
                                     epilog=FORMATS, formatter_class=argparse.RawDescriptionHelpFormatter)
    commands = parser.add_subparsers(dest="command", required=True)
    load = commands.add_parser("load", help="add files to the store (each file all or nothing)", epilog=FORMATS,
                               formatter_class=argparse.RawDescriptionHelpFormatter)
    load.add_argument("--store", required=True, metavar="DIR", help="the store directory (created if missing)")
    load.add_argument("--graph", metavar="NAME|FILE",
                      help=f"the graph the store holds: {', '.join(profile_names())} (default: the store's, else "
                           "wikidata), or a profile file")
    load.add_argument("files", nargs="+", help="files to load")
    query = commands.add_parser("query", help="run a SPARQL query written for query.wikidata.org", epilog=FORMATS,
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    where = query.add_mutually_exclusive_group(required=True)
    where.add_argument("--store", metavar="DIR", help="a local store (opened read-only: a running bot may hold it)")
    where.add_argument("--endpoint", metavar="URL", help="a SPARQL endpoint instead of a local store")
    query.add_argument("--dialect", choices=DIALECTS, default="wdqs",
                       help="what the endpoint understands (default: wdqs)")
    query.add_argument("sparql", nargs="?", help="the query (default: read from standard input)")
    query.add_argument("--json", action="store_true", help="print SPARQL JSON results instead of a table")
    query.add_argument("--timeout", type=float, default=60.0, help="seconds before the query is stopped")
    search = commands.add_parser("search", help="find items and properties by label or alias")
    search.add_argument("--store", required=True, metavar="DIR", help="the store directory (opened read-only)")
    search.add_argument("text", help="what to look for")
    return parser


def _open(args: argparse.Namespace) -> KnowledgeBase:
    if args.command == "query" and args.endpoint:
        config = WikidataConfig.from_env()
        config.sparql_url, config.dialect, config.timeout = args.endpoint, args.dialect, args.timeout
        return LiveWikidata(config)
    graph = load_graph(args.graph) if getattr(args, "graph", None) else None
    return LocalKB(args.store, read_only=args.command != "load", graph=graph)


def main(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    logging.basicConfig(level=logging.WARNING, format="%(levelname)s: %(message)s")
    try:
        kb = _open(args)
    except (StoreInUse, FileNotFoundError, ProfileError, OtherGraph) as error:
        print(f"error: {error}", file=sys.stderr)
        return 2
    except OSError as error:
        print(f"error: cannot open the store {args.store}: {error}", file=sys.stderr)
        return 2
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
    elif result.status == QueryStatus.OK and result.boolean is None:
        print(format_table(result.variables, result.bindings, head=len(result.bindings), tail=0, shown=result.shown))
    else:
        print(format_query_result(result))
    return 0 if result.status.ran else 1


if __name__ == "__main__":
    sys.exit(main())
