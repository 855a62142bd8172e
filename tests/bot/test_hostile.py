"""The hostile corpus: an attacker's payloads at every entry point of the bot, on the real MediaWiki.

Each case of ``tests/fixtures/hostile/*.json`` puts one payload at one entry
point: the section heading, the question, the asker's draft query, the
model's thoughts and action arguments, the ``stop`` action's explanation and
language, Wikidata labels (a property's heading the preview of a German reply), descriptions and statement
values, query results,
the final query, other users' text on the page.  The bot runs as an operator
runs it (``python -m bot.run``, in the test process) against the real wiki, with the scripted
model and the stand-in Wikidata on loopback.

The cases run in batches, many sections on one page and two passes of the bot
per page (the second must change nothing), each page when the first of its
tests asks for it (the tests of one page are one ``xdist_group``, so a worker
runs only its own pages).  A case whose payload sits raw in the asker's own
text and could spill into the sections after it (an unclosed ``<pre>``) gets
a page of its own.

What a case checks is what a reader of the page (or its stored wikitext)
would notice:

* the bot's own heading rules read the page as MediaWiki does (its
  ``action=parse&prop=sections``), and where they would not, the case fails;
* each bot revision is the previous text plus one insertion in the case's
  own section as MediaWiki reads it, after the asker's question, on lines of
  its own, so everyone else's text stays byte-identical; the page rendered
  with a word after the reply's signature shows that word once, under the
  asker's heading, with no hidden ancestor (a signed section someone started
  under a case's question with a heading MediaWiki reads may get one reply of
  its own, judged the same way under its own heading);
* each bot revision's summary, as MediaWiki renders it, links the section
  and nothing else, and holds no control or format character;
* MediaWiki's own parse of the page after each bot revision has the same
  sections, categories, links, images, interwiki links and page properties as
  before, and no templates, links or external links but those a reply may add
  (``{{SPARQL}}``, ``{{Q}}``, the bot's signature, ``query.wikidata.org``);
  its HTML gains no ``<script>``, no ``position:fixed``/``absolute`` element
  and no heading, and hides none of the text that was visible;
* the reply, parsed on its own, holds exactly one expanded signature of the
  bot, every step of the trace inside its collapsible element, and every
  "Try it!" link decodes to a query the model wrote or to the agent's final
  query as its trace records it, the final one among them;
* where the bot must stay silent (an opt-out), the page is unchanged and the
  section's state records why; where either outcome is right (a lone
  surrogate, a query longer than a reply may be), a reply must be inert and
  a silence must have its reason recorded; no pass crashes.
"""

from __future__ import annotations

import html
import json
import re
import time
import unicodedata
import urllib.parse
import urllib.request
from collections import Counter
from dataclasses import dataclass, field
from html.parser import HTMLParser
from typing import Any

import pytest

from bot.forum import find_headings
from bot.render import HEADER_CHARS
from bot.state import State
from tests.support.bot_rig import BotRig, BotRun
from tests.support.euler import euler_entities
from tests.support.forum_text import signature
from tests.support.llm_server import FakeLLMServer, TextReply, ToolCallReply
from tests.support.mediawiki import BOT_USER, HumanEditor
from tests.support.paths import FIXTURES
from tests.support.wikidata_server import (FakeWikidata, SparqlReply, entity, item_snak, select, statement,
                                           string_snak)

pytestmark = pytest.mark.mediawiki
CORPUS = FIXTURES / "hostile"
ENTRIES = frozenset({
    "heading", "question", "draft-template", "draft-syntaxhighlight", "draft-link", "other-text", "section",
    "thought", "search", "entry-id", "property-id", "sparql", "failing-query", "final-query", "explanation",
    "language", "label", "description", "claim", "result-literal", "result-iri", "result-vars", "tool-arguments",
    "tool-name", "header-label"})
EXPECTATIONS = frozenset({"reply", "silent", "either"})
#: Entry points whose payload reaches the bot through the model or Wikidata, so the agent's record holds it.
MODEL_SIDE = ENTRIES - {"heading", "question", "draft-template", "draft-syntaxhighlight", "draft-link", "other-text",
                        "section", "header-label"}
CASES_PER_PAGE = 12
FINAL_QUERY = ("SELECT ?advisor ?advisorLabel WHERE { wd:Q7604 wdt:P184 ?advisor . "
               "SERVICE wikibase:label { bd:serviceParam wikibase:language \"en\". } }")
#: The bot's default cap on a reply: a final query longer than this cannot be shown in it.
REPLY_MAX_CHARS = 20000
#: The stand-in model's key: no pass may print it.
KEY = "sk-hostile-corpus"
EXPLANATION = "The query lists the doctoral advisors (P184) of Leonhard Euler (Q7604)."
#: What a reply may add to the page: the query template, entity templates, the bot's signature, "Try it!", and
#: {{re}} addressing the asker (a link to the user page of the one who asked, who signed in the thread).
ALLOWED_TEMPLATES = frozenset({"Template:SPARQL", "Template:Q", "Template:Re"})
ALLOWED_LINK_PREFIXES = (f"User:{BOT_USER}", f"User talk:{BOT_USER}")
ASKER = "User:Alice"
QUERY_SERVICE = "https://query.wikidata.org/"
BOT_SIGNATURE = re.compile(
    rf"\[\[User:{BOT_USER}\|{BOT_USER}\]\] \(\[\[User talk:{BOT_USER}\|talk\]\]\) "
    r"\d\d:\d\d, (?P<date>\d{1,2} [A-Z][a-z]+ \d{4}) \(UTC\)")
#: An element (not text that shows one: a reply's text blocks show ``<div style="…">`` as written, escaped) whose
#: style takes it out of the page's flow.
FIXED_STYLE = re.compile(r"<[A-Za-z][^<>]*\bstyle=\"[^\"]*position\s*:\s*(?:fixed|absolute|sticky)", re.IGNORECASE)
HEADING_TAG = re.compile(r"<h[1-6][\s>]", re.IGNORECASE)
PARSE_PROPS = "text|sections|categories|templates|links|externallinks|images|properties|iwlinks|langlinks"


# -- the corpus -------------------------------------------------------------------------------

@dataclass(frozen=True)
class Case:
    """One payload at one entry point, with what the bot must do."""

    name: str
    family: str
    entry: str
    payload: str
    expect: str
    #: The SPARQL the entry point uses, ``$P`` standing for the payload.
    query: str = 'SELECT ?x WHERE { ?x rdfs:label "$P"@en . }'
    #: The payload is repeated this many times (long inputs stay short in the files).
    repeat: int = 1
    #: The case needs a page of its own: its asker-side text could spill into later sections.
    isolate: bool = False
    #: For entry "section": the heading line and the body, with {heading}, {marker}, {signature} and {payload}.
    heading_line: str = "== {heading} =="
    body: str = ""
    #: Text for the page's lead, above every section (an isolated case's own page), with {payload}.
    lead: str = ""
    #: For entry "section": text of the body (with {marker} and {signature}) that the reply must come after, the
    #: end of someone's comment that a reply placed earlier would split.
    reply_after: str = ""

    @property
    def text(self) -> str:
        return self.payload * self.repeat

    @property
    def marker(self) -> str:
        """A plain word in the heading and question that names the case to the scripted model."""
        return f"HC-{self.name}"

    @property
    def sparql(self) -> str:
        return self.query.replace("$P", self.text)


