"""Render the bot's reply as a Wikidata regular writes one: the query, a short preview, the answer in words,
the steps collapsed, who wrote it.

Every line starts with the thread's ``:`` indentation, so a human's reply
with one more ``:`` renders under it.  Every piece of text that comes from
the model, from Wikidata or from the asker goes through :mod:`bot.wikitext`
before it reaches the template (``reply.wiki.j2``): prose and table cells
escaped only where MediaWiki would read markup, the steps as one
code block of encoded lines, shown as written.  When the asker posted a draft query,
the model's explanation (its diagnosis of the draft) leads the reply.

The reply is written in the asker's language where :mod:`bot.messages` has
it.  It says that an automated agent wrote it, names the operator and links
the bot's documentation page (:class:`Credit`).  It stays under
``max_chars``: the trace is shortened first (observations cut, then the
oldest steps left out), then the preview rows, and a query too long for any
reply is replaced by a note saying so.
"""

from __future__ import annotations

import re
import textwrap
from collections.abc import Iterator
from dataclasses import dataclass

import jinja2

from agent.kb.base import Binding
from agent.observations import XSD, shorten_iri
from agent.trace import AgentResult, Step
from bot.messages import messages_for
from bot.wikitext import encode, fits_sparql_template, inline, query_service_link, sparql_template, text_block

PREVIEW_ROWS = 5
CELL_CHARS = 120
HEADER_CHARS = 24
THOUGHT_CHARS = 160
EXPLANATION_CHARS = 2000
#: The width the trace's prose is wrapped at, and the longest line of a query or an observation it shows.
WRAP_CHARS = 100
LINE_CHARS = 160
#: Lines of each observation shown, tried in turn before steps are left out.
OBSERVATION_LINES = (2, 1, 0)
#: The smallest cap a reply can be held to: its fixed wording, a note and the signature.
MIN_CHARS = 1500
GEO = "http://www.opengis.net/ont/geosparql#wktLiteral"
EARTH = "http://www.wikidata.org/entity/Q2"
_POINT = re.compile(r"(?:<([^<>\s]*)>\s*)?Point\(\s*([-+]?[0-9.eE+-]+)\s+([-+]?[0-9.eE+-]+)\s*\)", re.IGNORECASE)
_DATE_TIME = re.compile(r"([+-]?\d{4,})-(\d\d)-(\d\d)T(\d\d):(\d\d):(\d\d)(?:\.\d+)?Z?")
_TITLE_UNSAFE = re.compile(r"[\[\]{}|#<>~\n]")

_environment = jinja2.Environment(loader=jinja2.PackageLoader("bot", "templates"),
                                  undefined=jinja2.StrictUndefined, trim_blocks=True, lstrip_blocks=True,
                                  autoescape=False, keep_trailing_newline=False)


@dataclass(frozen=True)
class Credit:
    """Who runs the bot and where it is documented: every reply names both (bot.ini ``operator`` and
    ``documentation``)."""

    documentation: str
    operator: str | None = None
    #: The bot's user name: when the documentation is its user page, the signature links it already.
    bot: str = ""

    def __post_init__(self) -> None:
        for name, value in (("documentation", self.documentation), ("operator", self.operator or "")):
            if _TITLE_UNSAFE.search(value):
                raise ValueError(f"{name} {value!r} cannot be a page or user name "
                                 "(it holds one of [ ] {{ }} | # < > ~)")

    def operator_link(self) -> str:
        """A link to the operator's talk page (a talk page link pings nobody)."""
        return f"[[User talk:{self.operator}|{self.operator}]]" if self.operator else ""

    @property
    def in_signature(self) -> bool:
        """Whether the documentation is the bot's user page, which every signature links."""
        return bool(self.bot) and " ".join(self.documentation.replace("_", " ").split()) == f"User:{self.bot}"

    def documentation_link(self, label: str, user_page: str) -> str:
        """*label* linked to the documentation; its user page named (not linked twice) when that is it."""
        if self.in_signature:
            return f"{encode(label)}: {encode(user_page)}"
        return f"[[{self.documentation}|{encode(label)}]]"

    def markup(self) -> str:
        """The links the credit adds to a page, for the edit check's allowance."""
        return self.operator_link() + self.documentation_link("about", "")


