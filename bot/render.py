"""Render the bot's reply as a Wikidata regular writes one, words first: the asker addressed, the answer in
words with how many results, the query, a short preview, the rest of the explanation, the steps collapsed,
who wrote it.

Every line starts with the thread's ``:`` indentation, so a human's reply
with one more ``:`` renders under it.  Every piece of text that comes from
the model, from Wikidata or from the asker goes through :mod:`bot.wikitext`
before it reaches the template (``reply.wiki.j2``): prose and table cells
escaped only where MediaWiki would read markup, the steps as one
code block of encoded lines, shown as written.  The preview's headers are the
query's variables as words, or the labels (in the reply's language) of the properties whose values they are,
its numbers written as the reply's language writes them.

The reply is written in the asker's language where :mod:`agent.messages` has
it, the steps included: what the knowledge base answered is told in those
words (how many rows a query returned, in all), its values as a reader reads them: from the rows the
step kept, a text without its language tag, numbers and dates as the preview writes them.
It says that an automated agent wrote it, names the operator and links
the bot's documentation page (:class:`Credit`).  It stays under
``max_chars``: the trace is shortened first (observations cut, then the
oldest steps left out), then the preview rows, and a query too long for any
reply is replaced by a note saying so.
"""

from __future__ import annotations

import re
import textwrap
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from enum import StrEnum

import jinja2

from agent.graph import ITEM_ID, PROPERTY_ID
from agent.kb.base import Binding
from agent.kb.local.search import fold
from agent.observations import XSD, shorten_iri
from agent.query_service import query_service_link
from agent.summaries import Said, StepSummary, property_names, summarize
from agent.trace import AgentResult, Step, StopReason
from bot.engines_line import engines_reply_parts
from agent.messages import Words, counted, messages_for, written_number
from bot.wikitext import encode, fits_sparql_template, inline, sparql_template, text_block

#: Rows of the preview under the query: enough to see what the query returns, few enough to keep the reply short.
PREVIEW_ROWS = 3
CELL_CHARS = 120
HEADER_CHARS = 24
THOUGHT_CHARS = 400
#: Sentences of the model's explanation that lead the reply; the rest follows the preview.
LEAD_SENTENCES = 2
EXPLANATION_CHARS = 2000
#: The width the trace's prose is wrapped at, and the longest line of a query or an observation it shows.
WRAP_CHARS = 100
LINE_CHARS = 160
#: Rows (or lines) of each observation shown, tried in turn before steps are left out.
OBSERVATION_ROWS = (1, 0)
#: The smallest cap a reply can be held to: its fixed wording, a note and the signature.
MIN_CHARS = 1500
GEO = "http://www.opengis.net/ont/geosparql#wktLiteral"
EARTH = "http://www.wikidata.org/entity/Q2"
_POINT = re.compile(r"(?:<([^<>\s]*)>\s*)?Point\(\s*([-+]?[0-9.eE+-]+)\s+([-+]?[0-9.eE+-]+)\s*\)", re.IGNORECASE)
_DATE_TIME = re.compile(r"([+-]?\d{4,})-(\d\d)-(\d\d)T(\d\d):(\d\d):(\d\d)(?:\.\d+)?Z?")
_TITLE_UNSAFE = re.compile(r"[\[\]{}|#<>~\n]")
NUMBERS = frozenset(XSD + name for name in ("decimal", "integer", "double", "float", "int", "long", "short",
                                             "nonNegativeInteger", "positiveInteger"))
