"""What each engine found, in plain text a reader is shown: the words of the reply's engines line
(:mod:`bot.engines_line`) and of the chat page's (:mod:`serve.events`), in the reader's language
(:mod:`agent.messages`).  Untrusted text (an engine's name from the settings, its reason from a remote error body)
is cleaned to what a page can show and bounded; each reader encodes the result for its own medium.
"""

from __future__ import annotations

import re
import urllib.parse
from datetime import date, timezone

from agent.kb.base import CrossCheck, DataDate, EngineOutcome, EngineRun
from agent.messages import Words, counted, written_number
from agent.text import clean

#: The longest reason (an engine's error, one line) the reply quotes.
REASON_CHARS = 160
#: The longest engine name shown.
NAME_CHARS = 60
#: Characters an external link's address keeps as they are: its structure and what percent-encoding leaves.
_URL_KEPT = re.compile(r"[A-Za-z0-9%/:?#=&.+-]")
#: An ``&`` MediaWiki would read as the start of an entity.
_ENTITY_START = re.compile(r"&(?=#?[A-Za-z0-9]+;)")
#: What an engine did with the query, by the message that says it.
_OUTCOME_KEYS = {EngineOutcome.UNSUPPORTED: "engine_unsupported", EngineOutcome.TIMEOUT: "engine_timeout",
                 EngineOutcome.BUSY: "engine_busy", EngineOutcome.FAILED: "engine_failed"}


def safe_url(address: str) -> str:
    """*address* as an external link's target that can hold no wikitext: ``http`` or ``https`` with a host, every
    character outside ``A-Z a-z 0-9 % / : ? # = & . + -`` percent-encoded (``_``, ``~``, ``'`` and brackets
    included: none then spells a behaviour switch, a signature, bold or the link's end), an ``&`` that would start
    an entity as well; "" for any other address."""
    address = address.strip()
    parts = urllib.parse.urlsplit(address) if address.isprintable() else None
    if parts is None or parts.scheme.lower() not in ("http", "https") or not parts.netloc:
        return ""
    kept = "".join(char if _URL_KEPT.fullmatch(char) else "".join(f"%{byte:02X}" for byte in char.encode("utf-8"))
                   for char in address)
    return _ENTITY_START.sub("%26", kept)


def engine_name(run: EngineRun) -> str:
    """The engine's name as a reader says it, one line, bounded (its key when it has no name)."""
    name = " ".join((run.engine.name or run.engine.key).split())
    return name if len(name) <= NAME_CHARS else name[:NAME_CHARS - 1] + "…"


def written_date(day: date, words: Words) -> str:
    """*day* as the reply's language writes a date: "28 November 2026", "28. November 2026"."""
    number = words["first_day"] if day.day == 1 else str(day.day)
    return words["date"].format(day=number, month=words[f"month_{day.month}"], year=day.year)


def data_day(data_date: DataDate) -> date:
    """The day (UTC) an engine's copy was last brought up to date."""
    modified = data_date.modified
    return (modified.astimezone(timezone.utc) if modified.tzinfo else modified).date()


def is_stale(check: CrossCheck, run: EngineRun) -> bool:
    """Whether *run*'s engine is one the producing side found older than the operator's threshold."""
    return run.engine.key in check.stale or run.engine.name in check.stale


def _compared(run: EngineRun, first: EngineRun, check: CrossCheck, words: Words) -> tuple[str, bool]:
    """What an answering engine other than the first found, against the first; and whether it is the same."""
    name, first_name = engine_name(run), engine_name(first)
    count, reference = run.rows or 0, first.rows or 0
    number = written_number(str(count), words)
    if count < reference:
        return words["engine_fewer"].format(engine=name, count=number,
                                            difference=written_number(str(reference - count), words)), False
    if count > reference:
        return words["engine_more"].format(engine=name, count=number,
                                           difference=written_number(str(count - reference), words)), False
    if run.answer and first.answer and (different := check.only_in(run)):
        return words["engine_other_rows"].format(engine=name, count=number, other=first_name,
                                                 difference=written_number(str(different), words)), False
    return words["engine_same"].format(engine=name, count=number), True


def _refused(run: EngineRun, words: Words) -> str:
    """What an engine that did not answer said, its reason (an engine's error, untrusted) after a colon.  A reason
    is an English line; one that names the engine first ("QLever does not support SERVICE wikibase:label") says
    it all in an English reply, and stands alone there; one that starts with the engine's name and a colon is told
    without them."""
    said = words[_OUTCOME_KEYS[run.outcome]].format(engine=engine_name(run))
    reason, name = shown_reason(run.reason), engine_name(run)
    if words.language == "en" and reason[:len(name) + 1].lower() == name.lower() + " ":
        return reason
    reason = reason.removeprefix(name + ": ")  # "QLever: Unknown prefix" after "QLever refused the query"
    return said + (words["colon"] + reason if reason else "")


def shown_reason(reason: str) -> str:
    """An engine's reason as a reader is shown it: what a page can show, one line, at most REASON_CHARS."""
    reason = " ".join(clean(reason).split())
    return reason if len(reason) <= REASON_CHARS else reason[:REASON_CHARS - 1] + "…"


def capitalised(text: str) -> str:
    return text[:1].upper() + text[1:]


def found_sentence(check: CrossCheck, words: Words) -> str:
    """What each engine found, in the operator's order, as plain text: "12 results on the query service, 12 on
    QLever", "12 results on the query service; QLever found 10, 2 fewer", "QLever timed out"."""
    answered = check.answered
    first = answered[0] if answered else None
    text = ""
    for run in check.runs:
        if run is first:
            clause, same = words["engine_first"].format(rows=counted(words, "rows", run.rows or 0),
                                                        engine=engine_name(run)), False
        elif run.outcome is EngineOutcome.ANSWERED and first is not None:
            clause, same = _compared(run, first, check, words)
        else:
            clause, same = _refused(run, words), False
        text += (", " if same else words["semicolon"]) + clause if text else clause
    return capitalised(text) + "."


def posted_for(check: CrossCheck | None) -> EngineRun | None:
    """The engine the query is posted for when the main one (the first configured) cannot run it: the first
    other engine that answered and gave a link; ``None`` when the main one answered or none other did."""
    if check is None or not check.runs or check.runs[0].outcome is EngineOutcome.ANSWERED:
        return None
    return next((run for run in check.answered if safe_url(run.try_link)), None)