def final_query_wikitext(sparql: str, *, try_it: str = "Try it!") -> str:
    """The wikitext that shows *sparql* and links it to the query service, exactly as written.

    ``{{SPARQL|query=…}}`` (syntax colouring, the service's own link) when
    the template shows and links the query unchanged; otherwise the query in
    a text block with a "Try it!" link built here.  Only the white space
    around the query is left out (the template trims it; SPARQL ignores it).
    """
    query = sparql.strip(" \t\r\n")
    if fits_sparql_template(query):
        return sparql_template(query)
    return text_block(query) + f"[{query_service_link(query)} {encode(try_it)}]"


def _number(value: float) -> str:
    return f"{abs(value):.4f}".rstrip("0").rstrip(".")


def cell_text(term: Binding) -> str:
    """A value as a reader wants it in a table: dates without a midnight time, coordinates as degrees."""
    value = term.get("value", "")
    datatype = term.get("datatype", "")
    if datatype == XSD + "dateTime" and (date := _DATE_TIME.fullmatch(value.strip())):
        year, month, day, hour, minute, second = date.groups()
        text = f"{year}-{month}-{day}"
        if (hour, minute, second) != ("00", "00", "00"):
            text += f" {hour}:{minute}" + (f":{second}" if second != "00" else "")
        return text
    if datatype == GEO and (point := _POINT.fullmatch(value.strip())):
        globe, longitude, latitude = point.groups()
        try:
            lon, lat = float(longitude), float(latitude)
        except ValueError:
            return value
        text = f"{_number(lat)}°{'N' if lat >= 0 else 'S'} {_number(lon)}°{'E' if lon >= 0 else 'W'}"
        return text + (f" ({shorten_iri(globe)})" if globe and globe != EARTH else "")
    if datatype in (XSD + "decimal", XSD + "integer") and value.startswith("+"):
        return value[1:]
    return shorten_iri(value) if term.get("type") == "uri" else value


def _entity(term: Binding | None) -> str | None:
    if term is None or term.get("type") != "uri":
        return None
    short = shorten_iri(term.get("value", ""))
    return short if short[:1] in "QP" and short[1:].isdigit() else None


def _cell(term: Binding | None) -> str:
    if term is None:
        return " "
    entity = _entity(term)
    if entity:
        return "{{" + entity[0] + "|" + entity + "}}"
    return inline(cell_text(term), CELL_CHARS, cell=True) or " "


def _columns(variables: list[str], rows: list[dict[str, Binding]]) -> list[tuple[str, str]]:
    """The columns to show and their headers: a label column is left out where its item column shows the
    item, which ``{{Q}}`` already shows with its label."""
    shown = []
    for name in variables:
        base = name[:-len("Label")] if name.endswith("Label") else None
        if base in variables and all(_entity(row.get(base)) or name not in row for row in rows):
            continue
        header = base if base and base not in variables else name
        header = header.replace("_", " ").strip() or name
        shown.append((name, header if len(header) <= HEADER_CHARS else header[:HEADER_CHARS - 1] + "…"))
    return shown


def preview_table(result: AgentResult, rows: int, words: dict[str, str]) -> str:
    """The first *rows* rows as a wikitable (an item once, as {{Q|...}}, which shows its label)."""
    if not isinstance(result.answer, list) or not result.answer or rows <= 0:
        return ""
    shown_rows = result.answer[:rows]
    columns = _columns(result.variables or list(result.answer[0]), shown_rows)
    lines = ['{| class="wikitable"', "! " + " !! ".join(encode(header, cell=True) for _, header in columns)]
    for row in shown_rows:
        lines.append("|-")
        lines.append("| " + " || ".join(_cell(row.get(name)) for name, _ in columns))
    if len(result.answer) > rows:
        more = encode(words["more_rows"].format(count=len(result.answer) - rows), cell=True)
        lines += ["|-", f"| colspan={len(columns)} | {more}"]
    lines.append("|}")
    return "\n".join(lines)


def _wrapped(text: str, indent: str, first: str = "") -> list[str]:
    """*text* (one paragraph) wrapped for reading in the page's source."""
    return textwrap.wrap(" ".join(text.split()), WRAP_CHARS, initial_indent=first or indent,
                         subsequent_indent=indent, break_on_hyphens=False) or [first.rstrip()]