_CAMEL = re.compile(r"(?<=[a-z0-9])(?=[A-Z])")
_UNITS = {"km2": "km²", "m2": "m²", "m3": "m³", "km3": "km³"}
#: A variable that is the value of a property in a query: ``wdt:P1082 ?population`` (the ID, the name).
_OBJECT_OF = re.compile(rf"\b(?:wdt|ps|p):({PROPERTY_ID})\s+\?(\w+)\b")
#: ``?river wdt:P31 wd:Q4022`` (or ``wdt:P31/wdt:P279*``): the variable's items are instances of that class.
_INSTANCE_OF = re.compile(rf"\?(\w+)\s+wdt:P31(?:/wdt:P279\*)?\s+wd:({ITEM_ID})\b")
_SENTENCE_END = re.compile(r"[.!?…](?=\s|$)")
#: Where one sentence ends and the next starts: a full stop, question or exclamation mark, then a space and a
#: capital, a digit or an opening quote (an abbreviation such as "e.g. the" stays inside its sentence).
_SENTENCE_SPLIT = re.compile(r"(?<=[.!?])\s+(?=[\"“«„(]?[^\W\d_a-z]|\d)")

_environment = jinja2.Environment(loader=jinja2.PackageLoader("bot", "templates"),
                                  undefined=jinja2.StrictUndefined, trim_blocks=True, lstrip_blocks=True,
                                  autoescape=False, keep_trailing_newline=False)


class Markup(StrEnum):
    """How a reply writes what the forum has templates for.

    ``templates`` is the form the forum's regulars write: items as ``{{Q|Q42}}``, the query in ``{{SPARQL}}``, the
    asker addressed with ``{{re|…}}``.  ``links`` is the plain form, for a wiki whose templates bring in what
    MediaWiki's edit check refuses (a ``{{Q}}`` that transcludes a page per item): items as wiki links, the query
    as a text block and a link, the asker as a link to their user page; no template call at all.
    """

    TEMPLATES = "templates"
    LINKS = "links"


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

    def documentation_link(self, label: str, user_page: str, colon: str = ": ") -> str:
        """*label* linked to the documentation; its user page named after *colon* (punctuation, no markup) when
        that is it (not linked twice)."""
        if self.in_signature:
            return f"{encode(label)}{colon}{encode(user_page)}"
        return f"[[{self.documentation}|{encode(label)}]]"

    def markup(self) -> str:
        """The links the credit adds to a page, for the edit check's allowance."""
        return self.operator_link() + self.documentation_link("about", "")


def final_query_wikitext(sparql: str, *, try_it: str = "Try it!", markup: Markup = Markup.TEMPLATES) -> str:
    """The wikitext that shows *sparql* and links it to the query service, exactly as written.

    ``{{SPARQL|query=…}}`` (syntax colouring, the service's own link) when
    the template shows and links the query unchanged and *markup* allows templates; otherwise the query in
    a text block with a "Try it!" link built here.  Only the white space
    around the query is left out (the template trims it; SPARQL ignores it).
    """
    query = sparql.strip(" \t\r\n")
    if markup == Markup.TEMPLATES and fits_sparql_template(query):
        return sparql_template(query)
    return text_block(query) + f"[{query_service_link(query)} {encode(try_it)}]"


def _number(value: float) -> str:
    return f"{abs(value):.4f}".rstrip("0").rstrip(".")


def cell_text(term: Binding, words: Words) -> str:
    """A value as a reader wants it in a table: dates without a midnight time, coordinates as degrees, numbers
    as the reply's language (*words*) writes them."""
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
    if datatype in NUMBERS:
        return written_number(value, words)
    return shorten_iri(value) if term.get("type") == "uri" else value


def _entity(term: Binding | None) -> str | None:
    if term is None or term.get("type") != "uri":
        return None
    short = shorten_iri(term.get("value", ""))
    return short if short[:1] in "QP" and short[1:].isdigit() else None


def item_link(entity: str, label: str = "") -> str:
    """A wiki link to *entity* (``Q42``, ``P31``) as Wikidata names its page (an item in the main namespace, a
    property in ``Property:``), showing *label* (untrusted text, encoded for a link) when there is one."""
    target = f"Property:{entity}" if entity.startswith("P") else entity
    shown = _in_link(" ".join(label.split())[:CELL_CHARS]) if label.strip() else ""
    return f"[[{target}|{shown}]]" if shown else f"[[{target}]]"