def load_cases() -> list[Case]:
    cases = []
    for path in sorted(CORPUS.glob("*.json")):
        for raw in json.loads(path.read_text()):
            case = Case(**raw)
            if case.entry not in ENTRIES or case.expect not in EXPECTATIONS:
                raise ValueError(f"{path.name}: case {case.name!r} has entry {case.entry!r} and expectation "
                                 f"{case.expect!r}; entries: {sorted(ENTRIES)}, expectations: {sorted(EXPECTATIONS)}")
            if case.lead and not case.isolate:
                raise ValueError(f"{path.name}: case {case.name!r} writes the page's lead, so it needs isolate")
            if not re.fullmatch(r"[a-z0-9-]+", case.name):
                raise ValueError(f"{path.name}: case name {case.name!r} must be lower-case letters, digits, '-'")
            cases.append(case)
    names = [case.name for case in cases]
    duplicates = sorted({name for name in names if names.count(name) > 1})
    if duplicates:
        raise ValueError(f"duplicate case names in {CORPUS}: {', '.join(duplicates)}")
    return cases


CASES = load_cases()


def pages_of(cases: list[Case]) -> dict[str, list[Case]]:
    """Batches: shared pages of up to CASES_PER_PAGE cases, and a page for each isolated case."""
    pages: dict[str, list[Case]] = {}
    shared = [case for case in cases if not case.isolate]
    for start in range(0, len(shared), CASES_PER_PAGE):
        pages[f"batch-{start // CASES_PER_PAGE + 1}"] = shared[start:start + CASES_PER_PAGE]
    for case in cases:
        if case.isolate:
            pages[case.name] = [case]
    return pages


PAGES = pages_of(CASES)
PAGE_OF = {case.name: page for page, cases in PAGES.items() for case in cases}


# -- what each case puts on the page, in the model and in Wikidata -----------------------------

@dataclass
class Plan:
    """A case made concrete: its section text, the model's steps, what Wikidata answers."""

    case: Case
    heading_line: str
    body: str
    steps: list[tuple[str, dict[str, str]]]
    answers: dict[str, SparqlReply] = field(default_factory=dict)
    entities: list[dict[str, Any]] = field(default_factory=list)
    #: The asker's signature: a reply belongs after it.
    signature: str = ""

    @property
    def queries(self) -> set[str]:
        """Every query the model wrote, as the agent keeps it (stripped)."""
        return {arguments["sparql"].strip() for action, arguments in self.steps
                if action == "execute_sparql" and isinstance(arguments, dict)}


def plan(case: Case, number: int) -> Plan:
    marker, payload = case.marker, case.text
    sign = signature("Alice", number % 60)
    question = f"{marker}: Who were the doctoral advisors of Leonhard Euler? {sign}"
    heading = marker
    final_rows = select(["advisor", "advisorLabel"], [{"advisor": "Q124500", "advisorLabel": {
        "type": "literal", "value": "Johann Bernoulli", "xml:lang": "en"}}])
    run_final = ("execute_sparql", {"sparql": FINAL_QUERY})
    stop = ("stop", {"explanation": EXPLANATION, "language": "en"})
    steps: list[tuple[str, dict[str, str]]] = [run_final, stop]
    answers = {FINAL_QUERY: final_rows}
    entities: list[dict[str, Any]] = []
    entry = case.entry
    if entry == "heading":
        heading = f"{marker} {payload}"
    elif entry == "question":
        question = f"{marker}: {payload} {sign}"
    elif entry.startswith("draft-"):
        draft = {
            "draft-template": "{{SPARQL|query=" + case.sparql + "}}",
            "draft-syntaxhighlight": '<syntaxhighlight lang="sparql">' + case.sparql + "</syntaxhighlight>",
            "draft-link": f"[{QUERY_SERVICE}#{urllib.parse.quote(case.sparql, safe='')} my query]",
        }[entry]
        question = f"{marker}: Why does my query not work? {draft} {sign}"
        steps = [("execute_sparql", {"sparql": case.sparql}), stop]
        answers[case.sparql.strip()] = final_rows
    elif entry == "other-text":
        question += f"\n:{payload} {signature('Bob', (number + 1) % 60)}"
    elif entry == "thought":
        steps = [("execute_sparql", {"sparql": FINAL_QUERY, "thought": payload}), stop]
    elif entry == "search":
        steps = [("search_wikidata", {"query": payload}), run_final, stop]
    elif entry == "entry-id":
        steps = [("get_wikidata_entry", {"qid": payload}), run_final, stop]
    elif entry == "property-id":
        steps = [("get_property_examples", {"pid": payload}), run_final, stop]
    elif entry in ("sparql", "failing-query"):
        steps = [("execute_sparql", {"sparql": case.sparql}), run_final, stop]
        answers[case.sparql.strip()] = final_rows if entry == "sparql" else SparqlReply(
            400, "SPARQL-QUERY: queryStr=...\njava.util.concurrent.ExecutionException: "
                 "org.openrdf.query.MalformedQueryException: " + payload + "\n\tat java.util...")
    elif entry == "final-query":
        steps = [("execute_sparql", {"sparql": case.sparql}), stop]
        answers[case.sparql.strip()] = final_rows
    elif entry == "explanation":
        steps = [run_final, ("stop", {"explanation": payload, "language": "en"})]
    elif entry == "language":
        steps = [run_final, ("stop", {"explanation": EXPLANATION, "language": payload})]
    elif entry in ("label", "description", "claim"):
        qid = f"Q{900000 + number}"
        label = payload if entry == "label" else f"hostile entity {case.name}"
        description = payload if entry == "description" else "an entity of the hostile corpus"
        claims = {"P31": [statement(item_snak("P31", "Q5"))]}
        if entry == "claim":  # a string statement (external identifiers are left out of entries)
            claims["P528"] = [statement(string_snak("P528", payload))]
            entities.append(entity("P528", "catalog code", "catalog name of an object", datatype="string"))
        entities.append(entity(qid, label, description, claims=claims, aliases=[f"hostile entity {case.name}"]))
        steps = [("search_wikidata", {"query": f"hostile entity {case.name}"}),
                 ("get_wikidata_entry", {"qid": qid}), run_final, stop]
    elif entry == "header-label":  # a property's German label heads the preview's column of a German reply
        pid = f"P{900000 + number}"
        query = f"SELECT ?advisor ?wert WHERE {{ wd:Q7604 wdt:P184 ?advisor ; wdt:{pid} ?wert . }}"
        hostile = entity(pid, f"hostile property {case.name}", datatype="string")
        hostile["labels"]["de"] = {"language": "de", "value": payload}
        entities.append(hostile)
        answers[query] = select(["advisor", "wert"], [{"advisor": "Q124500", "wert": {"type": "literal",
                                                                                      "value": "x"}}])
        steps = [("execute_sparql", {"sparql": query}), ("stop", {"explanation": EXPLANATION, "language": "de"})]
    elif entry == "tool-arguments":  # the arguments as the model sent them, not JSON the agent can read
        closing = "".join({"[": "]", "{": "}"}[char] for char in reversed(payload) if char in "[{")
        steps = [("execute_sparql", '{"sparql": ' + payload + closing + "}"), run_final, stop]
    elif entry == "tool-name":
        steps = [(payload, {"sparql": FINAL_QUERY}), run_final, stop]
    elif entry == "result-vars":  # an answer over the agent's size cap, cut mid-row, its variables named oddly
        query = f"SELECT * WHERE {{ ?x ?p ?o . FILTER(?o != \"{case.name}\") }}"
        steps = [("execute_sparql", {"sparql": query}), run_final, stop]
        row = {payload: {"type": "literal", "value": "v" * 200}, "y": {"type": "literal", "value": "w"}}
        answers[query] = select([payload, "y"], [row] * 60_000)
    elif entry in ("result-literal", "result-iri"):
        query = f'SELECT ?value WHERE {{ wd:Q7604 wdt:P1559 ?value . FILTER(?value != "{case.name}") }}'
        value = {"type": "literal" if entry == "result-literal" else "uri", "value": payload}
        steps = [("execute_sparql", {"sparql": query}), stop]
        answers[query] = select(["value"], [{"value": value}, {"value": {"type": "literal", "value": "plain"}}])
    elif entry == "section":
        heading_line = case.heading_line.replace("{heading}", heading)
        body = case.body.replace("{marker}", marker).replace("{signature}", sign).replace("{payload}", payload)
        return Plan(case, heading_line, body, _with_markers(case, steps), answers, entities, sign)
    return Plan(case, f"== {heading} ==", question, _with_markers(case, steps), answers, entities, sign)


