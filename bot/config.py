"""The bot's own settings, in one place.

pywikibot's ``user-config.py`` says *who* edits *which wiki* (family, user
name, BotPassword file, throttle, maxlag, User-Agent).  This file says what
the bot does there.  Settings come from an INI file (``--config``, default
``bot.ini`` when present), section ``[bot]``, with these keys:

======================  ===============================  ==========================================
key                     default                          meaning
======================  ===============================  ==========================================
page                    Wikidata:Request a query         the forum page to watch
interval_minutes        5                                minutes between passes of the watcher
live                    false                            edit the wiki; false = dry run (print only)
stop_page               User:{username}/Stop             emergency stop: any text there halts edits
state_path              bot-state.sqlite                 SQLite file with sections seen and answered
max_sections_per_pass   3                                new sections answered per pass at most
max_attempts            3                                tries per section before giving up
retry_minutes           30                               wait after a failed try (doubles each time)
reply_max_chars         20000                            hard cap on a reply's size
reply_without_answer    true                             post an honest "no query found" reply
max_followups           3                                follow-ups answered per section at most
ping_asker              true                             address the asker ({{re|…}}), which notifies them
skip_human_answered     true                             leave a section where someone posted a query
operator                (none)                           your user name, named in every reply
documentation           User:{username}                  the page every reply links as "about this bot"
review                  false                            draft replies on the review page first
review_page             User:{username}/Review           where drafts wait for an approval
reviewers               (none)                           who may approve or reject, comma-separated
short_links             https://w.wiki                   where https://w.wiki/… links in requests resolve
scholarly_service       wdsubgraph:scholarly_articles    the SERVICE holding scholarly articles ("" none;
                                                         the default is the Wikidata profile's)
kb_dir                  (live Wikidata)                  answer from a local Oxigraph store
cache_path              (none)                           SQLite cache of Wikidata responses
engines                 (WIKIDATA_ENGINES, else          where the final query runs, the main engine
                        wdqs, qlever)                    first (it answers the agent; a busy one falls
                                                         back to the next): wdqs, qlever, or
                                                         KEY=ENDPOINT [DIALECT [TRY_URL]], comma-separated
stale_after_days        2                                days after which an engine's data is named stale
                                                         in the reply (0: never)
examples_path           (none)                           example store (spinach-examples) for the prompt
archivers               (none)                           accounts that archive the forum, comma-separated:
                                                         only what they wrote under /Archive/ is harvested
api_key_file            (OPENAI_API_KEY)                 file holding the model endpoint's key
base_url                (OPENAI_BASE_URL)                an OpenAI-compatible endpoint
model                   (SPINACH_MODEL, else the         the model's name
                        endpoint's one, else gpt-4o)
llm_timeout             60                               seconds one model reply may take (raise it
                                                         for a local model on a small machine)
run_minutes             15                               minutes one question's run may take, every model
                                                         call and the end-of-run extraction included
======================  ===============================  ==========================================

The language model settings here win over the environment variables named in
brackets; secrets are never logged.  ``bot.ini.example`` beside ``README.md``
lists every key with its default, ready to copy.

With ``review = true`` no reply goes to the forum unseen: each is posted as a
draft section of ``review_page`` and waits there for a user named in
``reviewers`` to add ``{{approved}}`` (posted) or ``{{rejected}}`` (dropped)
to that section (see :mod:`bot.review`).  Which wiki the bot edits is pywikibot's
business: see ``user-config.py`` (``SPINACH_BOT_API_URL`` points it at any
MediaWiki).
"""

from __future__ import annotations

import configparser
import os
from collections.abc import Mapping
from dataclasses import dataclass, fields
from pathlib import Path

from agent.graph import WIKIDATA
from agent.kb.live import WikidataConfig


@dataclass
class BotConfig:
    page: str = "Wikidata:Request a query"
    interval_minutes: float = 5.0
    live: bool = False
    stop_page: str = "User:{username}/Stop"
    state_path: str = "bot-state.sqlite"
    max_sections_per_pass: int = 3
    max_attempts: int = 3
    retry_minutes: float = 30.0
    reply_max_chars: int = 20000
    reply_without_answer: bool = True
    max_followups: int = 3
    ping_asker: bool = True
    skip_human_answered: bool = True
    operator: str | None = None
    documentation: str = "User:{username}"
    review: bool = False
    review_page: str = "User:{username}/Review"
    reviewers: str | None = None
    short_links: str = "https://w.wiki"
    scholarly_service: str | None = WIKIDATA.scholarly_service
    kb_dir: str | None = None
    cache_path: str | None = None
    #: The engines, as :func:`agent.kb.engines.parse_engines` reads them; ``None``: the environment's
    #: (``WIKIDATA_ENGINES``), else the Wikidata profile's.
    engines: str | None = None
    stale_after_days: float = 2.0
    examples_path: str | None = None
    archivers: str | None = None
    api_key_file: str | None = None
    base_url: str | None = None
    model: str | None = None
    llm_timeout: float = 60.0
    run_minutes: float = 15.0

    @classmethod
    def from_file(cls, path: str | Path) -> BotConfig:
        """Read ``[bot]`` of an INI file; unknown keys are an error naming them."""
        parser = configparser.ConfigParser()
        if not parser.read(path):
            raise ValueError(f"cannot read the configuration file {path}")
        section = parser["bot"] if parser.has_section("bot") else {}
        known = {field.name: field for field in fields(cls)}
        unknown = sorted(set(section) - set(known))
        if unknown:
            raise ValueError(f"{path}: unknown settings in [bot]: {', '.join(unknown)}")
        config = cls()
        for name, raw in section.items():
            default = getattr(config, name)
            if isinstance(default, bool):
                value = parser.getboolean("bot", name)
            elif isinstance(default, int):
                value = int(raw)
            elif isinstance(default, float):
                value = float(raw)
            else:
                value = raw or None
            setattr(config, name, value)
        if config.review and not config.reviewer_names:
            raise ValueError(f"{path}: review = true needs reviewers (the users who may approve a draft)")
        config.wikidata_config(f"{path}: ")  # a bad engine list or staleness is one line naming its key
        return config

    def wikidata_config(self, where: str = "", environ: Mapping[str, str] = os.environ) -> WikidataConfig:
        """Live Wikidata as the environment names it, with this file's engines and staleness."""
        config = WikidataConfig.from_env(environ)
        if self.engines:
            config = config.with_engines(self.engines, f"{where}engines")
        if not self.stale_after_days >= 0:
            raise ValueError(f"{where}stale_after_days: {self.stale_after_days} is not a number of days "
                             "(0 or more; 0: never stale)")
        config.stale_after_days = self.stale_after_days
        return config

    @property
    def archiver_names(self) -> list[str]:
        """The accounts whose edits to the forum's archive pages are its archiving."""
        return [name.strip() for name in (self.archivers or "").split(",") if name.strip()]

    @property
    def reviewer_names(self) -> list[str]:
        """The users allowed to approve or reject a draft."""
        return [name.strip() for name in (self.reviewers or "").split(",") if name.strip()]
