"""``spinach-serve``: the agent as a service, for the graphs it is given.

    spinach-serve                                        # live Wikidata on http://127.0.0.1:8000/
    spinach-serve --graph wikidata=live --graph ck25=stores/ck25 \\
        --dataset https://text2sparql.aksw.org/2025/corporate/=ck25 --port 8080

The chat page is at ``/``, the TEXT2SPARQL API at ``/text2sparql``.  The
model is configured as for ``python -m agent`` (``OPENAI_API_KEY``,
``OPENAI_BASE_URL``, ``SPINACH_MODEL``); the key stays in this process.

Every secret configured (the model's key, credentials in any configured URL)
is masked in whatever the model and the graphs answer, before the agent sees
it, so no answer of the API and no event of the chat page holds it
(:mod:`agent.redact`).  The log (stderr, uvicorn's lines included) is one
line a record, with every value a request or a model put in it masked,
bounded and escaped (:mod:`agent.logs`): nothing they send can write a line
that reads as the server's own or reach the operator's terminal raw.  It
holds the service's own lines (a question and its outcome, a refusal, a
stopped run); a line for every HTTP request only with ``--access-log``.

A TEXT2SPARQL question is answered within ``--answer-within`` seconds (its
best query so far when its run is still going then), below the challenge
client's 180-s read timeout: a question that client gets no query for is
skipped and scores 0.
"""

from __future__ import annotations

import argparse
import importlib
import ipaddress
import logging
import os
import sqlite3
import sys
from collections.abc import MutableMapping

from agent.cli import add_engine_options, program_name
from agent.graph import DIALECTS
from agent.kb.engines import parse_engines
from agent.kb.live import read_days
from agent.llm import ChatModel, LLMConfig, LLMConfigurationError
from agent.logs import install as install_logging
from agent.redact import Scrubbed, redact, remember_environment
from serve.conversations import Conversations
from serve.graphs import LIVE, GraphSpecError, open_graphs
from serve.runs import PoolLimits


def build_parser() -> argparse.ArgumentParser:
    defaults = PoolLimits()
    parser = argparse.ArgumentParser(
        prog=program_name("serve"),
        description="Serve the agent: a chat page at / and the TEXT2SPARQL API at /text2sparql.",
        epilog="Environment: OPENAI_API_KEY, OPENAI_BASE_URL, SPINACH_MODEL (the language model); "
               "WIKIDATA_API_URL, WIKIDATA_SPARQL_URL, WIKIDATA_SPARQL_DIALECT, SPINACH_CONTACT (live Wikidata). "
               f"The service needs the package's [serve] extra: {SERVE_EXTRA}.")
    parser.add_argument("--graph", action="append", default=[], metavar="NAME=SOURCE",
                        help=f"a graph to serve: SOURCE is {LIVE} (Wikidata) or a local store's directory "
                             f"(repeatable; default: wikidata={LIVE})")
    parser.add_argument("--dataset", action="append", default=[], metavar="IRI=NAME",
                        help="a TEXT2SPARQL dataset IRI that selects the graph NAME (repeatable)")
    parser.add_argument("--host", default="127.0.0.1", help="address to listen on (default: 127.0.0.1)")
    parser.add_argument("--port", type=int, default=8000, help="port to listen on (default: 8000)")
    parser.add_argument("--trusted-proxy", action="append", default=[], metavar="ADDRESS",
                        help="a reverse proxy whose X-Forwarded-For header names the client (repeatable; an "
                             "address or a network such as 10.0.0.0/8); by default no header is trusted and each "
                             "connection's own address is the client the per-address limit counts")
    parser.add_argument("--workers", type=int, default=defaults.workers, metavar="N",
                        help=f"questions answered at once (default: {defaults.workers})")
    parser.add_argument("--queue", type=int, default=defaults.queue, metavar="N",
                        help=f"questions waiting beyond those; more are refused (default: {defaults.queue})")
    parser.add_argument("--per-client", type=int, default=defaults.per_client, metavar="N",
                        help=f"questions one address may have running (default: {defaults.per_client}); the API "
                             "refuses more, the chat page lines them up")
    parser.add_argument("--waiting-per-client", type=int, default=defaults.waiting_per_client, metavar="N",
                        help="chat questions one address may have waiting in line beyond those "
                             f"(default: {defaults.waiting_per_client})")
    parser.add_argument("--conversations", metavar="FILE",
                        help="a SQLite file keeping the chat's conversations, so their links still open after a "
                             "restart (default: kept in memory)")
    parser.add_argument("--watch-grace", type=float, metavar="SECONDS",
                        help="seconds a chat question goes on once no page watches it, so that a reload takes it "
                             "up again; then it is stopped (default: the chat page's, half a minute; 0 stops it at "
                             "once)")
    parser.add_argument("--timeout", type=float, default=defaults.timeout, metavar="SECONDS",
                        help=f"seconds a question may wait and run (default: {defaults.timeout:.0f})")
    parser.add_argument("--answer-within", type=float, default=defaults.answer_within, metavar="SECONDS",
                        help="seconds a TEXT2SPARQL question may take: then its run stops and the answer is its best "
                             "query so far (default: %(default).0f, below the challenge client's 180-s timeout)")
    parser.add_argument("--access-log", action="store_true",
                        help="log a line for every HTTP request (by default the log holds the service's own lines)")
    parser.add_argument("--llm-timeout", type=float, metavar="SECONDS",
                        help="seconds one model reply may take (default: 60)")
    add_engine_options(parser, "live Wikidata's engines: ")
    return parser