def entity_wikitext(entity: str, label: Binding | None, markup: Markup) -> str:
    """An item or property of the preview: ``{{Q|Q42}}`` (the template shows its label), or in the plain form a
    link showing the row's *label* where the query returned one."""
    if markup == Markup.TEMPLATES:
        return "{{" + entity[0] + "|" + entity + "}}"
    text = label.get("value", "") if label is not None and label.get("type") != "uri" else ""
    return item_link(entity, text)


def _cell(term: Binding | None, words: Words, markup: Markup = Markup.TEMPLATES,
          label: Binding | None = None) -> str:
    if term is None:
        return " "
    entity = _entity(term)
    if entity:
        return entity_wikitext(entity, label, markup)
    if term.get("datatype") in NUMBERS:  # its group mark may be a narrow no-break space, which inline() would fold
        return encode(cell_text(term, words)[:CELL_CHARS], cell=True) or " "
    return inline(cell_text(term, words), CELL_CHARS, cell=True) or " "


def header_words(name: str) -> str:
    """A variable's name as words: ``basin_km2`` is "basin km²", ``dateOfBirth`` "date of birth"."""
    spaced = _CAMEL.sub(" ", name).replace("_", " ").replace("-", " ")
    words = [_UNITS.get(word.lower(), word if word.isupper() and len(word) > 1 else word.lower())
             for word in spaced.split()]
    return " ".join(words) or name


def property_labels(result: AgentResult) -> dict[str, str]:
    """The properties the agent saw named (in its searches and the entries it read), by ID: the label the
    knowledge base gave it."""
    return property_names(result.steps)


def _says_nothing(name: str) -> bool:
    """A variable whose name says nothing of what it holds: a letter or two, with or without a digit."""
    return len(name.rstrip("0123456789")) <= 2


def column_subjects(sparql: str) -> dict[str, str]:
    """What the variables of *sparql* hold, by an ID whose label says it: the one property whose value a variable
    is (``?item wdt:P1082 ?population``), else the one class its items are instances of (``?river wdt:P31
    wd:Q4022``)."""
    found: dict[str, set[str]] = {}
    for pid, name in _OBJECT_OF.findall(sparql or ""):
        found.setdefault(name, set()).add(pid)
    classes: dict[str, set[str]] = {}
    for name, qid in _INSTANCE_OF.findall(sparql or ""):
        classes.setdefault(name, set()).add(qid)
    held = {name: ids.pop() for name, ids in classes.items() if len(ids) == 1}
    held.update({name: pids.pop() for name, pids in found.items() if len(pids) == 1})
    return held


def header_ids(result: AgentResult) -> list[str]:
    """The properties and classes whose labels may head the preview's columns, for a lookup in the reply's
    language."""
    return sorted(set(column_subjects(result.final_sparql or "").values()))


def _spelt(text: str) -> str:
    """*text* as a variable's name could spell it: letters and digits alone, case and accents folded."""
    return fold(re.sub(r"[\W_]+", "", text))


def _labelled(words: str, label: str) -> str:
    """A column's header when *label* says what it holds: the label as the knowledge base writes it (its accents and
    capitals), with the units the name gives (*words*, the name as words); where the name says more than the label
    (``?einwohnerzahl_2020`` for "Einwohnerzahl"), the name's words with those that spell the label written as it."""
    units = [word for word in words.split() if word in _UNITS.values() and word not in label]
    said = [word for word in words.split() if word not in units]
    for start in range(len(said)):
        for end in range(start + 1, len(said) + 1):
            if (start, end) != (0, len(said)) and _spelt(" ".join(said[start:end])) == _spelt(label):
                return " ".join([*said[:start], label, *said[end:], *units])
    return " ".join([label, *units])


