"""Read "Wikidata:Request a query": sections, who signed them, and what the asker gave.

A section's identity is its heading plus the time of its first signature, so
it survives sections added above it, edits to its text and replies.  The page
text itself says whether the bot has replied (its signature in the section),
so a lost local state can never lead to a second reply.

Parsing goes through mwparserfromhell, whose tree reproduces the input
exactly; offsets into the page text are sums of node lengths, and
:func:`insert_reply` changes nothing but the insertion point.
"""

from __future__ import annotations

import difflib
import re
from dataclasses import dataclass, field
from datetime import datetime, timezone
from urllib.parse import unquote

import mwparserfromhell

MONTHS = ["January", "February", "March", "April", "May", "June", "July", "August", "September", "October",
          "November", "December"]
_TIMESTAMP = re.compile(r"(\d{1,2}):(\d{2}), (\d{1,2}) (" + "|".join(MONTHS) + r") (\d{4}) \(UTC\)")
_USER_LINK = re.compile(
    r"\[\[\s*(?::?(?:User|User talk|Special:Contributions)\s*[:/]\s*)([^|\]/#]+)", re.IGNORECASE)
_HEADING = re.compile(r"^==(?!=)\s*(.*?)\s*(?<!=)==\s*$")
_ENTITY_TEMPLATES = {"q": "Q", "p": "P", "qid": "Q", "pid": "P"}
_ENTITY_LINK = re.compile(r"\[\[\s*(?:d:|wikidata:)?(?:Property:)?([QP][1-9][0-9]*)\s*[|\]]", re.IGNORECASE)
_QUERY_URL = re.compile(r"https?://query\.wikidata\.org/(?:embed\.html)?(?:#|\?query=)([^\s\]|]+)")
_SPARQL_WORDS = re.compile(r"\b(SELECT|ASK|CONSTRUCT|DESCRIBE)\b", re.IGNORECASE)


def normalize_user(name: str) -> str:
    """MediaWiki's form of a user name: spaces for underscores, first letter upper case."""
    name = " ".join(name.replace("_", " ").split())
    return name[:1].upper() + name[1:]


@dataclass(frozen=True)
class Signature:
    user: str
    timestamp: datetime


@dataclass
class Section:
    heading: str
    #: Character offsets of the section (heading included) in the page text.
    start: int
    end: int
    text: str
    signatures: list[Signature] = field(default_factory=list)

    @property
    def author(self) -> str | None:
        return self.signatures[0].user if self.signatures else None

    @property
    def created(self) -> datetime | None:
        return self.signatures[0].timestamp if self.signatures else None

    @property
    def key(self) -> str:
        """Stable across edits: the heading and the first signature's time."""
        created = self.created.strftime("%Y-%m-%dT%H:%MZ") if self.created else "unsigned"
        return f"{self.heading} @ {created}"

    @property
    def body(self) -> str:
        return self.text.split("\n", 1)[1] if "\n" in self.text else ""

    def replied_by(self, username: str) -> bool:
        wanted = normalize_user(username)
        return any(signature.user == wanted for signature in self.signatures)

    def opted_out(self, username: str) -> bool:
        return denies(self.text, username)


def denies(text: str, username: str) -> bool:
    """Whether ``{{nobots}}`` or ``{{bots|allow=...|deny=...}}`` in *text* keeps *username* out."""
    wanted = normalize_user(username)
    for template in mwparserfromhell.parse(text).filter_templates():
        name = str(template.name).strip().lower()
        if name == "nobots":
            return True
        if name != "bots":
            continue
        for parameter, deny in (("deny", True), ("allow", False)):
            if not template.has(parameter):
                continue
            names = {normalize_user(part) for part in str(template.get(parameter).value).split(",") if part.strip()}
            if deny and ({"All", wanted} & names):
                return True
            if not deny and "All" not in names and wanted not in names:
                return True
    return False


def page_opted_out(page_text: str, username: str) -> bool:
    """The page-level exclusion: templates outside any level-2 section (above the first heading)."""
    sections = parse_sections(page_text)
    lead = page_text[: sections[0].start] if sections else page_text
    return denies(lead, username)


def signatures_in(text: str) -> list[Signature]:
    found = []
    for line in text.splitlines():
        for stamp in _TIMESTAMP.finditer(line):
            users = _USER_LINK.findall(line[: stamp.start()])
            if not users:
                continue
            hour, minute, day, month, year = stamp.groups()
            moment = datetime(int(year), MONTHS.index(month) + 1, int(day), int(hour), int(minute),
                              tzinfo=timezone.utc)
            found.append(Signature(normalize_user(users[-1]), moment))
    return found


