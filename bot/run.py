"""Answer SPARQL requests on Wikidata:Request a query.

Usage::

    python -m bot.run --once                    # one pass, dry run: print replies and diffs, edit nothing
    python -m bot.run --section "Heading"       # answer one section now (dry run unless --live)
    python -m bot.run --live                    # the watcher: a pass every interval_minutes, posting replies

Nothing is ever saved without ``--live`` (or ``live = true`` in the
configuration); ``--dry-run`` always wins.  On its first look at a page the
bot records the sections already there as backlog and answers only sections
that appear later (``--backlog`` answers them too).

Who the bot is and which wiki it edits come from pywikibot's
``user-config.py`` (family, user name, BotPassword file, throttle, maxlag,
User-Agent), itself filled from the environment variables listed under
``--help``; pywikibot's own options (``-simulate``, ``-user:``, ...) are
accepted too.  ``-simulate`` is a dry run.  What the bot does comes from the
``[bot]`` section of ``--config`` (see :mod:`bot.config`).  The language model
is configured by ``OPENAI_BASE_URL``/``base_url``, ``OPENAI_API_KEY``/
``api_key_file`` and ``SPINACH_MODEL``/``model``.

One live bot process at a time per state file: a second one (say
``--section X --live`` while the watcher runs) waits up to
``--wait-for-lock`` seconds for the lock file next to the state, then
refuses, naming the process that holds it.  A state file that is not the
bot's SQLite database is refused in one line (exit 2) and left as it is; a
missing one starts with a first look at the page (see :mod:`bot.watcher`).

Every secret the bot holds (the model's key, credentials in any configured
URL, the bot password) is masked in whatever the model and Wikidata answer,
before the agent sees it, and in every line the bot writes
(:mod:`agent.redact`); a wiki page or the model cannot write a line of
its own into the bot's log, nor reach the terminal (:mod:`agent.logs`).
pywikibot's count of the bot processes sharing its throttle is kept per
process, so a killed bot's leftover entry never slows the next one.

Stop the watcher with Ctrl-C or SIGTERM: it finishes the section it is
answering, or abandons it safely (the page, not the local state, decides
whether a section was answered).  To stop it from the wiki, put any text on
the stop page (``User:<bot>/Stop`` by default).
"""

from __future__ import annotations

import argparse
import logging
import os
import signal
import sys
import threading
import urllib.parse
from datetime import datetime
from pathlib import Path

from agent.cli import program_name
from agent.logs import install as install_logging
from agent.redact import Scrubbed, redact, remember, remember_environment, remember_url
from agent.trace import StopReason
from bot.config import BotConfig
from bot.lock import LockBusy, ProcessLock

log = logging.getLogger("bot")
#: Where the model is asked when neither OPENAI_BASE_URL nor base_url says otherwise.
DEFAULT_ENDPOINT = "https://api.openai.com/v1"


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog=program_name("bot.run"), description=__doc__.splitlines()[0],
                                     epilog=ENVIRONMENT, formatter_class=argparse.RawDescriptionHelpFormatter)
    mode = parser.add_mutually_exclusive_group()
    mode.add_argument("--once", action="store_true", help="one pass over the page, then exit")
    mode.add_argument("--section", metavar="TITLE", help="answer this section now (by its heading)")
    live = parser.add_mutually_exclusive_group()
    live.add_argument("--dry-run", action="store_true", help="edit nothing: print each reply and its diff")
    live.add_argument("--live", action="store_true", help="save replies on the wiki")
    parser.add_argument("--page", help="the page to watch (default: Wikidata:Request a query)")
    parser.add_argument("--kb", metavar="DIR", help="answer from a local Oxigraph store")
    parser.add_argument("--config", metavar="FILE", help="the bot's settings (default: bot.ini if present)")
    parser.add_argument("--state", metavar="FILE", help="the SQLite state file (default: bot-state.sqlite)")
    parser.add_argument("--backlog", action="store_true",
                        help="on the first look at a page, answer the sections already there too")
    parser.add_argument("--wait-for-lock", metavar="SECONDS", type=float, default=0.0,
                        help="with --live, wait this long for another live bot process using the same state "
                             "to finish (default: refuse at once)")
    return parser