def _header(name: str, pid: str | None, labels: dict[str, str], translated: dict[str, str]) -> str:
    """A column's header: the label, in the reply's language (*translated*), of what the variable holds in the
    final query (:func:`column_subjects`), as :func:`_labelled` writes it; for a name that says nothing (``?u``)
    and no such label, the label the agent saw (*labels*); else the name as words."""
    words = header_words(name)
    if label := translated.get(pid or ""):
        return _labelled(words, label)
    if _says_nothing(name) and (label := labels.get(pid or "")):
        return label
    return words


def _columns(result: AgentResult, variables: list[str], rows: list[dict[str, Binding]],
             translated: dict[str, str]) -> list[tuple[str, str]]:
    """The columns to show and their headers in words: a label column is left out where its item column shows
    the item, which ``{{Q}}`` already shows with its label."""
    shown = []
    labels = property_labels(result)
    properties = column_subjects(result.final_sparql or "")
    for name in variables:
        base = name[:-len("Label")] if name.endswith("Label") else None
        if base in variables and all(_entity(row.get(base)) or name not in row for row in rows):
            continue
        named = base if base and base not in variables else name
        header = _header(named, properties.get(named), labels, translated)
        shown.append((name, header if len(header) <= HEADER_CHARS else header[:HEADER_CHARS - 1] + "…"))
    return shown


def preview_table(result: AgentResult, rows: int, words: Words,
                  headers: dict[str, str] | None = None, markup: Markup = Markup.TEMPLATES) -> str:
    """The first *rows* rows as a wikitable (an item once, as {{Q|...}}, which shows its label, or in the plain
    *markup* as a link showing the label the row holds); how many rows there are in all the words above it say.
    *headers* are the labels of :func:`header_ids` in the reply's language, by ID: those it lacks are headed by
    the variables' words."""
    if not isinstance(result.answer, list) or not result.answer or rows <= 0:
        return ""
    shown_rows = result.answer[:rows]
    columns = _columns(result, result.variables or list(result.answer[0]), shown_rows, headers or {})
    lines = ['{| class="wikitable"', "! " + " !! ".join(encode(header, cell=True) for _, header in columns)]
    for row in shown_rows:
        lines.append("|-")
        lines.append("| " + " || ".join(_cell(row.get(name), words, markup, row.get(name + "Label"))
                                        for name, _ in columns))
    lines.append("|}")
    return "\n".join(lines)


def _wrapped(text: str, indent: str, first: str = "") -> list[str]:
    """*text* (one paragraph) wrapped for reading in the page's source."""
    return textwrap.wrap(" ".join(text.split()), WRAP_CHARS, initial_indent=first or indent,
                         subsequent_indent=indent, break_on_hyphens=False) or [first.rstrip()]


def _cut_line(line: str) -> str:
    return line if len(line) <= LINE_CHARS else line[:LINE_CHARS - 1] + "…"


def _lines(text: str, indent: str) -> list[str]:
    """The lines of a query, each cut at LINE_CHARS."""
    return [indent + _cut_line(line.rstrip()) for line in str(text).strip("\n").splitlines()]


def _thought(text: str) -> str:
    """The step's thought, whole up to THOUGHT_CHARS; a longer one ends at its last sentence (or word) that fits."""
    thought = " ".join(text.split())
    if len(thought) <= THOUGHT_CHARS:
        return thought
    head = thought[:THOUGHT_CHARS - 1]
    end = max((match.end() for match in _SENTENCE_END.finditer(head)), default=0)
    return head[:end].rstrip() if end > THOUGHT_CHARS // 3 else head.rsplit(" ", 1)[0] + " …"


def _aligned(rows: list[list[str]]) -> list[str]:
    """Tab-separated rows as columns padded with spaces, so that they line up in the steps' fixed-width font."""
    widths = [max(len(row[column]) for row in rows if column < len(row)) for column in range(max(map(len, rows)))]
    return ["  ".join(cell.ljust(widths[column]) for column, cell in enumerate(row)).rstrip() for row in rows]