def _with_markers(case: Case, steps: list[tuple[str, dict[str, str]]]) -> list[tuple[str, dict[str, str]]]:
    """Every step's thought starts with a marker, so the rendered trace shows where each step landed."""
    marked: list[tuple[str, dict[str, str] | str]] = []
    for number, (action, arguments) in enumerate(steps, 1):
        if isinstance(arguments, str):  # raw arguments (a case of its own): no room for a thought
            marked.append((action, arguments))
            continue
        thought = f"{step_marker(case, number)} " + arguments.get("thought", f"Step {number} of the plan.")
        marked.append((action, {**arguments, "thought": thought}))
    return marked


def step_marker(case: Case, number: int) -> str:
    return f"sm-{case.name}-{number}"


def query_key(query: str) -> str:
    """A query as the stand-in query service recognises it: white space and a first ``DISTINCT`` aside."""
    return " ".join(re.sub(r"\bDISTINCT\s+", "", query, count=1).split())


class Script:
    """The scripted model: finds the case's marker in the request and plays that case's steps."""

    def __init__(self, plans: dict[str, Plan]) -> None:
        self.plans = plans

    def __call__(self, body: dict[str, Any]) -> ToolCallReply | TextReply:
        messages = body.get("messages", [])
        if "tools" not in body:  # a pruning or extraction call: give back the text it was shown
            return TextReply(str(messages[-1].get("content", ""))[-1200:] if messages else "")
        text = " ".join(str(message.get("content") or "") for message in messages if message["role"] == "user")
        found = re.search(r"HC-([a-z0-9-]+)", text)
        chosen = self.plans.get(found.group(1)) if found else None
        steps = chosen.steps if chosen else [("execute_sparql", {"sparql": FINAL_QUERY, "thought": "unknown case"}),
                                             ("stop", {"thought": "done", "explanation": EXPLANATION,
                                                       "language": "en"})]
        done = sum(message["role"] == "tool" for message in messages)
        action, arguments = steps[min(done, len(steps) - 1)]
        return ToolCallReply(action, arguments)


# -- the wiki -----------------------------------------------------------------------------------

def api_post(api_url: str, **params: str) -> dict[str, Any]:
    """A POST to the Action API: parsing a long reply does not fit in a URL."""
    data = urllib.parse.urlencode({"format": "json", "formatversion": "2", **params}).encode()
    with urllib.request.urlopen(urllib.request.Request(api_url, data=data), timeout=120) as response:
        return json.load(response)


def revisions_with_text(mediawiki, title: str) -> list[dict[str, Any]]:
    """Every revision of *title*, oldest first, with its user, timestamp, parent and text."""
    found: list[dict[str, Any]] = []
    extra: dict[str, str] = {}
    while True:
        answer = mediawiki.api(action="query", prop="revisions", titles=title, rvslots="main", rvdir="newer",
                               rvprop="ids|user|timestamp|content|comment|parsedcomment", rvlimit="50", **extra)
        for revision in answer["query"]["pages"][0].get("revisions", []):
            found.append({"id": revision["revid"], "parent": revision["parentid"], "user": revision["user"],
                          "timestamp": revision["timestamp"], "text": revision["slots"]["main"]["content"],
                          "comment": revision.get("comment", ""), "parsed comment": revision.get("parsedcomment", "")})
        if "continue" not in answer:
            return found
        extra = {key: str(value) for key, value in answer["continue"].items()}


@dataclass
class Parsed:
    """What MediaWiki's parser makes of some wikitext: its link tables and its HTML."""

    sections: list[tuple]
    categories: list[str]
    templates: set[str]
    links: set[str]
    external: list[str]
    images: set[str]
    properties: str
    interwiki: set[str]
    html: str

    @classmethod
    def of(cls, answer: dict[str, Any]) -> Parsed:
        parse = answer["parse"]
        return cls(
            sections=[(section["level"], section["line"]) for section in parse["sections"]],
            categories=sorted(category["category"] for category in parse["categories"]),
            templates={template["title"] for template in parse["templates"]},
            links={link["title"] for link in parse["links"]},
            external=list(parse["externallinks"]),
            images=set(parse["images"]),
            properties=json.dumps(parse["properties"], sort_keys=True),
            interwiki={f"{link['prefix']}:{link['title']}" for link in parse["iwlinks"]}
            | {f"{link['lang']}:{link['title']}" for link in parse["langlinks"]},
            html=parse["text"],
        )


def parse_revision(mediawiki, revision: int) -> Parsed:
    return Parsed.of(mediawiki.api(action="parse", oldid=str(revision), prop=PARSE_PROPS))


def parse_text(mediawiki, title: str, text: str) -> Parsed:
    return Parsed.of(api_post(mediawiki.api_url, action="parse", title=title, text=text, contentmodel="wikitext",
                              prop=PARSE_PROPS))


class _Html(HTMLParser):
    """The visible text of MediaWiki's HTML, split by whether it lies inside a collapsible element."""

    VOID = frozenset({"br", "img", "hr", "input", "meta", "link", "wbr", "area", "base", "col", "source"})

    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.stack: list[bool] = []
        self.inside: list[str] = []
        self.outside: list[str] = []

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        if tag in self.VOID:
            return
        classes = (dict(attrs).get("class") or "").split()
        self.stack.append("mw-collapsible" in classes or (bool(self.stack) and self.stack[-1]))

    def handle_endtag(self, tag: str) -> None:
        if tag not in self.VOID and self.stack:
            self.stack.pop()

    def handle_data(self, data: str) -> None:
        (self.inside if self.stack and self.stack[-1] else self.outside).append(data)


def visible(html: str) -> _Html:
    reader = _Html()
    reader.feed(html)
    reader.close()
    return reader


# -- running the bot on one page ---------------------------------------------------------------

@dataclass
class PageRun:
    """One page of the corpus after the bot's passes: its history, parses and the bot's runs."""

    title: str
    plans: list[Plan]
    human: dict[str, Any]
    bot_revisions: list[dict[str, Any]]
    runs: list[BotRun]
    state: dict[str, tuple[str, str | None, dict | None]]
    problems: dict[str, list[str]]