def parse_sections(page_text: str) -> list[Section]:
    """The level-2 sections of *page_text*, in order."""
    code = mwparserfromhell.parse(page_text)
    starts: list[tuple[int, str]] = []
    offset = 0
    for node in code.nodes:
        text = str(node)
        if isinstance(node, mwparserfromhell.nodes.Heading) and node.level == 2:
            starts.append((offset, node.title.strip_code().strip()))
        offset += len(text)
    sections = []
    for index, (start, heading) in enumerate(starts):
        end = starts[index + 1][0] if index + 1 < len(starts) else len(page_text)
        text = page_text[start:end]
        sections.append(Section(heading=heading, start=start, end=end, text=text, signatures=signatures_in(text)))
    return sections


def find_section(sections: list[Section], key: str) -> Section | None:
    return next((section for section in sections if section.key == key), None)


def close_matches(sections: list[Section], title: str) -> list[str]:
    return difflib.get_close_matches(title, [section.heading for section in sections], n=5, cutoff=0.4)


@dataclass
class Request:
    """What the asker gave: the question, their own queries, the entities they mention, the thread."""

    heading: str
    question: str
    queries: list[str] = field(default_factory=list)
    entities: list[str] = field(default_factory=list)
    thread: str = ""

    def to_context(self):
        from agent import AgentContext

        return AgentContext(draft_queries=list(self.queries), entities=list(self.entities), thread=self.thread)


def _template_query(template: mwparserfromhell.nodes.Template) -> str | None:
    name = str(template.name).strip().lower()
    if not name.startswith("sparql"):
        return None
    parameter = "query" if template.has("query") else "1" if template.has("1") else None
    if parameter is None:
        return None
    value = str(template.get(parameter).value)
    return value.replace("{{!}}", "|").replace("{{=}}", "=").strip()


def _queries(code: mwparserfromhell.wikicode.Wikicode) -> list[str]:
    found: list[str] = []
    for node in code.ifilter(recursive=True):
        if isinstance(node, mwparserfromhell.nodes.Template):
            query = _template_query(node)
        elif isinstance(node, mwparserfromhell.nodes.Tag) and str(node.tag).lower() in ("syntaxhighlight",
                                                                                        "source", "pre"):
            content = str(node.contents).strip() if node.contents is not None else ""
            language = str(node.get("lang").value).strip().lower() if node.has("lang") else ""
            query = content if language == "sparql" or _SPARQL_WORDS.search(content) else None
        else:
            query = None
        if query:
            found.append(query)
    for match in _QUERY_URL.finditer(str(code)):
        found.append(unquote(match.group(1)).strip())
    return list(dict.fromkeys(found))


def _entities(code: mwparserfromhell.wikicode.Wikicode) -> list[str]:
    found: list[str] = []
    for template in code.ifilter_templates(recursive=True):
        prefix = _ENTITY_TEMPLATES.get(str(template.name).strip().lower())
        if prefix and template.has("1"):
            value = str(template.get("1").value).strip().upper()
            found.append(value if value[:1] in "QP" else prefix + value)
    found += [match.upper() for match in _ENTITY_LINK.findall(str(code))]
    return list(dict.fromkeys(found))


def extract_request(section: Section) -> Request:
    """The question (its first signed paragraph, without markup, queries or signatures), queries, entities."""
    body = section.body
    first_signature = None
    for line_end in re.finditer(r"\n|$", body):
        if _TIMESTAMP.search(body[: line_end.start()]):
            first_signature = line_end.start()
            break
    opening = body[:first_signature] if first_signature is not None else body
    if first_signature is not None:
        links = list(_USER_LINK.finditer(opening))
        if links:
            opening = opening[: links[-1].start()].rstrip(" -—–")
    opening = _QUERY_URL.sub(" ", opening)
    code = mwparserfromhell.parse(opening)
    for node in code.filter(recursive=False):
        if isinstance(node, mwparserfromhell.nodes.Tag) and str(node.tag).lower() in ("syntaxhighlight",
                                                                                        "source", "pre"):
            code.remove(node)
        elif isinstance(node, mwparserfromhell.nodes.Template) and _template_query(node) is not None:
            code.remove(node)
    text = code.strip_code(normalize=True, collapse=True)
    question = " ".join(text.split())
    whole = mwparserfromhell.parse(body)
    rest = body[first_signature:] if first_signature is not None else ""
    thread = " ".join(mwparserfromhell.parse(rest).strip_code().split())
    return Request(heading=section.heading, question=question or section.heading, queries=_queries(whole),
                   entities=_entities(whole), thread=thread[:4000])


def insert_reply(page_text: str, section: Section, reply: str) -> str:
    """*page_text* with *reply* after the last non-blank line of *section*; nothing else changes."""
    content = page_text[section.start:section.end]
    point = section.start + len(content.rstrip())
    return page_text[:point] + "\n" + reply.rstrip("\n") + page_text[point:]