def _languages(step: Step, name: str) -> set[str | None]:
    """The languages of the texts in column *name* of the rows *step* kept (``None`` for a text without one)."""
    return {term.get("xml:lang") for row in step.rows if (term := row.get(name)) and term.get("type") != "uri"}


def _step_cell(term: Binding | None, step: Step, name: str, words: Words) -> str:
    """A value in a step's table as a reader reads it: an item as its ID (or as the graph shows it), a date,
    a number or a point as the preview writes them (:func:`cell_text`), a text without its language, unless the
    column holds texts in more than one, which the language then tells apart ("Schanghai (de)")."""
    if term is None:
        return ""
    if term.get("type") == "uri" and term.get("value") in step.shown:
        text = step.shown[term["value"]]
    else:
        text = cell_text(term, words)
    text = " ".join(text.split())
    text = text if len(text) <= CELL_CHARS else text[:CELL_CHARS - 1] + "…"
    if term.get("xml:lang") and len(_languages(step, name)) > 1:
        text += f" ({term['xml:lang']})"
    return text


def _result_lines(step: Step, summary: StepSummary, words: Words) -> list[str]:
    """What a query returned, in the reply's words: the header and the first rows, lined up, and how many rows
    there were in all."""
    header = summary.variables
    body = [[_step_cell(row.get(name), step, name, words) for name in header] for row in summary.rows]
    lines = [_cut_line(line) for line in _aligned([header, *body])] if body else []
    count = summary.count or 0
    if count > len(body):
        more = counted(words, "more_rows", count - len(body)) if body else ""
        lines.append(" ".join(filter(None, (more, counted(words, "rows_in_all", count)))))
    return lines


#: The outcomes said in one of the reply's fixed words, by the message that says them.
_SAID_IN_WORDS = {Said.NO_ROWS: "no_rows", Said.NOTHING_FOUND: "nothing_found", Said.NO_SUCH_ENTITY: "no_such_entity"}


def _outcome_lines(step: Step, summary: StepSummary, words: Words) -> list[str]:
    """What a step saw (:func:`agent.summaries.summarize`) in the reply's words: a query's rows or failure, a
    search's hits, an entry's heading and how many properties it has; plain lines for a step that kept no data."""
    said = summary.said
    if said == Said.ROWS:
        return _result_lines(step, summary, words)
    if said in _SAID_IN_WORDS:
        return [words[_SAID_IN_WORDS[said]]]
    if said == Said.ANSWER:
        return [words["yes" if summary.boolean else "no"]]
    if said in (Said.SYNTAX_ERROR, Said.ERROR, Said.TIMEOUT):
        return [words["query_" + said.value].format(message=_cut_line(summary.message))]
    if said == Said.ENTRY:
        return [_cut_line(summary.lines[0]), counted(words, "properties", summary.count or 0)]
    shown = [_cut_line(line) for line in summary.lines]
    if summary.more and shown:
        shown.append(counted(words, "more_lines", summary.more))
    return shown


def step_lines(number: int, step: Step, rows: int, final: str, words: Words) -> list[str]:
    """One step in the trace's compact form (thought, action, the first *rows* rows or lines of what it saw), as
    plain lines, from the step's summary (:func:`agent.summaries.summarize`), which the chat page shows too."""
    thought = _thought(step.thought)
    lines = _wrapped(thought, "   ", f"{number}. ") if thought else [f"{number}."]
    rolled_back = f" {words['rolled_back']}" if step.rolled_back else ""
    if step.action == "stop":  # the model's last words; what it stopped on is the final query
        return lines
    summary = summarize(step, lines=rows, rows=rows)
    if step.action == "execute_sparql":  # the query shows what the step did
        if final and step.argument.strip(" \t\r\n") == final:
            lines.append(f"   {words['same_query']}{rolled_back}")
        else:
            lines += _lines(step.argument, "   ")
            lines[-1] += rolled_back
    else:
        lines.append(f"   {summary.action or '?'}({_cut_line(summary.argument)}){rolled_back}")
    if rows > 0:
        shown = _outcome_lines(step, summary, words)
        if shown:
            lines += ["   → " + shown[0]] + ["     " + line for line in shown[1:]]
    return lines