ENVIRONMENT = """environment:
  OPENAI_API_KEY             key of the language model's endpoint (or api_key_file in bot.ini)
  OPENAI_BASE_URL            any OpenAI-compatible endpoint (or base_url in bot.ini)
  SPINACH_MODEL              the model's name (or model in bot.ini; default: the endpoint's one, else gpt-4o)
  WIKIDATA_API_URL           the Wikibase Action API the agent explores (default: Wikidata's)
  WIKIDATA_SPARQL_URL        the SPARQL endpoint the agent queries (default: Wikidata's)
  WIKIDATA_SPARQL_DIALECT    what that endpoint speaks: wdqs (default), qlever or sparql11
  SPINACH_CONTACT            the operator's contact, sent in the User-Agent
  SPINACH_BOT_USER           the bot account on the wiki
  SPINACH_BOT_PASSWORD_FILE  file holding ('BotName', BotPassword('suffix', 'secret'))
  SPINACH_BOT_API_URL        another wiki's api.php (default: Wikidata); no family file is written
  SPINACH_BOT_FAMILY         pywikibot family name of the wiki (default: wikidata)
  SPINACH_BOT_LANG           pywikibot code of the wiki in that family (default: wikidata)
  PYWIKIBOT_DIR              directory of user-config.py (default: the current directory)

pywikibot options (-simulate, -user:NAME, ...) may come first; -simulate is a dry run."""


def load_config(args: argparse.Namespace) -> BotConfig:
    path = args.config or ("bot.ini" if Path("bot.ini").exists() else None)
    config = BotConfig.from_file(path) if path else BotConfig()
    if args.page:
        config.page = args.page
    if args.kb:
        config.kb_dir = args.kb
    if args.state:
        config.state_path = args.state
    if args.live:
        config.live = True
    if args.dry_run:
        config.live = False
    return config


def model_settings(config: BotConfig):
    """The language model's settings (bot.ini over the environment); ``ValueError`` when none is configured."""
    from agent.llm import LLMConfig

    api_key = Path(config.api_key_file).read_text().strip() if config.api_key_file else None
    llm_config = LLMConfig.from_env(os.environ, api_key=api_key, base_url=config.base_url, model=config.model,
                                    timeout=config.llm_timeout, named_by="model in bot.ini or SPINACH_MODEL")
    if not llm_config.api_key and not llm_config.base_url:
        raise ValueError("no language model is configured: set OPENAI_API_KEY (or api_key_file in bot.ini) for "
                         "OpenAI, or OPENAI_BASE_URL (or base_url in bot.ini) for another OpenAI-compatible "
                         "endpoint; see --help")
    remember(llm_config.api_key)
    remember_url(llm_config.base_url)
    remember_environment(os.environ)
    return llm_config


def endpoint_of(llm_config) -> str:
    """The model endpoint's address, without credentials, as the log may name it."""
    parts = urllib.parse.urlsplit(llm_config.base_url or DEFAULT_ENDPOINT)
    return urllib.parse.urlunsplit(parts._replace(netloc=parts.hostname + (f":{parts.port}" if parts.port else ""),
                                                  query="", fragment=""))


def open_knowledge_base(config: BotConfig):
    """The knowledge base the bot answers from, every answer of it scrubbed of secrets.

    A dry run opens a local store read-only, so it can run beside the live bot that holds it.
    """
    from agent.kb import open_kb

    kb = open_kb(config.kb_dir, cache_path=config.cache_path, read_only=not config.live,
                 config=config.wikidata_config())
    if kb.graph.name != "wikidata":
        raise ValueError(f"kb_dir {config.kb_dir} holds the graph {kb.graph.name!r}: the bot answers about Wikidata")
    return Scrubbed(kb)


def make_answerer(config: BotConfig, llm_config, kb=None):
    """The agent, as the bot uses it: no promise to the model that an answer exists.

    *kb* is the knowledge base it answers from (by :func:`open_knowledge_base` when ``None``).  A model
    error is reported with the endpoint that gave it (never its key).  With no model named, the endpoint
    is asked now which one it serves, and *llm_config* records it, so the log names it.
    """
    from agent import Agent, AgentConfig
    from agent.llm import ChatModel, LLMConfigurationError

    llm = Scrubbed(ChatModel.from_config(llm_config))
    if llm_config.model is None:
        try:
            llm_config.model = llm.resolve_model()
        except LLMConfigurationError as error:
            log.warning("%s (asked again at the first question)", error)
    # Every answer of the model and the knowledge base is scrubbed of secrets before the agent sees it.
    agent = Agent(llm=llm, kb=kb or open_knowledge_base(config),
                  config=AgentConfig(answer_guaranteed=False, scholarly_service=config.scholarly_service or "",
                                     max_seconds=config.run_minutes * 60))
    endpoint = endpoint_of(llm_config)

    def answer(request):
        result = agent.run(request.question, context=request.to_context())
        if result.stop_reason == StopReason.LLM_ERROR:
            result.stop_message = f"the model endpoint {endpoint} failed: {result.stop_message}"
        return result

    return answer