def compose(plans: list[Plan]) -> str:
    lead = ("{{shortcut|WD:RAQ}}\nThis is the place to request a SPARQL query.\n"
            "<!-- other users' text above the sections stays as it is -->\n"
            + "".join(item.case.lead.replace("{payload}", item.case.text) + "\n" for item in plans if item.case.lead))
    sections = []
    for item in plans:
        sections.append(f"{item.heading_line}\n<!-- hostile case {item.case.name} -->\n{item.body}\n")
    return lead + "\n" + "\n".join(sections)


def section_starts(text: str, plans: list[Plan]) -> list[int]:
    """Where each case's section begins in the stored text: the line before its marker comment."""
    starts, position = [], 0
    for item in plans:
        marker = text.index(f"<!-- hostile case {item.case.name} -->", position)
        start = text.rfind("\n", 0, marker - 1) + 1
        starts.append(start)
        position = marker
    return starts


def state_file(title: str) -> str:
    """One state file per page (a live bot locks its state file)."""
    return f"state-{re.sub(r'[^A-Za-z0-9-]+', '-', title)}.sqlite"


def looked_at(rig, title: str, lead: str) -> str:
    """The forum page *title* made with *lead* and looked at once by the bot (its first look: nothing on it is
    answered); the bot's state file for it."""
    state = state_file(title)
    rig.mediawiki.edit_as_human(title, lead, "the page")
    assert rig.run(title, "--once", "--live", state=state).code == 0
    return state


def insertion(old: str, new: str) -> tuple[int, int, int] | None:
    """When *new* is *old* with one piece of text inserted: the lowest and highest insertion point, its length."""
    grown = len(new) - len(old)
    if grown <= 0:
        return None
    prefix = _first_difference(old, new)
    suffix = 0
    while suffix < len(old) and old[-1 - suffix] == new[-1 - suffix]:
        suffix += 1
    if prefix + suffix < len(old):
        return None
    return len(old) - suffix, prefix, grown


def run_page(rig: BotRig, page: str, plans: list[Plan]) -> PageRun:
    mediawiki = rig.mediawiki
    title = f"Wikidata:Request a query/Hostile {page} {int(time.time())}"
    mediawiki.edit_as_human(title, compose(plans), "questions of the hostile corpus")
    human = revisions_with_text(mediawiki, title)[-1]
    section_starts(human["text"], plans)  # every case's section is on the page
    options = ("--config", str(rig.directory / "bot.ini"))
    runs = [rig.run(title, "--once", "--live", "--backlog", *options, state=state_file(title)),
            rig.run(title, "--once", "--live", *options, state=state_file(title))]
    bot_revisions = [revision for revision in revisions_with_text(mediawiki, title) if revision["id"] > human["id"]]
    state = State(rig.state_path(state_file(title)))
    try:
        records = {record.heading: (record.status, record.last_error, record.trace) for record in state.sections(title)}
    finally:
        state.close()
    problems: dict[str, list[str]] = {item.case.name: [] for item in plans}
    run = PageRun(title, plans, human, bot_revisions, runs, records, problems)
    judge(mediawiki, run)
    return run


# -- judging ------------------------------------------------------------------------------------

@dataclass(frozen=True)
class Place:
    """A case's section as MediaWiki reads the page: where it starts and ends, and its heading's anchor."""

    start: int
    end: int
    anchor: str


def mediawiki_sections(mediawiki, revision: int) -> list[tuple[int, int, str]]:
    """The page's own sections (character offset, level, anchor) in revision *revision*, as MediaWiki lists
    them (MediaWiki 1.39 counts ``byteoffset`` in code points)."""
    parsed = mediawiki.api(action="parse", oldid=str(revision), prop="sections")["parse"]["sections"]
    return [(item["byteoffset"], int(item["level"]), item["anchor"]) for item in parsed
            if str(item["index"]).isdigit() and item["byteoffset"] is not None]


def places(text: str, plans: list[Plan], sections: list[tuple[int, int, str]]) -> list[Place | None]:
    """Each case's section in *text* by MediaWiki's reading: the section of level 1 or 2 holding its marker."""
    found: list[Place | None] = []
    bounds = [(offset, anchor) for offset, level, anchor in sections if level <= 2]
    for item in plans:
        marker = text.find(f"<!-- hostile case {item.case.name} -->")
        before = [(offset, anchor) for offset, anchor in bounds if offset < marker]
        after = [offset for offset, _ in bounds if offset > marker]
        found.append(Place(before[-1][0], after[0] if after else len(text), before[-1][1])
                     if marker >= 0 and before else None)
    return found


def extension_tags(mediawiki) -> frozenset[str]:
    listed = mediawiki.api(action="query", meta="siteinfo", siprop="extensiontags")["query"]["extensiontags"]
    return frozenset(tag.strip("<>").lower() for tag in listed) | {"includeonly"}


