"""The bot as its operator runs it, for every bot-level test: one rig.

:meth:`BotRig.run` runs ``bot.run.main`` in the test process, with the
environment, working directory and command line an operator would give it,
and returns its exit code and what it printed.  pywikibot is imported once
and logs in once per wiki address for the whole test process, so a pass
costs what the bot does, not an interpreter's start and a login.

:meth:`BotRig.start` runs ``python -m bot.run`` as a process of its own, for
the tests whose subject is the process: a signal, the lock between two
processes, SIGKILL at a write point, ``-simulate``, everything the process
prints (secrets), the console's messages.

The wiki is the test wiki of :mod:`tests.support.mediawiki`, or a fault proxy
in front of it (*api_url*); the model and Wikidata are stand-ins on loopback
(or proxies in front of them).
"""

from __future__ import annotations

import io
import os
import sqlite3
import subprocess
import sys
import threading
from collections.abc import Iterator
from contextlib import contextmanager, redirect_stderr, redirect_stdout
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from tests.support.euler import EULER_ADVISORS_QUERY
from tests.support.llm_server import ErrorReply, ToolCallReply
from tests.support.mediawiki import BOT_USER, PYWIKIBOT_DIR, MediaWiki, write_pywikibot_dir
from tests.support.processes import PATIENCE, wait_for  # noqa: F401 (the bot tests' waits, named here too)

#: The stand-in model's API key: no output of the bot may ever show it.
SECRET_KEY = "sk-test-secret-value"
#: How the bot signs, in the page's text.
SIGNATURE = f"[[User:{BOT_USER}|"


@dataclass(frozen=True)
class Endpoint:
    """A model's address the bot is given (a proxy's, or one with credentials in it)."""

    base_url: str


@dataclass(frozen=True)
class BotRun:
    """One run of the bot: its exit code and what it printed (the log is on stderr)."""

    code: int
    stdout: str
    stderr: str


@dataclass(frozen=True)
class Record:
    """A section's row in the bot's state, as an operator reads it with ``sqlite3``."""

    key: str
    heading: str
    status: str
    attempts: int
    last_error: str | None
    trace: str | None


@dataclass
class BotRig:
    """The bot's environment: its wiki, model, Wikidata, working directory and state files."""

    mediawiki: MediaWiki
    directory: Path
    #: Anything with a ``base_url`` (a stand-in model, or a proxy's address as an object with that attribute).
    llm: Any
    wikidata: Any
    #: The wiki's ``api.php``; ``None`` for the test wiki itself, else a proxy in front of it.
    api_url: str | None = None
    #: The query service's address, when a proxy stands in front of the stand-in.
    sparql_url: str | None = None
    key: str = SECRET_KEY

    # -- running the bot -------------------------------------------------------------------

    def environment(self, llm: Any = None) -> dict[str, str]:
        """The variables an operator sets for this bot (model, Wikidata)."""
        return {"OPENAI_API_KEY": self.key, "OPENAI_BASE_URL": (llm or self.llm).base_url,
                "WIKIDATA_API_URL": self.wikidata.api_url,
                "WIKIDATA_SPARQL_URL": self.sparql_url or self.wikidata.sparql_url}

    def arguments(self, page: str, options: tuple[str, ...], state: str) -> list[str]:
        return ["--page", page, "--state", str(self.state_path(state)), *options]

    def run(self, page: str, *options: str, state: str = "state.sqlite", llm: Any = None) -> BotRun:
        """``python -m bot.run --page PAGE --state STATE OPTIONS``, in this process."""
        import pywikibot

        from bot import run as bot_run

        argv = self.arguments(page, options, state) + _site_options(self.api_url)
        out, err = io.StringIO(), io.StringIO()
        # What pywikibot's own options may change for the rest of the process.
        saved = {name: getattr(pywikibot.config, name) for name in ("family", "mylang", "simulate")}
        failed = True
        try:
            with _environment(self.environment(llm)), _working_directory(self.directory), \
                    redirect_stdout(out), redirect_stderr(err):
                code = bot_run.main(argv)
            failed = False
        finally:
            for name, value in saved.items():
                setattr(pywikibot.config, name, value)
            if failed:  # shown with the test's failure
                sys.stderr.write(err.getvalue())
        return self._checked(BotRun(code, out.getvalue(), err.getvalue()))

    def start(self, page: str, *options: str, state: str = "state.sqlite", llm: Any = None,
              output: int | None = subprocess.PIPE) -> subprocess.Popen:
        """``python -m bot.run`` as a process of its own (text pipes for stdout and stderr, unless *output*)."""
        env = {**os.environ, "PYWIKIBOT_DIR": str(self.pywikibot_dir()), **self.environment(llm)}
        return subprocess.Popen([sys.executable, "-m", "bot.run", *self.arguments(page, options, state)], env=env,
                                cwd=self.directory, stdout=output, stderr=output, text=True)

    def run_process(self, page: str, *options: str, state: str = "state.sqlite", llm: Any = None) -> BotRun:
        process = self.start(page, *options, state=state, llm=llm)
        stdout, stderr = process.communicate(timeout=PATIENCE)
        return self._checked(BotRun(process.returncode, stdout, stderr))

    def _checked(self, run: BotRun) -> BotRun:
        assert self.key not in run.stdout + run.stderr, "the model's API key was printed"
        return run

    def pywikibot_dir(self) -> Path:
        """The ``PYWIKIBOT_DIR`` of a bot process: the session's, or one pointed at the proxy."""
        if self.api_url is None:
            return PYWIKIBOT_DIR
        directory = self.directory / "pywikibot"
        if not (directory / "user-config.py").exists():
            write_pywikibot_dir(directory, self.api_url)
        return directory

    # -- what the bot left -----------------------------------------------------------------

    def state_path(self, state: str = "state.sqlite") -> Path:
        return self.directory / state

    def records(self, state: str = "state.sqlite", page: str | None = None) -> dict[str, Record]:
        """The state's sections (of *page*, or all), by key."""
        query = "SELECT key, heading, status, attempts, last_error, trace FROM sections"
        with sqlite3.connect(self.state_path(state)) as connection:
            rows = (connection.execute(query + " WHERE page = ?", (page,)) if page
                    else connection.execute(query)).fetchall()
        return {row[0]: Record(*row) for row in rows}

    def integrity(self, state: str = "state.sqlite") -> str:
        with sqlite3.connect(self.state_path(state)) as connection:
            return connection.execute("PRAGMA integrity_check").fetchone()[0]

    def bot_edits(self, title: str) -> list[dict]:
        return [revision for revision in self.mediawiki.revisions(title) if revision["user"] == BOT_USER]