def open_examples(config: BotConfig):
    """The retriever over the example store of ``examples_path`` (read only), or ``None`` without one."""
    if not config.examples_path:
        return None
    from agent.examples import ExampleStore, Retriever

    return Retriever(ExampleStore(config.examples_path, read_only=True))


def remember_bot_password(site) -> None:
    """Register the bot's password, as pywikibot reads it from its password file."""
    from pywikibot.login import LoginManager

    from pywikibot.exceptions import Error

    try:
        remember(LoginManager(site=site).password)
    except (ValueError, OSError, Error) as error:  # no password file: nothing to hide
        log.debug("no bot password to register: %s", error)


def throttle_of_this_process(site) -> None:
    """Count only this process in pywikibot's throttle.

    pywikibot multiplies every request's delay by the number of bot processes listed in its shared
    ``throttle.ctrl``, where a killed process stays listed for ten minutes: a crash-looping bot slowed
    itself down more at every restart.  This process leaves the shared file (its own entry removed) and
    keeps its count in no file; one live bot per state file is the lock's business (:mod:`bot.lock`).
    """
    site.throttle.drop()
    site.throttle.ctrlfilename = os.devnull
    site.throttle.checkMultiplicity()


def open_state(path: str):
    """The state, or one line on stderr saying what is wrong and what to do (``None``)."""
    from bot.state import State, StateUnreadable

    try:
        return State(path)
    except StateUnreadable as error:
        print(f"error: {error}. The file was left as it is: restore it from a backup, or give --state another "
              "file (a new state file starts with a first look at the page)", file=sys.stderr)
        return None


def main(argv: list[str] | None = None) -> int:
    args, pywikibot_options = build_parser().parse_known_args(argv if argv is not None else sys.argv[1:])
    # pywikibot reads user-config.py when imported: only after --help had its chance.
    import pywikibot

    install_logging()
    # The scheduler says at INFO what every pass does, and warns when a pass outlasts the interval ("maximum
    # number of running instances reached"), which one pass at a time means to happen: only its errors (a pass
    # that raised) are news beside the bot's own line per pass.
    logging.getLogger("apscheduler").setLevel(logging.ERROR)
    try:
        config = load_config(args)
        llm_config = model_settings(config)
    except (ValueError, OSError) as error:
        print(f"error: {redact(str(error))}", file=sys.stderr)
        return 2
    # handle_args reads sys.argv when given nothing: only what was left for it can be unknown to it.  It may
    # already ask the wiki (pywikibot builds the site of -family/-lang): an unreachable wiki is one line.
    try:
        unknown = [option for option in pywikibot.handle_args(pywikibot_options) if option in pywikibot_options]
    except (pywikibot.exceptions.Error, OSError) as error:
        print(f"error: cannot reach the wiki: {redact(str(error))}", file=sys.stderr)
        return 2
    if unknown:
        print(f"error: unknown options: {' '.join(unknown)} (see --help)", file=sys.stderr)
        return 2
    if config.live and pywikibot.config.simulate:
        log.warning("-simulate: this is a dry run, nothing will be saved")
        config.live = False
    # The lock before the knowledge base: a second live process is told which process holds both.
    try:
        lock = ProcessLock.acquire(Path(config.state_path), wait_seconds=args.wait_for_lock) if config.live else None
    except LockBusy as busy:
        print(f"error: {busy}", file=sys.stderr)
        return 2
    try:
        kb = open_knowledge_base(config)
        answer = make_answerer(config, llm_config, kb)
        examples = open_examples(config)
    except (ValueError, OSError) as error:
        print(f"error: {redact(str(error))}", file=sys.stderr)
        if lock:
            lock.release()
        return 2
    state = open_state(config.state_path)
    try:
        return run_with(args, config, llm_config, answer, examples, state, kb) if state is not None else 2
    finally:
        if state is not None:
            state.close()
        if lock:
            lock.release()