def _lines(text: str, indent: str, limit: int | None = None) -> list[str]:
    """The lines of a query or an observation, each cut at LINE_CHARS, at most *limit* of them."""
    lines = [line.rstrip() for line in str(text).strip("\n").splitlines()]
    shown = lines if limit is None else lines[:limit]
    out = [indent + (line if len(line) <= LINE_CHARS else line[:LINE_CHARS - 1] + "…") for line in shown]
    if len(lines) > len(shown):
        out.append(f"{indent}… ({len(lines) - len(shown)} more)")
    return out


def step_lines(number: int, step: Step, observation_lines: int, final: str, words: dict[str, str]) -> list[str]:
    """One step in the trace's compact form (thought, action, the first *observation_lines* of what it saw), as
    plain lines: the reply's steps block and the chat page show the same form."""
    thought = " ".join(step.thought.split())
    if len(thought) > THOUGHT_CHARS:
        thought = thought[:THOUGHT_CHARS - 1] + "…"
    lines = _wrapped(thought, "   ", f"{number}. ") if thought else [f"{number}."]
    rolled_back = f" {words['rolled_back']}" if step.rolled_back else ""
    if step.action == "execute_sparql":  # the query shows what the step did
        if final and step.argument.strip() == final:
            lines.append(f"   {words['same_query']}{rolled_back}")
        else:
            lines += _lines(step.argument, "   ")
            lines[-1] += rolled_back
    else:
        argument = " ".join(step.argument.split())
        argument = argument if len(argument) <= LINE_CHARS else argument[:LINE_CHARS - 1] + "…"
        lines.append(f"   {step.action or '?'}({argument}){rolled_back}")
    if step.observation and observation_lines > 0:
        shown = _lines(step.observation, "     ", observation_lines)
        lines += ["   → " + shown[0][5:]] + shown[1:]
    return lines


def _traces(result: AgentResult, final: str, words: dict[str, str]) -> Iterator[str]:
    """The steps as one text block, shorter and shorter."""
    if not result.steps:
        yield ""
        return
    for observation_lines in OBSERVATION_LINES:
        steps = [step_lines(number, step, observation_lines, final, words)
                 for number, step in enumerate(result.steps, 1)]
        skips = range(len(steps)) if observation_lines == OBSERVATION_LINES[-1] else range(1)
        for skip in skips:
            shown = [line for step in steps[skip:] for line in step]
            if skip:
                shown.insert(0, words["left_out"].format(count=skip))
            yield text_block("\n".join(shown))


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


def _footer(credit: Credit, answered: bool, words: dict[str, str]) -> str:
    """Who wrote the reply (an automated agent), who runs it, and where to read about it."""
    text = encode(words["agent"])
    if credit.operator:
        before, after = words["run_by"].split("{operator}")
        text += ", " + encode(before) + credit.operator_link() + encode(after)
    if answered:
        text += "; " + encode(words["check"])
    return text + " (" + credit.documentation_link(words["about"], words["user_page"]) + ")."


def _paragraphs(text: str) -> list[str]:
    return [encode(" ".join(line.split())) for line in text.splitlines() if line.strip()]


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
_LINK_CLOSERS = re.compile(r"[\]|{}]")


def _in_link(text: str) -> str:
    """*text* encoded for a link's target or label, where a lone ``]``, ``|`` or brace would end it as well."""
    return _LINK_CLOSERS.sub(lambda match: f"&#{ord(match.group())};", encode(text))


@dataclass(frozen=True)
class EarlierRequest:
    """An archived thread about the same request, as the reply names it."""

    #: The thread as a wiki link target (``Archive page#Heading``), and when it was answered.
    link: str
    date: str
    #: Who posted the answer, as the page history says ("" when it does not).
    author: str = ""
    #: The properties the answer's query uses, as (ID, label or ""), in the order the query names them.
    properties: tuple[tuple[str, str], ...] = ()


#: The properties the "earlier request" line names at most.
EARLIER_PROPERTIES = 4