def shown_steps(result: AgentResult) -> list[Step]:
    """The steps the trace shows: all but a ``stop`` that says nothing (its query is the final one)."""
    return [step for step in result.steps if step.says_something()]


def _traces(result: AgentResult, final: str, words: Words) -> Iterator[str]:
    """The steps as one text block, shorter and shorter."""
    steps_shown = shown_steps(result)
    if not steps_shown:
        yield ""
        return
    for rows in OBSERVATION_ROWS:
        steps = [step_lines(number, step, rows, final, words) for number, step in enumerate(steps_shown, 1)]
        skips = range(len(steps)) if rows == OBSERVATION_ROWS[-1] else range(1)
        for skip in skips:
            shown = [line for step in steps[skip:] for line in step]
            if skip:
                shown.insert(0, counted(words, "left_out", skip))
            yield text_block("\n".join(shown))


def split_explanation(text: str) -> tuple[str, list[str]]:
    """The model's explanation as the reply's words: its first sentences (at most LEAD_SENTENCES, from its first
    paragraph) lead the reply; the rest are paragraphs after the preview."""
    paragraphs = [" ".join(line.split()) for line in text.splitlines() if line.strip()]
    if not paragraphs:
        return "", []
    sentences = _SENTENCE_SPLIT.split(paragraphs[0])
    lead = " ".join(sentences[:LEAD_SENTENCES])
    rest = " ".join(sentences[LEAD_SENTENCES:])
    return lead, ([rest] if rest else []) + paragraphs[1:]


def _found(result: AgentResult, rows: int, words: Words) -> str:
    """The sentence that says what the query below finds: how many results, how many the table shows."""
    prefix = "best_effort" if result.best_effort else "answer"
    if isinstance(result.answer, bool):
        return words[prefix + "_ask"].format(yes_no=words["yes" if result.answer else "no"])
    count = len(result.answer or [])
    shown = min(rows, count)
    found = counted(words, "rows", count)
    if 0 < shown < count:
        found += ", " + counted(words, "first_rows", shown)
    return words[prefix].format(rows=found)


def _tried(result: AgentResult, words: Words, sentence: str = "tried") -> str:
    """What was searched and run, from the trace: *sentence* ``tried`` (none returned results) or ``searched``;
    "" when nothing was searched or run."""
    searches = list(dict.fromkeys(step.argument.strip() for step in result.steps
                                  if step.action == "search_wikidata" and step.argument.strip()))
    count = sum(step.action == "execute_sparql" for step in result.steps)
    if not searches and not count:
        return ""
    queries = counted(words, "queries", count)
    shown = ", ".join(f"“{' '.join(term.split())[:80]}”" for term in searches[:5])
    shown += " …" if len(searches) > 5 else ""
    if not count:
        return words["searched_only"].format(searches=shown)
    if not searches:
        return words[sentence + "_no_search"].format(queries=queries)
    return words[sentence].format(searches=shown, queries=queries)


def _footer(credit: Credit, answered: bool, words: Words) -> str:
    """Who wrote the reply (an automated agent), who runs it, and where to read about it."""
    text = encode(words["agent"])
    if credit.operator:
        before, after = words["run_by"].split("{operator}")
        text += ", " + encode(before) + credit.operator_link() + encode(after)
    if answered:
        text += words["semicolon"] + encode(words["check"])  # punctuation between encoded text
    return text + " (" + credit.documentation_link(words["about"], words["user_page"], words["colon"]) + ")."


