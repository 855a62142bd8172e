"""The reply's line on where its query runs: what each configured engine found, a "Try it" link on each, how
fresh each one's data is, and which copy is older than the operator allows (``stale_after_days``).

"12 results on the query service, 12 on QLever. Try it on the query service (data as of 28 November 2026),
Try it on QLever (data as of 27 November 2026)."  The facts come as data (:class:`agent.kb.engines.CrossCheck`);
this module only words them, in the reply's language (:mod:`bot.messages`).  An engine's name and its reason for
refusing a query come from the operator's settings and from a remote engine's error body: each sentence is
filled with plain text and encoded as a whole (:func:`bot.wikitext.encode`), so no value can close, open or
join markup around it; a link is written only to an ``http(s)`` address whose every character outside a small
set is percent-encoded (:func:`safe_url`).

When the main engine (the first configured) cannot run the query and another can, the query is shown as a
text block linked to that engine (:func:`engines_reply_parts`), and the line says which engine it is for.
"""

from __future__ import annotations

import re
import urllib.parse
from dataclasses import dataclass
from datetime import date, timezone

from agent.kb.engines import CrossCheck, DataDate, EngineOutcome, EngineRun
from bot.messages import Words, counted, written_number
from bot.wikitext import clean, encode, inline, text_block

#: The longest reason (an engine's error, one line) the reply quotes.
REASON_CHARS = 160
#: The longest engine name shown.
NAME_CHARS = 60
#: Characters an external link's address keeps as they are: its structure and what percent-encoding leaves.
_URL_KEPT = re.compile(r"[A-Za-z0-9%/:?#=&.+-]")
#: An ``&`` MediaWiki would read as the start of an entity.
_ENTITY_START = re.compile(r"&(?=#?[A-Za-z0-9]+;)")
#: The link label's characters that would end an external link.
_LABEL_CLOSERS = re.compile(r"[\]]")
#: What an engine did with the query, by the message that says it.
_OUTCOME_KEYS = {EngineOutcome.UNSUPPORTED: "engine_unsupported", EngineOutcome.TIMEOUT: "engine_timeout",
                 EngineOutcome.BUSY: "engine_busy", EngineOutcome.FAILED: "engine_failed"}


@dataclass(frozen=True)
class EnginesParts:
    """What the reply shows of a cross-check: its line, and the query's wikitext when it is posted for an engine
    other than the main one ("" otherwise: the query is shown as usual)."""

    line: str = ""
    query: str = ""


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


def _capitalised(text: str) -> str:
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
    return _capitalised(text) + "."


def _link(url: str, label: str) -> str:
    """An external link showing *label* (plain text): encoded, with a ``]`` that would end the link spelt out."""
    return f"[{url} " + _LABEL_CLOSERS.sub("&#93;", inline(label)) + "]"


def _engine_pieces(check: CrossCheck, words: Words) -> list[str]:
    """Per engine, its "Try it" link (when it can run the query) and its data's date (when it said one and it is
    not stale: the stale sentence names that date)."""
    pieces = []
    for run in check.runs:
        url = safe_url(run.try_link) if run.outcome is EngineOutcome.ANSWERED else ""
        dated = run.data_date is not None and not is_stale(check, run)
        when = words["data_as_of"].format(date=written_date(data_day(run.data_date), words)) if dated else ""
        if url:
            link = _link(url, words["try_on"].format(engine=engine_name(run)))
            pieces.append(link + (" (" + encode(when) + ")" if when else ""))
        elif when:
            said = words["engine_data_as_of"].format(engine=engine_name(run), data=when)
            pieces.append(encode(said if pieces else _capitalised(said)))  # the first starts a sentence
    return pieces


def _stale_sentences(check: CrossCheck, words: Words, stale_after_days: float | None) -> list[str]:
    """A sentence for each engine whose copy is older than the operator's threshold, naming its date."""
    sentences = []
    for run in check.runs:
        if not is_stale(check, run):
            continue
        name = engine_name(run)
        if run.data_date is None:
            sentences.append(words["stale_undated"].format(engine=name))
            continue
        day = written_date(data_day(run.data_date), words)
        if stale_after_days is None:
            sentences.append(words["stale_no_limit"].format(engine=name, date=day))
        else:
            sentences.append(words["stale"].format(engine=name, date=day,
                                                   days=counted(words, "days", round(stale_after_days))))
    return [_capitalised(sentence) + "." for sentence in sentences]


def posted_for(check: CrossCheck | None) -> EngineRun | None:
    """The engine the query is posted for when the main one (the first configured) cannot run it: the first
    other engine that answered and gave a link; ``None`` when the main one answered or none other did."""
    if check is None or not check.runs or check.runs[0].outcome is EngineOutcome.ANSWERED:
        return None
    return next((run for run in check.answered if safe_url(run.try_link)), None)


def engines_line(check: CrossCheck | None, words: Words, stale_after_days: float | None = None) -> str:
    """The line under the query: what each engine found, a link and a date per engine, the stale copies named;
    "" without a cross-check."""
    if check is None or not check.runs:
        return ""
    if len(check.runs) == 1:  # the lead says what it found and the query links it: its date is what is new
        [run] = check.runs
        line = ""
        if run.data_date is not None and not is_stale(check, run):
            line = encode(_capitalised(words["data_as_of"].format(date=written_date(data_day(run.data_date),
                                                                                    words))) + ".")
        return " ".join(filter(None, [line, *map(encode, _stale_sentences(check, words, stale_after_days))]))
    line = encode(found_sentence(check, words))
    if pieces := _engine_pieces(check, words):
        line += " " + ", ".join(pieces) + "."
    for sentence in _stale_sentences(check, words, stale_after_days):
        line += " " + encode(sentence)
    if (other := posted_for(check)) is not None:
        line += " " + encode(_capitalised(words["engine_posted_for"].format(
            main=engine_name(check.runs[0]), engine=engine_name(other))) + ".")
    return line


def engines_reply_parts(check: CrossCheck | None, query: str, words: Words,
                        stale_after_days: float | None = None) -> EnginesParts:
    """The engines' line and, when the query is posted for an engine other than the main one, the query as a
    text block with that engine's "Try it" link (the ``{{SPARQL}}`` template would link the main one)."""
    line = engines_line(check, words, stale_after_days)
    other = posted_for(check)
    if other is None or not query:
        return EnginesParts(line)
    link = _link(safe_url(other.try_link), words["try_on"].format(engine=engine_name(other)))
    return EnginesParts(line, text_block(query) + link)