def judge(mediawiki, run: PageRun) -> None:
    """Fill ``run.problems`` with what broke, per case."""
    everyone = [item.case.name for item in run.plans]
    replies: dict[str, list[dict[str, Any]]] = {name: [] for name in everyone}
    others: Counter = Counter()  # replies to sections no case started, by anchor
    old = run.human["text"]
    sections = mediawiki_sections(mediawiki, run.human["id"])
    # The bot's own reading of the page must be MediaWiki's (where the two differ, MediaWiki's decides).
    ours = {(heading.start, heading.level) for heading in find_headings(old, extension_tags(mediawiki))}
    theirs = {(offset, level) for offset, level, _ in sections}
    starts = section_starts(old, run.plans)
    for offset, level in sorted(ours ^ theirs):
        index = _owner(starts, offset)
        for name in [everyone[index]] if index is not None else everyone:
            run.problems[name].append(f"the bot's rules and MediaWiki read the page differently at "
                                      f"{_excerpt(old, offset)!r} (MediaWiki: {(offset, level) in theirs})")
    before = parse_revision(mediawiki, run.human["id"])
    # Parsing the page after every bot revision is slow; it is needed only to say which reply changed it.
    changed = bool(run.bot_revisions) and bool(compare_pages(before, parse_revision(mediawiki,
                                                                                     run.bot_revisions[-1]["id"])))
    previous = run.human["id"]
    for revision in run.bot_revisions:
        new = revision["text"]
        if previous != run.human["id"]:
            sections = mediawiki_sections(mediawiki, previous)
        try:
            starts = section_starts(old, run.plans)
        except ValueError:
            starts = []
        where = places(old, run.plans, sections) if starts else []
        found = insertion(old, new) if revision["user"] == BOT_USER and starts else None
        owner = None
        if found is None:
            index = _owner(starts, _first_difference(old, new))
            for name in [everyone[index]] if index is not None else everyone:
                run.problems[name].append(
                    f"revision {revision['id']} by {revision['user']} is not one insertion: text changed near "
                    f"{_excerpt(old, _first_difference(old, new))!r} (an undo, or someone's text rewritten)")
        else:
            low, high, length = found
            owner = next((index for index, place in enumerate(where) for point in range(low, high + 1)
                          if _in_place(old, place, run.plans[index], point)), None)
            point = next((point for point in range(low, high + 1)
                          if owner is not None and _in_place(old, where[owner], run.plans[owner], point)), None)
            other = other_place(old, run.plans, sections, low, high) if point is None else None
            if other is not None:  # a reply to a section a third user's heading started, as MediaWiki reads it
                place, at = other
                owner = _owner(starts, at)
                others[place.anchor] += 1
                problems = placement_problems(mediawiki, run.title, new, at, new[at:at + length], place.anchor)
                if others[place.anchor] > 1:
                    problems.append(f"{others[place.anchor]} replies in the section {place.anchor!r}")
                for problem in problems:
                    for name in [everyone[owner]] if owner is not None else everyone:
                        run.problems[name].append(f"bot revision {revision['id']}: {problem}")
            elif point is None:
                index = _owner(starts, low)
                for name in [everyone[index]] if index is not None else everyone:
                    run.problems[name].append(f"bot revision {revision['id']} inserted text that is not a reply "
                                              f"after a case's question in its section as MediaWiki reads it, "
                                              f"before {_excerpt(old, low)!r}")
            else:
                text = new[point:point + length]
                replies[everyone[owner]].append({"revision": revision, "text": text})
                if problem := split_problem(old, run.plans[owner], point):
                    run.problems[everyone[owner]].append(f"bot revision {revision['id']}: {problem}")
                for problem in placement_problems(mediawiki, run.title, new, point, text, where[owner].anchor):
                    run.problems[everyone[owner]].append(f"bot revision {revision['id']}: {problem}")
        for problem in summary_problems(revision):
            for name in [everyone[owner]] if owner is not None else everyone:
                run.problems[name].append(f"bot revision {revision['id']}: {problem}")
        if changed:
            after = parse_revision(mediawiki, revision["id"])
            for problem in compare_pages(before, after):
                for name in [everyone[owner]] if owner is not None else everyone:
                    run.problems[name].append(f"bot revision {revision['id']}: {problem}")
            before = after
        old = new
        previous = revision["id"]
    for item in run.plans:
        name = item.case.name
        found = replies[name]
        record = next((value for heading, value in run.state.items()
                       if re.match(re.escape(item.case.marker) + r"(?![a-z0-9-])", heading)), None)
        if len(found) > 1:
            run.problems[name].append(f"{len(found)} replies in the section (revisions "
                                      f"{[reply['revision']['id'] for reply in found]})")
        if not found:
            if item.case.expect == "reply":
                run.problems[name].append(f"no reply (state: {record[:2] if record else None})")
            # An opt-out in the page's lead keeps the bot out of every section: there the page says why.
            elif (record[0] == "answered" or not record[1]) if record else not item.case.lead:
                run.problems[name].append(f"no reply and no recorded reason (state: {record[:2] if record else None})")
        elif item.case.expect == "silent":
            run.problems[name].append("the bot replied where it must stay silent")
        trace = record[2] if record else None
        final = trace.get("final_sparql") if trace else None
        probe = max(re.findall(r"[A-Za-z0-9]{3,}", item.case.payload), key=len, default=None)
        if trace and probe and item.case.entry in MODEL_SIDE and probe not in json.dumps(trace, ensure_ascii=False):
            run.problems[name].append(f"the payload never reached the agent's record ({probe!r} is not in it): "
                                      "the case tests nothing")
        if item.case.entry == "header-label":  # the bot reads it, not the agent: it must head the preview
            shown = max(re.findall(r"[A-Za-z0-9]{3,}", item.case.payload[:HEADER_CHARS - 1]), key=len, default=None)
            if found and shown and not any(shown in html.unescape(reply["text"]) for reply in found):
                run.problems[name].append(f"the label never headed the preview ({shown!r} is not in the reply): "
                                          "the case tests nothing")
        for reply in found:
            run.problems[name].extend(judge_reply(mediawiki, run.title, item, reply, final))


def other_place(old: str, plans: list[Plan], sections: list[tuple[int, int, str]], low: int,
                high: int) -> tuple[Place, int] | None:
    """A section of *old* as MediaWiki reads it that holds no case (a heading someone added under a case's
    question), with the point between *low* and *high* where an insertion is a reply in it: after a
    signature there, on a line of its own."""
    bounds = [(offset, anchor) for offset, level, anchor in sections if level <= 2]
    markers = [old.find(f"<!-- hostile case {item.case.name} -->") for item in plans]
    for number, (start, anchor) in enumerate(bounds):
        end = bounds[number + 1][0] if number + 1 < len(bounds) else len(old)
        if any(start <= marker < end for marker in markers):
            continue
        for point in range(max(low, start + 1), min(high, end) + 1):
            if "(UTC)" in old[start:point] and (point == len(old) or old[point] == "\n"):
                return Place(start, end, anchor), point
    return None


def _first_difference(old: str, new: str) -> int:
    index = 0
    while index < min(len(old), len(new)) and old[index] == new[index]:
        index += 1
    return index


def split_problem(old: str, item: Plan, point: int) -> str | None:
    """How a reply inserted at *point* splits the comment the case says it must come after, if it does."""
    if not item.case.reply_after:
        return None
    after = item.case.reply_after.replace("{marker}", item.case.marker).replace("{signature}", item.signature)
    end = old.find(after)
    if end < 0:
        return f"the text the reply must come after is not on the page: {after!r}"
    if point < end + len(after):
        return f"the reply splits someone's comment: it goes before {_excerpt(old, point)!r}, not after {after!r}"
    return None


def _in_place(old: str, place: Place | None, item: Plan, point: int) -> bool:
    """Whether text inserted at *point* is a reply in the case's section as MediaWiki reads the page: after
    the asker's signed question, on a line of its own, before the section's next heading."""
    if place is None or not place.start < point <= place.end:
        return False
    question = old.find(item.signature, place.start, place.end)
    if question < 0 or point < question + len(item.signature):
        return False
    return point == len(old) or old[point:point + 1] == "\n"


#: Styles and classes that keep an element from a reader's eyes, as a browser applies them.
HIDDEN_STYLE = re.compile(r"display\s*:\s*none|visibility\s*:\s*hidden|font-size\s*:\s*0|opacity\s*:\s*0"
                          r"|position\s*:\s*(?:absolute|fixed)|height\s*:\s*[0-2](?:\.\d+)?px|margin[a-z-]*\s*:[^;]*-\d"
                          r"|color\s*:\s*transparent|font-size\s*:\s*1%|top\s*:\s*-\d|letter-spacing\s*:\s*-",
                          re.IGNORECASE)
HIDDEN_CLASSES = {"mw-collapsed", "hidden"}


class _Placement(HTMLParser):
    """Where a word lands in a rendered page: hidden or not, and under which heading a reader sees (a hidden
    heading heads nothing: what follows it reads as under the heading before)."""

    VOID = frozenset({"br", "img", "hr", "input", "meta", "link", "wbr", "area", "base", "col", "source"})

    def __init__(self, word: str) -> None:
        super().__init__(convert_charrefs=True)
        self.word = word
        self.stack: list[tuple[str, bool]] = []
        self.heading = ""
        self.seen: list[tuple[bool, str]] = []

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        values = {name: value or "" for name, value in attrs}
        if tag not in self.VOID:
            hidden = bool(HIDDEN_STYLE.search(values.get("style", ""))) or bool(
                HIDDEN_CLASSES & set(values.get("class", "").split()))
            self.stack.append((tag, hidden))
        if any(hidden for _, hidden in self.stack):
            return
        if tag in ("h1", "h2"):
            self.heading = values.get("id", "")
        elif tag == "span" and "mw-headline" in values.get("class", "").split() and any(
                name in ("h1", "h2") for name, _ in self.stack):
            self.heading = values.get("id", "")

    def handle_endtag(self, tag: str) -> None:
        if tag not in self.VOID and any(name == tag for name, _ in self.stack):
            while self.stack.pop()[0] != tag:
                pass

    def handle_data(self, data: str) -> None:
        for _ in range(data.count(self.word)):
            self.seen.append((any(hidden for _, hidden in self.stack), self.heading))