def _paragraphs(text: str) -> list[str]:
    """*text*'s lines as the reply's paragraphs, encoded; a line with nothing a page can show makes none (an empty
    line of the list would be an empty item)."""
    return [paragraph for line in text.splitlines() if (paragraph := encode(" ".join(line.split())))]


def address_reply(reply: str, users: Sequence[str], markup: Markup = Markup.TEMPLATES) -> str:
    """*reply* with *users* addressed at the start of its first line, after its indentation (a draft approved on
    the review page is addressed when it is posted, so that the review page notifies no one)."""
    indent = len(reply) - len(reply.lstrip(":"))
    return reply[:indent] + addressing(users, markup) + reply[indent:]


def addressing(users: Sequence[str], markup: Markup = Markup.TEMPLATES) -> str:
    """``{{re|1=Asker|2=Other}} ``, which the forum's regulars write to notify the people they answer (each once,
    in order; in the plain *markup*, links to their user pages, which notify them as well); "" for no one.  A
    name that cannot be a user name is left out."""
    names = [name for name in dict.fromkeys(" ".join(user.split()) for user in users)
             if name and not _TITLE_UNSAFE.search(name)]
    if not names:
        return ""
    if markup == Markup.LINKS:
        return ", ".join(f"[[User:{_in_link(name)}|{_in_link(name)}]]" for name in names) + ": "
    return "{{re|" + "|".join(f"{number}={encode(name)}" for number, name in enumerate(names, 1)) + "}} "


def shows_query(result: AgentResult) -> bool:
    """The reply posts a query: the run has a final query whose answer is not empty."""
    return bool((result.final_sparql or "").strip()) and result.answer is not None and result.answer != []


def reply_kind(result: AgentResult) -> str:
    """What a reply to *result* holds: ``query``, ``cannot_answer`` (the model's judgement) or ``no_query``."""
    if shows_query(result):
        return "query"
    return "cannot_answer" if result.stop_reason == StopReason.CANNOT_ANSWER else "no_query"


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