def earlier_request_line(earlier: EarlierRequest, words: dict[str, str]) -> str:
    """"An earlier request looks similar: [[Archive page#Heading|Heading]] (date). Helper answered it with a
    query using doctoral advisor (P184)." for an archived thread: where it is, who answered it and what the
    answer used, so the asker can tell whether it answers them.  "" when its page title is not one a link can
    hold as it is.  The heading is encoded, in the target and the label alike (MediaWiki reads the entities of a
    link target as the characters they stand for); the author is plain text, never a user link (no ping)."""
    title, _, heading = earlier.link.partition("#")
    if not _LINK_TITLE.fullmatch(title):
        return ""
    anchor = _in_link(" ".join(heading.split()))
    target = f"{title}#{anchor}" if anchor else title
    shown = f"[[{target}|{anchor or _in_link(title)}]]" + (f" ({encode(earlier.date)})" if earlier.date else "")
    before, _, after = words["earlier"].partition("{link}")
    line = encode(before) + shown + encode(after)
    used = ", ".join(f"{label} ({pid})" if label else pid for pid, label in earlier.properties[:EARLIER_PROPERTIES])
    if len(earlier.properties) > EARLIER_PROPERTIES:
        used += " …"
    user = " ".join(earlier.author.split())
    key = "earlier_by_using" if user and used else "earlier_by" if user else "earlier_using" if used else ""
    if not key:
        return line
    return line + ". " + encode(words[key].format(user=user, properties=used))


def render_reply(result: AgentResult, *, depth: int = 1, max_chars: int = 20000, credit: Credit | None = None,
                 draft: bool = False, earlier: EarlierRequest | None = None) -> str:
    """The whole reply to one question (*depth* 1) or follow-up (2 or more), signed, under *max_chars*.

    *draft*: the asker posted a query of their own, so the model's explanation (what was wrong with it,
    and the fix) comes first.  *earlier* is an archived thread about the same request, linked in one line.
    """
    if depth < 1:
        raise ValueError(f"a reply's depth is 1 or more, not {depth}")
    if max_chars < MIN_CHARS:
        raise ValueError(f"a reply needs at least {MIN_CHARS} characters, not {max_chars}")
    credit = credit or Credit("User:SpinachBot", bot="SpinachBot")
    words = messages_for(result.language)
    query_text = (result.final_sparql or "").strip(" \t\r\n")
    answered = shows_query(result)
    explanation = result.explanation.strip() or ("" if answered else _tried(result, words))
    if result.stop_reason == "cannot_answer":  # the model's reasons, then what it searched, from the trace
        explanation = " ".join(filter(None, (result.explanation.strip(), _tried(result, words, "searched"))))
    if len(explanation) > EXPLANATION_CHARS:
        explanation = explanation[: EXPLANATION_CHARS - 1] + "…"
    template = _environment.get_template("reply.wiki.j2")
    earlier_line = earlier_request_line(earlier, words) if earlier else ""
    title = encode(words["steps"].format(steps=len(result.steps), calls=result.usage.llm_calls))
    footer = _footer(credit, answered, words)

    def render(query: str, rows: int, trace: str, explained: str) -> str:
        return template.render(indent=":" * depth, lead=encode(_lead(result, answered, words)), query=query,
                               preview=preview_table(result, rows, words) if answered else "",
                               explanation=_paragraphs(explained), diagnosis=draft and answered, trace=trace,
                               title=title, earlier=earlier_line, footer=footer).strip()

    query = final_query_wikitext(query_text, try_it=words["try_it"]) if answered else ""
    for trace in _traces(result, query_text if answered else "", words):
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


#: What a reply holds, in its edit summary, by :func:`reply_kind`; a follow-up's says it is one.
_HOLDS = {"query": ("reply with a SPARQL query written by an automated agent (please check it)",
                    "follow-up: a revised SPARQL query written by an automated agent (please check it)"),
          "no_query": ("automated reply: no query found", "follow-up: automated reply, no query found"),
          "cannot_answer": ("automated reply: this cannot be answered from Wikidata",
                            "follow-up: automated reply, this cannot be answered from Wikidata")}


def edit_summary(section: str, kind: str, holds: str) -> str:
    """The summary of a reply's edit: it links the section, says an automated agent wrote the reply and what
    it holds (*holds*, by :func:`reply_kind`: a query to check, none, or the model's judgement that Wikidata
    cannot answer), and names a follow-up as one.

    *section* is the section's name as a summary links it (:func:`bot.forum.summary_section`); *kind* is
    ``question``, ``follow-up`` or ``too-long``.
    """
    if kind == "too-long":
        what = "automated reply: the question is too long to read"
    else:
        what = _HOLDS[holds][kind == "follow-up"]
    return f"/* {section} */ {what}"
