"""The reply's line on where its query runs: what each configured engine found, a "Try it" link on each, how
fresh each one's data is, and which copy is older than the operator allows (``stale_after_days``).

"12 results on the query service, 12 on QLever. Try it on the query service (data as of 28 November 2026),
Try it on QLever (data as of 27 November 2026)."  The facts come as data (:class:`agent.kb.engines.CrossCheck`)
and their words from :mod:`agent.engines_text`; this module writes them as wikitext, in the reply's language.
An engine's name and its reason for refusing a query come from the operator's settings and from a remote
engine's error body: each sentence is filled with plain text and encoded as a whole (:func:`bot.wikitext.encode`),
so no value can close, open or join markup around it; a link is written only to an ``http(s)`` address whose
every character outside a small set is percent-encoded (:func:`agent.engines_text.safe_url`).

When the main engine (the first configured) cannot run the query and another can, the query is shown as a
text block linked to that engine (:func:`engines_reply_parts`), and the line says which engine it is for.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from agent.engines_text import (capitalised, data_day, engine_name, found_sentence, is_stale, posted_for, safe_url,
                                 written_date)
from agent.kb.base import CrossCheck, EngineOutcome
from agent.messages import Words, counted
from bot.wikitext import encode, inline, text_block

#: The link label's characters that would end an external link.
_LABEL_CLOSERS = re.compile(r"[\]]")


@dataclass(frozen=True)
class EnginesParts:
    """What the reply shows of a cross-check: its line, and the query's wikitext when it is posted for an engine
    other than the main one ("" otherwise: the query is shown as usual)."""

    line: str = ""
    query: str = ""


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
            pieces.append(encode(said if pieces else capitalised(said)))  # the first starts a sentence
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
    return [capitalised(sentence) + "." for sentence in sentences]


def engines_line(check: CrossCheck | None, words: Words, stale_after_days: float | None = None) -> str:
    """The line under the query: what each engine found, a link and a date per engine, the stale copies named;
    "" without a cross-check."""
    if check is None or not check.runs:
        return ""
    if len(check.runs) == 1:  # the lead says what it found and the query links it: its date is what is new
        [run] = check.runs
        line = ""
        if run.data_date is not None and not is_stale(check, run):
            line = encode(capitalised(words["data_as_of"].format(date=written_date(data_day(run.data_date),
                                                                                    words))) + ".")
        return " ".join(filter(None, [line, *map(encode, _stale_sentences(check, words, stale_after_days))]))
    line = encode(found_sentence(check, words))
    if pieces := _engine_pieces(check, words):
        line += " " + ", ".join(pieces) + "."
    for sentence in _stale_sentences(check, words, stale_after_days):
        line += " " + encode(sentence)
    if (other := posted_for(check)) is not None:
        line += " " + encode(capitalised(words["engine_posted_for"].format(
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