def earlier_request_line(earlier: EarlierRequest, words: Words) -> str:
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
                 earlier: EarlierRequest | None = None, addressed: Sequence[str] = (),
                 headers: dict[str, str] | None = None, markup: Markup = Markup.TEMPLATES,
                 stale_after_days: float | None = None) -> str:
    """The whole reply to one question (*depth* 1) or follow-up (2 or more), signed, under *max_chars*.

    Words first, as the forum's regulars write: *addressed* (the asker, and whoever the reply answers besides,
    :func:`bot.forum_decisions.addressees`) addressed with ``{{re|…}}``, which notifies them; the
    model's explanation (its first sentences; with the asker's draft, its diagnosis) and how many results the
    query finds; then the query, the first rows, the rest of the explanation, the steps collapsed, who wrote it.
    *earlier* is an archived thread about the same request, linked in one line.  *headers* name the preview's
    columns in the reply's language (:func:`preview_table`).  *markup* is the form (:class:`Markup`): the
    forum's templates, or plain links and a text block where the wiki's templates cannot be posted.
    The run's cross-check (:attr:`AgentResult.cross_check`) adds a line under the query: what each engine found,
    a link and a date per engine, a copy older than *stale_after_days* named (:mod:`bot.engines_line`).
    """
    if depth < 1:
        raise ValueError(f"a reply's depth is 1 or more, not {depth}")
    if max_chars < MIN_CHARS:
        raise ValueError(f"a reply needs at least {MIN_CHARS} characters, not {max_chars}")
    credit = credit or Credit("User:SpinachBot", bot="SpinachBot")
    words = messages_for(result.language)
    query_text = (result.final_sparql or "").strip(" \t\r\n")
    answered = shows_query(result)
    explanation = result.explanation.strip()
    if result.stop_reason == StopReason.CANNOT_ANSWER:  # the model's reasons, then what it searched, from the trace
        explanation = " ".join(filter(None, (explanation, _tried(result, words, "searched"))))
    elif not answered and not explanation:
        explanation = _tried(result, words)
    if len(explanation) > EXPLANATION_CHARS:
        explanation = explanation[: EXPLANATION_CHARS - 1] + "…"
    template = _environment.get_template("reply.wiki.j2")
    earlier_line = earlier_request_line(earlier, words) if earlier else ""
    title = encode(words["steps_title"].format(steps=counted(words, "steps", len(shown_steps(result))),
                                         calls=counted(words, "calls", result.usage.llm_calls)))
    footer = _footer(credit, answered, words)
    address = addressing(addressed, markup)

    def render(query: str, rows: int, trace: str, explained: str) -> str:
        if answered:
            opening, rest = split_explanation(explained)
            lead = " ".join(filter(None, (encode(opening), encode(_found(result, rows, words)))))
            paragraphs = _paragraphs("\n".join(rest))
        else:
            lead = encode(words["cannot_answer" if result.stop_reason == StopReason.CANNOT_ANSWER else "nothing"])
            paragraphs = _paragraphs(explained)
        return template.render(indent=":" * depth, lead=address + lead, query=query,
                               preview=preview_table(result, rows, words, headers, markup) if answered else "",
                               explanation=paragraphs, trace=trace, title=title, earlier=earlier_line,
                               footer=footer, engines=engines.line if query else "").strip()

    engines = engines_reply_parts(result.cross_check if answered else None, query_text, words, stale_after_days)
    query = (engines.query or final_query_wikitext(query_text, try_it=words["try_it"], markup=markup)
             if answered else "")
    for trace in _traces(result, query_text if answered else "", words):
        text = render(query, PREVIEW_ROWS, trace, explanation)
        if len(text) <= max_chars:
            return text
    for rows in range(PREVIEW_ROWS, -1, -1):
        text = render(query, rows, "", explanation)
        if len(text) <= max_chars:
            return text
    if query:
        query = encode(counted(words, "query_too_long", len(query_text)))
    cut = len(explanation)
    while True:  # the explanation is cut last: MIN_CHARS leaves room for everything else
        shown = explanation if cut == len(explanation) else explanation[:cut] + "…" if cut else ""
        text = render(query, 0, "", shown)
        if len(text) <= max_chars or not shown:
            return text
        cut //= 2


#: What a reply holds, in its edit summary, by :func:`reply_kind` and by what it answers (:data:`_ANSWERS`).
_HOLDS = {"query": ("reply with a SPARQL query written by an automated agent (please check it)",
                    "follow-up: a revised SPARQL query written by an automated agent (please check it)",
                    "answer to a ping: a SPARQL query written by an automated agent (please check it)"),
          "no_query": ("automated reply: no query found", "follow-up: automated reply, no query found",
                       "answer to a ping: automated reply, no query found"),
          "cannot_answer": ("automated reply: this cannot be answered from Wikidata",
                            "follow-up: automated reply, this cannot be answered from Wikidata",
                            "answer to a ping: automated reply, this cannot be answered from Wikidata")}
#: The task kinds (:class:`bot.planner.TaskKind`) whose summary says what they answer, by their place in _HOLDS.
_ANSWERS = {"question": 0, "follow-up": 1, "ping": 2}


def edit_summary(section: str, kind: str, holds: str) -> str:
    """The summary of a reply's edit: it links the section, says an automated agent wrote the reply and what
    it holds (*holds*, by :func:`reply_kind`: a query to check, none, or the model's judgement that Wikidata
    cannot answer), and names what it answers: a follow-up, or a ping of the bot, as one.

    *section* is the section's name as a summary links it (:func:`bot.forum.summary_section`); *kind* is
    ``question``, ``follow-up``, ``ping`` or ``too-long``.
    """
    if kind == "too-long":
        what = "automated reply: the question is too long to read"
    else:
        what = _HOLDS[holds][_ANSWERS[kind]]
    return f"/* {section} */ {what}"