def run_with(args: argparse.Namespace, config: BotConfig, llm_config, answer, examples, state, kb) -> int:
    """The bot with its state open (and its lock held): reach the wiki, then one pass, one section or the
    watcher.  *kb* is the knowledge base the agent answers from; it names the preview's columns as well."""
    import pywikibot
    from pywikibot.exceptions import NoUsernameError

    from bot.forum import close_matches, parse_sections
    from bot.render import Credit
    from bot.review import Review
    from bot.short_links import ShortLinks
    from bot.watcher import Watcher
    from bot.wiki import ForumPage

    try:
        site = pywikibot.Site()
        throttle_of_this_process(site)
        remember_bot_password(site)
        if config.live:
            site.login()
            if not site.logged_in():
                print(f"error: cannot log in to {site} as {site.username()!r}: check the BotPassword in "
                      "SPINACH_BOT_PASSWORD_FILE (see --help)", file=sys.stderr)
                return 2
    except NoUsernameError as error:
        print(f"error: the bot account is missing or unknown to the wiki ({redact(str(error))}); set "
              "SPINACH_BOT_USER and SPINACH_BOT_PASSWORD_FILE (see --help)", file=sys.stderr)
        return 2
    except (pywikibot.exceptions.Error, ConnectionError, OSError) as error:
        print(f"error: cannot reach the wiki: {redact(str(error))}", file=sys.stderr)
        return 2
    username = site.username() or ""
    try:
        credit = Credit(config.documentation.format(username=username), config.operator, bot=username)
    except ValueError as error:
        print(f"error: {error} (operator and documentation in bot.ini)", file=sys.stderr)
        return 2
    if config.live and not config.operator:
        log.warning("no operator in bot.ini: replies name no one who runs the bot")
    # {{re|…}} addressing the bot itself stands for the asker's: its templates are allowed, its link is the bot's.
    reply_markup = credit.markup() + (f"{{{{re|1={username}}}}}" if config.ping_asker and username else "")
    forum = ForumPage(site, config.page, config.stop_page, live=config.live, reply_markup=reply_markup,
                      engines=config.wikidata_config().all_engines())
    review = None
    if config.review:
        page = ForumPage(site, config.review_page.format(username=username), config.stop_page, live=config.live,
                         reply_markup=credit.markup() + f"[[{config.page}]]", engines=forum.engines)
        review = Review(forum, page, state, config.reviewer_names, config.ping_asker)
    watcher = Watcher(forum, state, answer, config, examples=examples, credit=credit, review=review,
                      short_links=ShortLinks(config.short_links, os.environ.get("SPINACH_CONTACT", "")), kb=kb)
    log.info("%s %s as %s (%s; model %s at %s%s)", "watching" if not (args.once or args.section) else "reading",
             config.page, username or "nobody", "live" if forum.writes else "dry run: nothing will be saved",
             llm_config.model or "not known yet", endpoint_of(llm_config),
             f"; replies drafted on {review.page.title} for review" if review else "")
    try:
        if args.section:
            text, revision = forum.read()
            sections = parse_sections(text, reading=forum.reading(text, revision))
            chosen = [section for section in sections if section.heading == args.section]
            if not chosen:
                matches = close_matches(sections, args.section)
                hint = f" Close matches: {'; '.join(matches)}" if matches else ""
                print(f"error: no section titled {args.section!r} on {config.page}.{hint}", file=sys.stderr)
                return 2
            watcher.treat(chosen[-1])
        elif args.once:
            watcher.run_pass(answer_backlog=args.backlog)
        else:
            run_scheduled(watcher, config, args.backlog)
    finally:
        log.info("done: %s", dict(watcher.counter) or "nothing to do")
    return 0


def run_scheduled(watcher, config: BotConfig, backlog: bool) -> None:
    """A pass every ``interval_minutes``: one at a time, missed runs coalesced, clean stop on signals."""
    from apscheduler.schedulers.blocking import BlockingScheduler

    scheduler = BlockingScheduler()
    busy = threading.Lock()

    def run_pass() -> None:
        if watcher.stopping.is_set():
            return
        with busy:
            # --backlog matters only on the first look at the page, which may take several passes if the
            # wiki cannot be reached at first: it is passed to every pass.
            watcher.run_pass(answer_backlog=backlog)

    scheduler.add_job(run_pass, "interval", minutes=config.interval_minutes, coalesce=True, max_instances=1,
                      next_run_time=datetime.now())

    def stop(signum, frame) -> None:
        # A supervisor repeats its signal, an operator presses Ctrl-C twice: the first one decides, the others
        # are told to wait (a second shutdown would raise, and the state would close under the running pass).
        if watcher.stopping.is_set():
            log.info("signal %d: already stopping, after the current section", signum)
            return
        log.info("signal %d: finishing the current section, then stopping", signum)
        watcher.stopping.set()
        if scheduler.running:
            scheduler.shutdown(wait=False)

    signal.signal(signal.SIGINT, stop)
    signal.signal(signal.SIGTERM, stop)
    if not watcher.stopping.is_set():
        scheduler.start()
    with busy:  # a pass under way finishes its section before the state is closed
        pass


if __name__ == "__main__":
    sys.exit(main())