def placement_problems(mediawiki, title: str, page: str, point: int, reply: str, anchor: str) -> list[str]:
    """How the reply inserted at *point* of *page* fails to show, to a reader, under the heading *anchor*."""
    stamp = list(re.finditer(r"\(UTC\)", reply))
    if not stamp:
        return ["the reply has no signature time to find it by"]
    word = "HostileCorpusPlacement"
    marked = page[:point + stamp[-1].end()] + word + page[point + stamp[-1].end():]
    html = api_post(mediawiki.api_url, action="parse", title=title, text=marked, contentmodel="wikitext",
                    prop="text")["parse"]["text"]
    reader = _Placement(word)
    reader.feed(html)
    reader.close()
    if len(reader.seen) != 1:
        return [f"the reply's signature renders {len(reader.seen)} times (once expected)"]
    hidden, heading = reader.seen[0]
    problems = ["the reply is hidden from readers"] if hidden else []
    if heading != anchor:
        problems.append(f"the reply shows under the heading {heading!r}, not the asker's {anchor!r}")
    return problems


def summary_problems(revision: dict[str, Any]) -> list[str]:
    """What a bot revision's summary shows beyond a link to its section: other links, controls."""
    if revision["user"] != BOT_USER:
        return []
    problems = []
    links = re.findall(r"<a [^>]*href=\"([^\"]*)\"", revision["parsed comment"])
    if len(links) != 1 or "#" not in links[0]:
        problems.append(f"the edit summary links {links} (its section only expected): {revision['comment']!r}")
    if any(unicodedata.category(char) in ("Cc", "Cf") for char in revision["comment"]):
        problems.append(f"the edit summary holds control or format characters: {revision['comment']!r}")
    return problems


def _owner(starts: list[int], point: int) -> int | None:
    """The case whose section holds *point* (an insertion point belongs to the section it ends)."""
    owner = None
    for index, start in enumerate(starts):
        if start < point:
            owner = index
    return owner


def _excerpt(text: str, point: int) -> str:
    return text[max(0, point - 40):point + 40]


def compare_pages(before: Parsed, after: Parsed) -> list[str]:
    """What a reader would see change on the page beyond what a reply may add."""
    problems = []
    if after.sections != before.sections:
        problems.append(f"sections changed: {_list_change(before.sections, after.sections)}")
    if after.categories != before.categories:
        problems.append(f"categories changed: {_list_change(before.categories, after.categories)}")
    if extra := after.templates - before.templates - ALLOWED_TEMPLATES:
        problems.append(f"new templates {sorted(extra)}")
    if extra := {link for link in after.links - before.links if not link.startswith(ALLOWED_LINK_PREFIXES)}:
        problems.append(f"new links {sorted(extra)}")
    if extra := [link for link in after.external if link not in before.external and not link.startswith(QUERY_SERVICE)]:
        problems.append(f"new external links {extra}")
    if after.images != before.images:
        problems.append(f"images changed: {sorted(after.images ^ before.images)}")
    if after.properties != before.properties:
        problems.append(f"page properties changed: {before.properties} -> {after.properties}")
    if after.interwiki != before.interwiki:
        problems.append(f"interwiki links changed: {sorted(after.interwiki ^ before.interwiki)}")
    for label, pattern in (("<script>", re.compile(r"<script", re.IGNORECASE)), ("positioned elements", FIXED_STYLE),
                           ("heading elements", HEADING_TAG)):
        if len(pattern.findall(after.html)) > len(pattern.findall(before.html)):
            problems.append(f"more {label} in the HTML ({len(pattern.findall(before.html))} -> "
                            f"{len(pattern.findall(after.html))})")
    shown_before, shown_after = visible(before.html), visible(after.html)
    markers_before = Counter(re.findall(r"HC-[a-z0-9-]+", " ".join(shown_before.inside + shown_before.outside)))
    markers_after = Counter(re.findall(r"HC-[a-z0-9-]+", " ".join(shown_after.inside + shown_after.outside)))
    hidden = sorted(marker for marker, count in markers_before.items() if markers_after[marker] < count)
    if hidden:
        problems.append(f"text that was visible is gone: {hidden[:5]}")
    return problems


def _list_change(before: list, after: list) -> str:
    gone = [entry for entry in before if entry not in after]
    new = [entry for entry in after if entry not in before]
    return f"gone {gone[:5]}, new {new[:5]}" if gone or new else "reordered"


def judge_reply(mediawiki, title: str, item: Plan, reply: dict[str, Any], final: str | None) -> list[str]:
    """The saved reply alone: one expanded signature, a collapsed trace, links that run the agent's queries.

    *final* is the agent's final query as its trace records it: the reply must link it exactly.
    """
    problems = []
    text = reply["text"]
    signatures = len(BOT_SIGNATURE.findall(text))
    if signatures != 1 or text.count(f"[[User:{BOT_USER}|") != 1:
        problems.append(f"the saved reply holds {signatures} expanded signatures of the bot and "
                        f"{text.count(f'[[User:{BOT_USER}|')} links to its user page (one of each expected); "
                        f"its end: {text[-160:]!r}")
    parsed = parse_text(mediawiki, title, text)
    if parsed.sections:
        problems.append(f"the reply makes headings {parsed.sections[:3]}")
    if parsed.categories:
        problems.append(f"the reply adds categories {parsed.categories}")
    if extra := parsed.templates - ALLOWED_TEMPLATES:
        problems.append(f"the reply transcludes {sorted(extra)}")
    if extra := {link for link in parsed.links if not link.startswith(ALLOWED_LINK_PREFIXES) and link != ASKER}:
        problems.append(f"the reply links to {sorted(extra)}")
    if parsed.images or parsed.interwiki or parsed.properties not in ("[]", "{}"):
        problems.append(f"the reply adds images {parsed.images}, interwiki {parsed.interwiki} or page "
                        f"properties {parsed.properties}")
    decoded = []
    for link in parsed.external:
        if not link.startswith(QUERY_SERVICE):
            problems.append(f"the reply links outside the query service: {link[:120]}")
            continue
        split = urllib.parse.urlsplit(link)
        query = urllib.parse.unquote(split.fragment) if split.fragment else \
            urllib.parse.parse_qs(split.query).get("query", [""])[0]
        decoded.append(query)
        if query not in item.queries | {final}:
            problems.append(f"a Try-it link runs a query the agent did not write: {query[:300]!r}")
    if final is not None and len(final) <= REPLY_MAX_CHARS and final not in decoded:
        problems.append(f"no Try-it link runs the final query {final[:200]!r} (links run {decoded!r:.400})")
    for label, pattern in (("<script>", re.compile(r"<script", re.IGNORECASE)), ("a positioned element", FIXED_STYLE),
                           ("a heading element", HEADING_TAG)):
        if pattern.search(parsed.html):
            problems.append(f"the reply's HTML holds {label}")
    shown = visible(parsed.html)
    outside = " ".join(shown.outside)
    # The bot's signature is expanded when its edit is checked, which can be the day before its revision's
    # timestamp when the check and the save straddle midnight: the saved signature says which day to look for.
    signed = BOT_SIGNATURE.search(text)
    date = signed.group("date") if signed else \
        time.strftime("%-d %B %Y", time.strptime(reply["revision"]["timestamp"], "%Y-%m-%dT%H:%M:%SZ"))
    stamps = len(re.findall(rf"\d\d:\d\d, {date} \(UTC\)", outside + " ".join(shown.inside)))
    if stamps != 1:
        problems.append(f"the rendered reply shows {stamps} signature times of its day (one expected)")
    for number in range(1, len(item.steps) + 1):
        if step_marker(item.case, number) + " " in outside + " ":
            problems.append(f"step {number} of the trace renders outside the collapsed block")
    return problems


