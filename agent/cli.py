"""What every command line of the project shares: the name it goes by in its usage line, what it says
when the extra it needs is not installed, and the line that says a run changed its protocol.

Installed as a console script (``spinach-bot``), a command is called by that
name; run as a module, by ``python -m <module>``.  argparse's default would
show ``run.py`` or ``__main__.py``.
"""

from __future__ import annotations

import argparse
import os
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from agent.trace import AgentResult

#: The packages the ``[eval]`` extra adds to the plain install (``setup.cfg``).
EVAL_PACKAGES = frozenset({"scipy", "matplotlib"})


def add_engine_options(parser: argparse.ArgumentParser, whose: str = "") -> None:
    """``--engines`` and ``--stale-after-days``: where a final query runs and when an engine's data is old, as
    every command that runs the agent on live Wikidata takes them (*whose*: what they configure, for the help)."""
    parser.add_argument("--engines", metavar="LIST",
                        help=f"{whose}where the final query runs, the main engine first (it answers the agent; "
                             "when busy or too slow, the next does): wdqs, qlever, or KEY=ENDPOINT "
                             "[DIALECT [TRY_URL]], comma-separated (default: WIKIDATA_ENGINES, else 'wdqs, qlever')")
    parser.add_argument("--stale-after-days", metavar="DAYS",
                        help="days after which an engine's data is named stale (default: 2; 0: never)")


def program_name(module: str) -> str:
    """The console script's name when run as one, else ``python -m <module>``."""
    name = os.path.basename(sys.argv[0]) if sys.argv and sys.argv[0] else ""
    if not name or name.endswith(".py") or name.startswith("-") or name.startswith("python"):
        return f"python -m {module}"
    return name


@contextmanager
def eval_extra(module: str) -> Iterator[None]:
    """Imports that need the ``[eval]`` extra: without it, the command exits with one line saying what to install
    (the plain install would otherwise end in a traceback, even for ``--help``)."""
    try:
        yield
    except ModuleNotFoundError as error:
        if (error.name or "").split(".")[0] not in EVAL_PACKAGES:
            raise
        raise SystemExit(f"error: {program_name(module)} needs the [eval] extra ({error}): "
                         "pip install -e '.[eval]' in the project's directory") from None


def protocol_line(result: AgentResult) -> str | None:
    """The one line saying how a run left the tool-calling protocol and why (``None`` when it did not): an
    operator reading a command's output should not have to open the trace to learn that the endpoint refused
    tools or ``tool_choice`` "required"."""
    if not result.protocol_switch:
        return None
    now = "the plain-text protocol" if result.protocol == "text" else f"tool calls with tool_choice " \
                                                                        f"{result.tool_choice!r}"
    return f"Protocol: switched to {now} for this question ({result.protocol_switch})"
