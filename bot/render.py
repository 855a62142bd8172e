"""Render the bot's reply: the final query, a preview of its rows, the answer in words, the steps collapsed.

Every piece of text that comes from the model, from Wikidata or from the
asker goes through :mod:`bot.wikitext` before it reaches the template, so the
template holds the only markup a reply can contain.  The reply is written in
the asker's language where :mod:`bot.messages` has it.  It stays under
``max_chars``: the trace is shortened first (long observations cut, then the
oldest steps left out), then the preview rows, and a query too long for any
reply is replaced by a note saying so.
"""

from __future__ import annotations

import re
from collections.abc import Iterator

import jinja2

from agent.observations import shorten_iri
from agent.trace import AgentResult, Step
from bot.messages import messages_for
from bot.wikitext import code_block, encode, fits_sparql_template, inline, query_block, query_service_link, \
    sparql_template

PREVIEW_ROWS = 5
CELL_CHARS = 200
THOUGHT_CHARS = 1000
ARGUMENT_CHARS = 3000
EXPLANATION_CHARS = 2000
#: Observation lengths tried in turn before steps are left out.
OBSERVATION_CHARS = (300, 120, 0)
#: The smallest cap a reply can be held to: its fixed wording, a note and the signature.
MIN_CHARS = 1500
INDENT_EM = 1.6  # the width of one ``:`` indentation level in MediaWiki's skins

_environment = jinja2.Environment(loader=jinja2.PackageLoader("bot", "templates"),
                                  undefined=jinja2.StrictUndefined, trim_blocks=True, lstrip_blocks=True,
                                  autoescape=False, keep_trailing_newline=False)


def final_query_wikitext(sparql: str, *, try_it: str = "Try it!") -> str:
    """The wikitext that shows *sparql* and links it to the query service, exactly as written.

    ``{{SPARQL|query=…}}`` (syntax colouring, the service's own link) when
    the template shows and links the query unchanged; otherwise the query
    entity-encoded with a "Try it!" link built here.  Only the white space
    around the query is left out (the template trims it; SPARQL ignores it).
    """
    query = sparql.strip(" \t\r\n")
    if fits_sparql_template(query):
        return sparql_template(query)
    return query_block(query) + f"[{query_service_link(query)} {encode(try_it)}]"


def _cell(term: dict[str, str]) -> str:
    short = shorten_iri(term.get("value", "")) if term.get("type") == "uri" else None
    if short and short[:1] in "QP" and short[1:].isdigit():
        return "{{" + short[0] + "|" + short + "}}"
    return inline(short or term.get("value", ""), CELL_CHARS) or " "


def preview_table(result: AgentResult, rows: int, words: dict[str, str]) -> str:
    """The first *rows* rows as a wikitable (entities as {{Q|...}}, which shows their labels)."""
    if not isinstance(result.answer, list) or not result.answer or rows <= 0:
        return ""
    variables = result.variables or list(result.answer[0])
    lines = ['{| class="wikitable"', "! " + " !! ".join(inline(name) for name in variables)]
    for row in result.answer[:rows]:
        lines.append("|-")
        lines.append("| " + " || ".join(_cell(row[name]) if name in row else " " for name in variables))
    if len(result.answer) > rows:
        more = encode(words["more_rows"].format(count=len(result.answer) - rows))
        lines += ["|-", f"| colspan={len(variables)} | {more}"]
    lines.append("|}")
    return "\n".join(lines)


def _step(number: int, step: Step, observation_chars: int, words: dict[str, str]) -> str:
    if step.action == "execute_sparql":
        action = f"<code>{inline(step.action)}</code>{code_block(step.argument, ARGUMENT_CHARS)}"
    else:
        action = f"<code>{inline(step.action or '?')}({inline(step.argument, ARGUMENT_CHARS)})</code>"
    text = f"<b>{number}.</b> {inline(step.thought, THOUGHT_CHARS)} → {action}"
    if step.rolled_back:
        text += f" <i>{encode(words['rolled_back'])}</i>"
    if step.observation and observation_chars > 0:
        text += code_block(step.observation, observation_chars)
    return f"<div>{text}</div>"


def _traces(result: AgentResult, words: dict[str, str]) -> Iterator[str]:
    """The collapsed trace, shorter and shorter, all on one line so no step can leave the block."""
    if not result.steps:
        yield ""
        return
    title = encode(words["steps"].format(steps=len(result.steps), calls=result.usage.llm_calls))
    for observation_chars in OBSERVATION_CHARS:
        steps = [_step(number, step, observation_chars, words) for number, step in enumerate(result.steps, 1)]
        skips = range(len(steps)) if observation_chars == OBSERVATION_CHARS[-1] else range(1)
        for skip in skips:
            shown = steps[skip:]
            if skip:
                shown.insert(0, f"<div><i>{encode(words['left_out'].format(count=skip))}</i></div>")
            yield ('<div class="mw-collapsible mw-collapsed" style="margin:0.5em 0;padding:0.2em 0.5em;'
                   f'border:1px solid #c8ccd1"><b>{title}</b><div class="mw-collapsible-content">'
                   + "".join(shown) + "</div></div>")