class LogReader:
    """A bot process's log (its stderr) read as it comes, so a test can wait for a line instead of sleeping."""

    def __init__(self, process: subprocess.Popen) -> None:
        self.process = process
        self.lines: list[str] = []
        self._thread = threading.Thread(target=lambda: self.lines.extend(process.stderr), daemon=True)
        self._thread.start()

    def text(self) -> str:
        return "".join(self.lines)

    def count(self, fragment: str) -> int:
        return sum(fragment in line for line in list(self.lines))

    def death(self) -> str | None:
        """Why waiting on this process is pointless: it has exited (with the end of its log)."""
        if self.process.poll() is None:
            return None
        return f"the bot process exited with {self.process.returncode}\n{''.join(self.lines[-40:])}"

    def close(self) -> str:
        """The whole log, once the process has ended."""
        self._thread.join(timeout=30)
        return self.text()


def _site_options(api_url: str | None) -> list[str]:
    """pywikibot's options for the wiki at *api_url* (the test wiki when ``None``), its family made once."""
    import pywikibot

    if api_url is None:
        return ["-family:testwiki", "-code:testwiki"]
    name = "proxy" + "".join(character for character in api_url if character.isdigit())
    if name not in pywikibot.config.family_files:
        pywikibot.config.family_files[name] = api_url
        pywikibot.config.usernames[name][name] = BOT_USER
    return [f"-family:{name}", f"-code:{name}"]


@contextmanager
def _environment(variables: dict[str, str]) -> Iterator[None]:
    saved = {name: os.environ.get(name) for name in variables}
    os.environ.update(variables)
    try:
        yield
    finally:
        for name, value in saved.items():
            if value is None:
                os.environ.pop(name, None)
            else:
                os.environ[name] = value


@contextmanager
def _working_directory(directory: Path) -> Iterator[None]:
    previous = os.getcwd()
    os.chdir(directory)
    try:
        yield
    finally:
        os.chdir(previous)


def user_messages(body: dict) -> str:
    """What the user turns of a model request say, joined: the question and the thread the bot passed on."""
    return "\n".join(str(message.get("content") or "") for message in body["messages"] if message["role"] == "user")


def scripted(queries: dict[str, str], default: str = EULER_ADVISORS_QUERY, final: str = "That answers it.",
             first: str = "Ask the query service."):
    """A model that runs one query (chosen by a phrase of the question), then stops; *first* and *final* are
    its two thoughts."""

    def reply(body):
        if "tools" not in body:
            return ErrorReply(400, "no pruning expected")
        asked = user_messages(body)
        query = next((query for phrase, query in queries.items() if phrase in asked), default)
        if not any(message["role"] == "tool" for message in body["messages"]):
            return ToolCallReply("execute_sparql", {"thought": first, "sparql": query})
        return ToolCallReply("stop", {"thought": final, "language": "en",
                                      "explanation": "The query lists Euler's doctoral advisors (P184)."})

    return reply


def run_bot(rig: BotRig, page: str, *options: str, llm=None) -> BotRun:
    """One pass of the bot on *page*, which must end cleanly (the log's tail shown if not)."""
    done = rig.run(page, *options, llm=llm)
    assert done.code == 0, done.stderr[-3000:]
    return done