def engine_settings(args: argparse.Namespace, environ: MutableMapping[str, str]) -> None:
    """``--engines`` and ``--stale-after-days`` as the environment live Wikidata is opened from; a bad value is
    an :class:`~agent.kb.engines.EngineConfigError` naming the option."""
    if args.engines is not None:
        parse_engines(args.engines, "--engines", DIALECTS)
        environ["WIKIDATA_ENGINES"] = args.engines
    if args.stale_after_days is not None:
        environ["WIKIDATA_STALE_AFTER_DAYS"] = str(read_days(args.stale_after_days, "--stale-after-days"))


#: How the service's own dependencies are installed (``pip install`` of the package alone leaves them out).
SERVE_EXTRA = "pip install -e '.[serve]' (from a clone) or pip install 'spinach-bot[serve]'"
#: The modules the service runs on, all from the [serve] extra.
_SERVE_MODULES = ("fastapi", "uvicorn", "sse_starlette")


def missing_serve_modules() -> list[str]:
    """The modules of the [serve] extra that cannot be imported."""
    missing = []
    for name in _SERVE_MODULES:
        try:
            importlib.import_module(name)
        except ImportError:
            missing.append(name)
    return missing


def main(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    for proxy in args.trusted_proxy:
        try:  # uvicorn would take a misspelt address as a name that never matches, and trust nothing silently
            ipaddress.ip_network(proxy, strict=False)
        except ValueError:
            print(f"error: --trusted-proxy {proxy!r} is not an address or a network (such as 10.0.0.1 or "
                  "10.0.0.0/8)", file=sys.stderr)
            return 2
    if missing := missing_serve_modules():
        print(f"error: the service needs {', '.join(missing)}, from the package's [serve] extra: {SERVE_EXTRA}",
              file=sys.stderr)
        return 2
    for name in ("workers", "queue", "per_client", "waiting_per_client", "watch_grace", "timeout", "answer_within"):
        least = 0 if name in ("queue", "waiting_per_client", "watch_grace") else 1
        value = getattr(args, name)
        if value is not None and not value >= least:  # "nan" too
            print(f"error: --{name.replace('_', '-')} must be at least {least}", file=sys.stderr)
            return 2
    remember_environment(os.environ)
    install_logging(logging.INFO)
    try:
        engine_settings(args, os.environ)
        # Every answer of the model and the graphs is masked of secrets before the agent sees it.
        llm = Scrubbed(ChatModel.from_config(LLMConfig.from_env(os.environ, timeout=args.llm_timeout,
                                                                named_by="SPINACH_MODEL")))
        # With no model named, the endpoint is asked which it serves now: an endpoint that cannot say (no
        # /models) is the operator's to fix at start, not a "could not be reached" on every chat answer.
        model = llm.resolve_model()
        graphs = open_graphs(args.graph, args.dataset)
        conversations = Conversations(args.conversations) if args.conversations else None
    except sqlite3.Error as error:
        print(f"error: --conversations {args.conversations}: {error} (a SQLite file the server keeps; give a new "
              "path or the one it kept before)", file=sys.stderr)
        return 2
    except (LLMConfigurationError, GraphSpecError, ValueError, OSError) as error:
        print(f"error: {redact(str(error))}", file=sys.stderr)
        return 2
    import uvicorn

    from serve.app import build_app

    logging.getLogger("serve").info("model: %s", model)
    app = build_app(graphs, llm, PoolLimits(workers=args.workers, queue=args.queue, per_client=args.per_client,
                                            waiting_per_client=args.waiting_per_client, timeout=args.timeout,
                                            answer_within=args.answer_within),
                    conversations, args.watch_grace)
    # uvicorn's own lines go to the log above, as every other line does; its line a request only when asked for:
    # an operator reads the service's own lines (a question, its answer, a refusal), not every poll of a page.
    # uvicorn trusts X-Forwarded-For from 127.0.0.1 unless told otherwise: then any process on this machine could
    # claim many addresses and pass the per-address limit.  Only the proxies the operator names are trusted.
    uvicorn.run(app, host=args.host, port=args.port, log_level="info", log_config=None, access_log=args.access_log,
                proxy_headers=bool(args.trusted_proxy), forwarded_allow_ips=args.trusted_proxy or None)
    return 0


if __name__ == "__main__":
    sys.exit(main())