def _lead(result: AgentResult, answered: bool, words: dict[str, str]) -> str:
    if not answered:
        return words["cannot_answer" if result.stop_reason == "cannot_answer" else "nothing"]
    prefix = "best_effort" if result.best_effort else "answer"
    if isinstance(result.answer, bool):
        return words[prefix + "_ask"].format(yes_no=words["yes" if result.answer else "no"])
    count = len(result.answer or [])
    rows = words["rows_one"] if count == 1 else words["rows_other"].format(count=count)
    return words[prefix].format(rows=rows)


def _tried(result: AgentResult, words: dict[str, str], sentence: str = "tried") -> str:
    """What was searched and run, from the trace: *sentence* ``tried`` (none returned results) or ``searched``."""
    searches = list(dict.fromkeys(step.argument.strip() for step in result.steps
                                  if step.action == "search_wikidata" and step.argument.strip()))
    count = sum(step.action == "execute_sparql" for step in result.steps)
    queries = words["queries_one"] if count == 1 else words["queries_other"].format(count=count)
    if not searches:
        return words[sentence + "_no_search"].format(queries=queries)
    shown = ", ".join(f"“{' '.join(term.split())[:80]}”" for term in searches[:5])
    return words[sentence].format(searches=shown + (" …" if len(searches) > 5 else ""), queries=queries)


def shows_query(result: AgentResult) -> bool:
    """The reply posts a query: the run has a final query whose answer is not empty."""
    return bool((result.final_sparql or "").strip()) and result.answer is not None and result.answer != []


def reply_kind(result: AgentResult) -> str:
    """What a reply to *result* holds: ``query``, ``cannot_answer`` (the model's judgement) or ``no_query``."""
    if shows_query(result):
        return "query"
    return "cannot_answer" if result.stop_reason == "cannot_answer" else "no_query"


#: A page title a wiki link may hold as it is: no character that could end the link or start other markup.
_LINK_TITLE = re.compile(r"[^\[\]{}|#<>~\n&]+")


def earlier_request_line(link: str, date: str, words: dict[str, str]) -> str:
    """"An earlier request looks similar: [[Archive page#Heading|Heading]] (date)" for a thread's *link*;
    "" when its page title is not one a link can hold as it is.  The heading is encoded, in the target and the
    label alike (MediaWiki reads the entities of a link target as the characters they stand for)."""
    title, _, heading = link.partition("#")
    if not _LINK_TITLE.fullmatch(title):
        return ""
    anchor = encode(" ".join(heading.split()))
    target = f"{title}#{anchor}" if anchor else title
    shown = f"[[{target}|{anchor or encode(title)}]]" + (f" ({encode(date)})" if date else "")
    before, _, after = words["earlier"].partition("{link}")
    return encode(before) + shown + encode(after)


def render_reply(result: AgentResult, *, depth: int = 1, max_chars: int = 20000, earlier: tuple[str, str] | None = None
                 ) -> str:
    """The whole reply to one question (*depth* 1) or follow-up (2 or more), signed, under *max_chars*.

    *earlier* is the (link, date) of an archived thread about the same request, linked in one line.
    """
    if depth < 1:
        raise ValueError(f"a reply's depth is 1 or more, not {depth}")
    if max_chars < MIN_CHARS:
        raise ValueError(f"a reply needs at least {MIN_CHARS} characters, not {max_chars}")
    words = messages_for(result.language)
    query_text = (result.final_sparql or "").strip(" \t\r\n")
    answered = shows_query(result)
    explanation = result.explanation.strip() or ("" if answered else _tried(result, words))
    if result.stop_reason == "cannot_answer":  # the model's reasons, then what it searched, from the trace
        explanation = " ".join(filter(None, (result.explanation.strip(), _tried(result, words, "searched"))))
    if len(explanation) > EXPLANATION_CHARS:
        explanation = explanation[: EXPLANATION_CHARS - 1] + "…"
    template = _environment.get_template("reply.wiki.j2")
    earlier_line = earlier_request_line(*earlier, words) if earlier else ""

    def render(query: str, rows: int, trace: str, explained: str) -> str:
        return template.render(indent=f"{INDENT_EM * depth:g}", lead=encode(_lead(result, answered, words)),
                               query=query, preview=preview_table(result, rows, words) if answered else "",
                               explanation=encode(explained), earlier=earlier_line, trace=trace,
                               footer=encode(words["footer" if answered else "footer_no_query"])).strip()

    query = final_query_wikitext(query_text, try_it=words["try_it"]) if answered else ""
    for trace in _traces(result, words):
        text = render(query, PREVIEW_ROWS, trace, explanation)
        if len(text) <= max_chars:
            return text
    for rows in range(PREVIEW_ROWS, -1, -1):
        text = render(query, rows, "", explanation)
        if len(text) <= max_chars:
            return text
    if query:
        query = encode(words["query_too_long"].format(count=len(query_text)))
    cut = len(explanation)
    while True:  # the explanation is cut last: MIN_CHARS leaves room for everything else
        shown = explanation if cut == len(explanation) else explanation[:cut] + "…" if cut else ""
        text = render(query, 0, "", shown)
        if len(text) <= max_chars or not shown:
            return text
        cut //= 2