# -- the tests ------------------------------------------------------------------------------------

class Corpus:
    """Runs each page of the corpus when a test first asks for it."""

    def __init__(self, rig: BotRig, plans: dict[str, Plan]) -> None:
        self.rig = rig
        self.plans = plans
        self.runs: dict[str, PageRun | BaseException] = {}

    def page(self, name: str) -> PageRun:
        if name not in self.runs:
            try:
                self.runs[name] = run_page(self.rig, name, [self.plans[case.name] for case in PAGES[name]])
            except Exception as error:  # every test of the page fails with it; the page is not run again
                self.runs[name] = error
        run = self.runs[name]
        if isinstance(run, BaseException):
            raise run
        return run


@pytest.fixture(scope="module")
def corpus(mediawiki, tmp_path_factory):
    workdir = tmp_path_factory.mktemp("hostile")
    (workdir / "bot.ini").write_text(f"[bot]\nmax_sections_per_pass = {CASES_PER_PAGE + 5}\n")
    plans = {case.name: plan(case, number) for number, case in enumerate(CASES)}
    wikidata = FakeWikidata()
    wikidata.add(*euler_entities())
    for item in plans.values():
        wikidata.add(*item.entities)
    answers = {query_key(query): reply for item in plans.values() for query, reply in item.answers.items()}
    default = answers[query_key(FINAL_QUERY)]
    wikidata.sparql = lambda query: answers.get(query_key(query), default)
    llm = FakeLLMServer(script=Script(plans))
    mediawiki.edit_as_human(f"User:{BOT_USER}/Stop", "", "clear the stop page")
    mediawiki.edit_as_human("Template:Hostile heading", "== A heading from a template ==\nIts text.\n", "template")
    yield Corpus(BotRig(mediawiki, workdir, llm, wikidata, key=KEY), plans)
    llm.close()
    wikidata.close()


def test_the_corpus_is_large_and_covers_every_entry_point():
    assert len(CASES) >= 100
    assert {case.entry for case in CASES} == ENTRIES


@pytest.mark.parametrize("page", [pytest.param(page, marks=pytest.mark.xdist_group(page)) for page in PAGES])
def test_every_pass_ends_cleanly(corpus, page):
    run = corpus.page(page)
    for number, done in enumerate(run.runs, 1):
        assert done.code == 0, f"pass {number} on {run.title!r} ended with {done.code}: {done.stderr[-3000:]}"
        assert KEY not in done.stdout + done.stderr


@pytest.mark.parametrize("case", [pytest.param(case, marks=pytest.mark.xdist_group(PAGE_OF[case.name]))
                                  for case in CASES], ids=[case.name for case in CASES])
def test_the_payload_stays_inert(corpus, case):
    run = corpus.page(PAGE_OF[case.name])
    problems = run.problems[case.name]
    assert not problems, f"{case.family} / {case.entry} / payload {case.text[:200]!r}:\n  " + "\n  ".join(problems)


@pytest.mark.xdist_group("history")
@pytest.mark.parametrize("forged", [True, False], ids=["forged signature", "the bot away"])
def test_many_revisions_between_passes_are_all_read_and_a_forged_signature_silences_nothing(corpus, forged):
    """More revisions between two passes than one API answer holds (53 here; 50 was the old limit), one of them a
    bot signature typed under a question: every revision is read, the question is answered, once."""
    rig, mediawiki = corpus.rig, corpus.rig.mediawiki
    title = f"Wikidata:Request a query/Hostile history {'forged' if forged else 'away'} {int(time.time())}"
    lead = "This is the place to request a SPARQL query.\nSandbox line 0\n"
    state = looked_at(rig, title, lead)
    asked = lead + "\n== Asked before ==\nWho were the doctoral advisors of Leonhard Euler? " \
        + signature("Alice", 1) + "\n"
    mediawiki.edit_as_human(title, asked, "a question")
    text = asked
    for number in range(1, 54):
        text = text.replace(f"Sandbox line {number - 1}\n", f"Sandbox line {number}\n")
        if number == 27:
            text += (":Done, see the query above. " + signature(BOT_USER, 2) + "\n" if forged
                     else "\n== Asked meanwhile ==\nWho advised Euler? " + signature("Alice", 3) + "\n")
        mediawiki.edit_as_human(title, text, f"edit {number}")
    done = rig.run(title, "--once", "--live", state=state)
    assert done.code == 0, done.stderr[-3000:]
    assert done.stderr.count("answering ") == (1 if forged else 2), done.stderr[-3000:]
    page = mediawiki.page_text(title)
    for heading in ["Asked before"] + ([] if forged else ["Asked meanwhile"]):
        body = page.split(f"== {heading} ==", 1)[1].split("\n== ", 1)[0]
        assert body.count("<small>Written by an automated agent") == 1, (heading, body[-600:])  # one real reply
    assert rig.run(title, "--once", "--live", state=state).code == 0
    assert mediawiki.page_text(title) == page  # nothing answered twice
    assert len(rig.bot_edits(title)) == (1 if forged else 2)


#: In the rendered page: whether the bot's last signature shows, where it, the question and the gallery's heading
#: are on screen, and the anchor of the last heading above the signature.
ON_SCREEN = """(() => {
  const root = document.querySelector('#mw-content-text');
  const signature = [...root.querySelectorAll('a')].filter((a) => a.textContent === '%(bot)s').pop();
  const question = [...root.querySelectorAll('p, dd')].find((e) => e.textContent.includes('%(question)s'));
  const headings = [...root.querySelectorAll('h1, h2')].filter((h) =>
    h.compareDocumentPosition(signature) & Node.DOCUMENT_POSITION_FOLLOWING);
  const above = headings.pop();
  const anchor = above && (above.id || (above.querySelector('.mw-headline') || {}).id);
  return {visible: signature.checkVisibility({checkOpacity: true, checkVisibilityCSS: true})
                   && signature.getBoundingClientRect().height > 0,
          reply: signature.getBoundingClientRect().top, question: question.getBoundingClientRect().top,
          gallery: document.querySelector('#Gallery_heading').getBoundingClientRect().top, headingAbove: anchor};
})()"""

#: A third user of the forum, who writes under other people's questions.
STRANGER = "Bob"


@pytest.fixture(scope="module")
def stranger(mediawiki) -> HumanEditor:
    """Bob's account, logged in: not the asker, not the bot.  The account made with the wiki, never made again
    here: setting Bob's password anew would void every BotPassword of his another test logs in with."""
    return mediawiki.editor(STRANGER)


@pytest.mark.xdist_group("stranger")
def test_a_strangers_block_under_a_question_neither_silences_it_nor_earns_a_second_reply(corpus, stranger,
                                                                                        browser):
    """Alice asks, and writes again below her question; then Bob saves a gallery whose caption renders a heading
    MediaWiki lists no section for, and a signed line.  The reply goes right after Alice's question, where a reader
    of her section sees it (in MediaWiki's parse and in headless Chromium), once: her later line, older than the
    reply though below it, is no follow-up."""
    rig, mediawiki = corpus.rig, corpus.rig.mediawiki
    title = f"Wikidata:Request a query/Hostile stranger {int(time.time())}"
    lead = "This is the place to request a SPARQL query.\n"
    state = looked_at(rig, title, lead)
    question = "\n== Euler's advisors ==\nWho were the doctoral advisors of Leonhard Euler? " + signature("Alice", 1)
    mediawiki.edit_as_human(title, lead + question, "a question")
    again = "\n:Still waiting for an answer. " + signature("Alice", 2)
    mediawiki.edit_as_human(title, lead + question + again, "the asker again")
    block = ("\n<gallery>\nFile:X.png|== Gallery heading ==\n</gallery>\n:Same question here. "
             + signature(STRANGER, 3))
    stranger.edit(title, lead + question + again + block, "a stranger's block")
    old = mediawiki.page_text(title)
    done = rig.run(title, "--once", "--live", state=state)
    assert done.code == 0, done.stderr[-3000:]
    new = mediawiki.page_text(title)
    found, point = insertion(old, new), old.index(again)  # the end of Alice's question
    assert found is not None and found[0] <= point <= found[1], (done.stderr[-3000:], new)
    length = found[2]
    sections = mediawiki_sections(mediawiki, rig.bot_edits(title)[0]["revid"])
    anchor = next(anchor for _, level, anchor in sections if level == 2)
    assert placement_problems(mediawiki, title, new, point, new[point:point + length], anchor) == []
    assert new[point + length:] == old[point:]  # her line and Bob's block as they were, below the reply
    browser.open(mediawiki.api_url.replace("/api.php", f"/index.php?title={urllib.parse.quote(title)}"),
                 "document.querySelector('#Gallery_heading')")
    seen = browser.evaluate(ON_SCREEN % {"bot": BOT_USER, "question": "doctoral advisors of Leonhard Euler"})
    assert seen["visible"] and seen["question"] < seen["reply"] < seen["gallery"], seen
    assert seen["headingAbove"] == anchor, seen
    assert rig.run(title, "--once", "--live", state=state).code == 0
    assert mediawiki.page_text(title) == new  # her older line is not answered again
    assert len(rig.bot_edits(title)) == 1


@pytest.mark.xdist_group("stranger")
@pytest.mark.parametrize(("caption", "heading"), [
    ("== Gallery heading ==", "Gallery_heading"),
    ('<h2 style="display:none">Gallery heading</h2>', "Euler's_advisors"),
], ids=["a heading", "a hidden heading"])
def test_a_follow_up_below_a_strangers_heading_is_answered_beside_it(corpus, stranger, caption, heading):
    """After the bot's reply, Bob saves a gallery whose caption renders a heading (shown or hidden), and Alice asks
    again below it: the answer shows right after her follow-up, under the same heading, visible, once."""
    rig, mediawiki = corpus.rig, corpus.rig.mediawiki
    title = f"Wikidata:Request a query/Hostile stranger follow-up {len(caption)} {int(time.time())}"
    lead = "This is the place to request a SPARQL query.\n"
    state = looked_at(rig, title, lead)
    mediawiki.edit_as_human(title, lead + "\n== Euler's advisors ==\nWho were the doctoral advisors of Leonhard "
                            "Euler? " + signature("Alice", 1), "a question")
    assert rig.run(title, "--once", "--live", state=state).code == 0
    answered = mediawiki.page_text(title)
    assert len(rig.bot_edits(title)) == 1
    block = f"\n<gallery>\nFile:X.png|{caption}\n</gallery>\n:Nice. " + signature(STRANGER, 2)
    stranger.edit(title, answered + block, "a stranger's block")
    followup = "\n::And who advised Johann Bernoulli? " + signature("Alice", 3)
    mediawiki.edit_as_human(title, answered + block + followup, "a follow-up")
    old = mediawiki.page_text(title)
    done = rig.run(title, "--once", "--live", state=state)
    assert done.code == 0, done.stderr[-3000:]
    new = mediawiki.page_text(title)
    assert len(rig.bot_edits(title)) == 2, done.stderr[-3000:]
    found, asked = insertion(old, new), old.index(followup) + len(followup)
    assert found is not None and found[0] <= asked <= found[1], (done.stderr[-3000:], new)
    seen = shown_under(mediawiki, title, new, asked, asked + found[2])
    assert seen["answered"] == seen["reply"] == [(False, heading)], seen  # the heading a reader sees above both
    assert rig.run(title, "--once", "--live", state=state).code == 0
    assert mediawiki.page_text(title) == new


def shown_under(mediawiki, title: str, page: str, answered: int, reply_end: int) -> dict[str, list]:
    """Where the text ending at *answered* and the reply ending at *reply_end* (its signature's time the last of
    it) render in *page*: whether each is hidden, and the anchor of the heading above it."""
    stamp = answered + list(re.finditer(r"\(UTC\)", page[answered:reply_end]))[-1].end()
    html = api_post(mediawiki.api_url, action="parse", title=title, contentmodel="wikitext", prop="text",
                    text=page[:answered] + "AnsweredEnd" + page[answered:stamp] + "ReplyEnd" + page[stamp:])
    seen = {}
    for name, word in (("answered", "AnsweredEnd"), ("reply", "ReplyEnd")):
        reader = _Placement(word)
        reader.feed(html["parse"]["text"])
        reader.close()
        seen[name] = reader.seen
    return seen


@pytest.mark.xdist_group("stranger")
def test_a_heading_a_stranger_renders_inside_the_question_does_not_silence_it(corpus, stranger):
    """Bob saves a gallery whose caption renders a heading between Alice's question and her signature: the
    question's end shows under that heading, and so does the answer, right below it and visible, once."""
    rig, mediawiki = corpus.rig, corpus.rig.mediawiki
    title = f"Wikidata:Request a query/Hostile stranger in the question {int(time.time())}"
    lead = "This is the place to request a SPARQL query.\n"
    state = looked_at(rig, title, lead)
    asked = "\n== Euler's advisors ==\nWho were the doctoral advisors of Leonhard Euler?\n"
    signed = "I mean his teachers at Basel. " + signature("Alice", 1)
    mediawiki.edit_as_human(title, lead + asked + signed, "a question")
    block = "<gallery>\nFile:X.png|== Gallery heading ==\n</gallery>\n"
    stranger.edit(title, lead + asked + block + signed, "a stranger's block")
    old = mediawiki.page_text(title)
    done = rig.run(title, "--once", "--live", state=state)
    assert done.code == 0, done.stderr[-3000:]
    new = mediawiki.page_text(title)
    assert len(rig.bot_edits(title)) == 1, done.stderr[-3000:]
    found = insertion(old, new)
    assert found is not None and found[0] <= len(old) <= found[1], (done.stderr[-3000:], new)
    seen = shown_under(mediawiki, title, new, len(old), len(old) + found[2])
    assert seen["answered"] == seen["reply"] == [(False, "Gallery_heading")], seen
    assert rig.run(title, "--once", "--live", state=state).code == 0
    assert mediawiki.page_text(title) == new
