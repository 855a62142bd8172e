"""Knowledge-graph profiles: what the agent needs to know about a graph, read from a TOML file.

A profile says where the graph is (a SPARQL endpoint and its dialect, or a
local store), the prefixes its queries use, how a thing is named (one label
predicate or several, in the languages it lists, in order) and described, what the ID of an item
or a property looks like and how people write it, how an entry is shown
(Wikibase statements, or plain outgoing triples with value nodes and fact
nodes carrying qualifiers), and the graph-specific lines of the policy
prompt.  Wikidata, KQA Pro and CK25 are three profiles of one agent with the
same five actions; adding a graph is adding a profile file (a misspelt key or
a value of the wrong type is a one-line error naming it):

>>> from agent.graph import load_graph
>>> load_graph("kqapro").names.label
'pred:name'
>>> load_graph("wikidata").check_item("wd:q42")
('Q42', None)
>>> load_graph("ck25").check_item("<http://ld.company.org/prod-instances/empl-Karen.Brant%40company.org>")
('prodi:empl-Karen.Brant%40company.org', None)

The profiles shipped with the agent live in ``agent/profiles/`` (package
data); any other is named by its path.  Every IRI in a profile is written in
full, never as a prefixed name.
"""

from __future__ import annotations

import re
import tomllib
from dataclasses import dataclass, field
from enum import Enum
from functools import lru_cache
from importlib import resources
from pathlib import Path
from typing import Any

#: The entry models a profile can name.
ENTRY_MODELS = ("wikibase", "triples")
#: How a ``.json`` file can load into a graph's store.
JSON_FORMATS = ("wikidata", "kqapro")
#: What a SPARQL endpoint can understand (see :mod:`agent.kb.dialect`).
DIALECTS = ("wdqs", "qlever", "sparql11")


class ProfileError(ValueError):
    """A profile that cannot be read or lacks a field; the message names the file and the field."""


@dataclass(frozen=True)
class PromptLines:
    """The graph-specific lines of the prompt templates."""

    #: The graph's name in sentences ("Every question has an answer in Wikidata").
    title: str
    #: What the model writes ("a Wikidata Query Service SPARQL query").
    query: str
    #: What answers the query ("the Wikidata Query Service").
    service: str
    #: The assumptions to verify by a query ("IDs, property or qualifier, P31/P279 paths").
    checks: str
    #: What a query projects.
    projection: str
    #: Further numbered rules of the policy.
    rules: tuple[str, ...] = ()


@dataclass(frozen=True)
class Ids:
    """What an item's, a class's and a property's ID look like, and the other ways people write them.

    Each kind lives in one or more namespaces (DBpedia's properties in
    ``dbo:`` and ``dbp:``); an ID is written as the graph's queries write it,
    with the namespace's prefix (``dbr:Paris\\,_Texas``), bare where the
    namespace has no prefix (KQA Pro's base) and in a Wikibase graph (``Q42``).
    """

    items: tuple[str, ...]
    item_pattern: str
    item_example: str
    properties: tuple[str, ...]
    property_pattern: str
    property_example: str
    item_forms: tuple[str, ...] = ()
    property_forms: tuple[str, ...] = ()
    #: Where the graph's classes are, and what their local names look like; a class is shown and searched
    #: as an item.  Empty when classes are items of the graph (KQA Pro, Wikidata).
    classes: tuple[str, ...] = ()
    class_pattern: str = ""
    #: IDs differ by case (RDF IRIs do); Wikidata's and KQA Pro's ``q42`` is taken as ``Q42``.
    case_sensitive: bool = True


def _language_rank(languages: tuple[str, ...], language: str) -> int:
    """0 for the first listed language (a subtag too: ``en-GB`` is ``en``), then the next; untagged texts
    after them; any other language last.  Without listed languages every text ranks alike."""
    if not languages:
        return 0
    tag = language.lower()
    for rank, wanted in enumerate(languages):
        if tag == wanted or tag.startswith(wanted + "-"):
            return rank
    return len(languages) + (1 if tag else 0)


@dataclass(frozen=True)
class Names:
    """How a thing of the graph is named: one or more label predicates (``rdfs:label``, ``skos:prefLabel``,
    ``skos:altLabel``, ``schema:name``), in the languages the profile lists, in order.

    Search reads every label predicate in the listed languages and untagged; the label shown is the one
    in the first language present, then an untagged one, then one in any language; within a language the
    first predicate's label before the others' (the others are other names, as Wikidata's aliases).
    """

    #: The label predicates, the preferred first.
    labels: tuple[str, ...]
    #: The labels' languages, in order; empty: every language alike.
    languages: tuple[str, ...] = ()
    #: The description predicate; "" when a thing is described by its classes and key facts.
    description: str = ""
    #: The class predicate a description names (``<pred:instance_of>``); "" for none.
    type: str = ""

    @property
    def label(self) -> str:
        """The preferred label predicate (``rdfs:label``, KQA Pro's ``<pred:name>``)."""
        return self.labels[0]

    @property
    def language(self) -> str:
        """The first language; "" when none is listed."""
        return self.languages[0] if self.languages else ""

    def searched(self, language: str) -> bool:
        """A text in *language* is searched: a listed language, or untagged (any, when none is listed)."""
        return not language or _language_rank(self.languages, language) < len(self.languages) or not self.languages

    def rank(self, language: str, other: bool = False) -> int:
        """How well a text in *language* names a thing, lower is better: by the first label predicate, or
        by an *other* one (an other name, as an alias)."""
        return 2 * _language_rank(self.languages, language) + (1 if other else 0)


@dataclass(frozen=True)
class Entries:
    """How an entry is shown: Wikibase statements, or outgoing triples."""

    model: str
    #: Predicates of a value node giving its text, the first one present wins (date, year, value).
    value_text: tuple[str, ...] = ()
    #: A value node's unit, and the unit that means none.
    unit: str = ""
    no_unit: str = ""
    #: The fact nodes that carry qualifiers: head, predicate and tail of the fact they qualify.
    fact_head: str = ""
    fact_predicate: str = ""
    fact_tail: str = ""

    @property
    def qualified(self) -> bool:
        return bool(self.fact_head and self.fact_predicate and self.fact_tail)

    @property
    def structural(self) -> frozenset[str]:
        """Predicates that build value and fact nodes, never shown as facts of their own."""
        return frozenset(p for p in (*self.value_text, self.unit, self.fact_head, self.fact_predicate,
                                     self.fact_tail) if p)


@dataclass(frozen=True)
class GraphProfile:
    name: str
    title: str
    #: The SPARQL endpoint; "" for a local store.
    endpoint: str
    #: What the endpoint understands (see :mod:`agent.kb.dialect`).
    dialect: str
    prefixes: dict[str, str]
    ids: Ids
    names: Names
    entries: Entries
    prompt: PromptLines
    #: A Wikibase Action API for search and entries; "" when the store's own labels are searched.
    api: str = ""
    #: The base IRI relative IRIs in queries resolve against; "" for none.
    base: str = ""
    #: Where scholarly articles are, seen from the endpoint; "" when it holds them (or has none).
    scholarly_service: str = ""
    #: How a ``.json`` file loads into this graph's store.
    json_format: str = "wikidata"
    #: The engines a final query runs on, in order (the first is the main one), as :mod:`agent.kb.engines`
    #: reads them: ``wdqs``, ``qlever``, ``KEY=ENDPOINT [DIALECT [TRY_URL]]``; empty: the endpoint alone.
    engines: tuple[str, ...] = ()
    #: The profile's own text, kept with a store built from it.
    source: str = field(default="", repr=False, compare=False)

    # -- IDs ---------------------------------------------------------------------------------------

    def _spaces(self, kind: str) -> tuple[tuple[str, str], ...]:
        """(namespace, local-name pattern) of an ``item`` (classes included) or a ``property``, in order."""
        ids = self.ids
        if kind == "property":
            return tuple((namespace, ids.property_pattern) for namespace in ids.properties)
        return (*((namespace, ids.item_pattern) for namespace in ids.items),
                *((namespace, ids.class_pattern) for namespace in ids.classes))

    def id_of(self, iri: str, kind: str | None = None) -> str | None:
        """The ID of the item, class or property *iri* names in this graph (of *kind* when given), or ``None``."""
        for each in (kind,) if kind else ("item", "property"):
            for namespace, pattern in self._spaces(each):
                local = iri[len(namespace):]
                if iri.startswith(namespace) and local and re.fullmatch(pattern, local):
                    return self._written_id(namespace, local)
        return None

    def _written_id(self, namespace: str, local: str) -> str:
        if self.entries.model == "wikibase":
            return local
        prefix = self._prefix_of(namespace)
        if prefix is None:
            return local
        written = _local_name(local)
        return f"{prefix}:{written}" if written is not None else f"<{namespace}{local}>"

    def _prefix_of(self, namespace: str) -> str | None:
        return next((prefix for prefix, iri in self.prefixes.items() if iri == namespace), None)

    def iri_of(self, graph_id: str) -> str:
        """The IRI an ID of this graph names (see :meth:`id_of`)."""
        if graph_id.startswith("<") and graph_id.endswith(">"):
            return graph_id[1:-1]
        prefix, colon, local = graph_id.partition(":")
        if colon and prefix in self.prefixes and self.entries.model != "wikibase":
            return self.prefixes[prefix] + unescape_local(local)
        return self.bare_namespace + graph_id

    @property
    def bare_namespace(self) -> str:
        """Where bare IDs live: the one ID namespace without a prefix (the items' in a Wikibase graph)."""
        if self.entries.model == "wikibase":
            return self.ids.items[0]
        bare = [namespace for namespace in (*self.ids.items, *self.ids.classes, *self.ids.properties)
                if self._prefix_of(namespace) is None]
        return bare[0] if bare else self.ids.items[0]

    @property
    def bare_ids(self) -> bool:
        """Some IDs of this graph are written without a prefix (Wikibase's, KQA Pro's)."""
        return self.entries.model == "wikibase" or any(
            self._prefix_of(namespace) is None for namespace in (*self.ids.items, *self.ids.classes,
                                                                 *self.ids.properties))

    def kind_of(self, graph_id: str) -> str | None:
        """``item`` (classes too) or ``property`` for an ID of this graph (items win where both match), or ``None``."""
        iri = self.iri_of(graph_id)
        for kind in ("item", "property"):
            if self.id_of(iri, kind) == graph_id:
                return kind
        return None

    def check_item(self, text: str) -> tuple[str, str | None]:
        """The item (or class) ID *text* writes: bare, prefixed, as an IRI or a page; a message when it writes none."""
        found = self._read_id(text, "item", self.ids.item_forms)
        if found is None:
            return text, (f"{text!r} is not an item ID. Give one such as {self.ids.item_example} "
                          "(search first if needed).")
        return found, None

    def check_property(self, text: str) -> tuple[str, str | None]:
        found = self._read_id(text, "property", self.ids.property_forms)
        if found is None:
            return text, (f"{text!r} is not a property ID. Give one such as {self.ids.property_example} "
                          "(search first if needed).")
        return found, None

    def _read_id(self, text: str, kind: str, forms: tuple[str, ...]) -> str | None:
        """The ID of *kind* that *text* writes; the longest way of writing matches first, so a full IRI or
        a prefixed name is never read as a bare ID.  Case is folded only in a graph whose IDs ignore it."""
        text = text.strip()
        if text.startswith("<") and text.endswith(">"):
            text = text[1:-1]
        home = self._spaces(kind)[0][0]
        starts = [(form, home) for form in forms]
        starts += [(namespace, namespace) for namespace, _ in self._spaces(kind)]
        starts += [(f"{prefix}:", namespace) for prefix, namespace in self.prefixes.items()
                   if any(namespace == space for space, _ in self._spaces(kind))]
        if self.base:
            starts.append((self.base, self.base))
        starts.sort(key=lambda start: -len(start[0]))
        fold = not self.ids.case_sensitive
        for form, namespace in [*starts, ("", home)]:
            if not (text.lower().startswith(form.lower()) if fold else text.startswith(form)):
                continue
            local = text[len(form):]
            if form.endswith(":") and not form.startswith(("http:", "https:")):
                local = unescape_local(local)
            for candidate in (local, local.upper()) if fold else (local,):
                found = self.id_of(namespace + candidate, kind)
                if found is not None:
                    return found
        return None

    def written(self, iri: str) -> str:
        """An IRI as a query of this graph writes it: a prefixed name, relative to the base, or in full."""
        best, written = "", ""
        for prefix, namespace in self.prefixes.items():
            if iri.startswith(namespace) and len(namespace) > len(best):
                local = _local_name(iri[len(namespace):])
                if local is not None:
                    best, written = namespace, f"{prefix}:{local}"
        if best:
            return written
        if self.base and iri.startswith(self.base) and len(iri) > len(self.base):
            return f"<{iri[len(self.base):]}>"
        return f"<{iri}>"


#: What a prefixed name's local part may hold after a backslash (SPARQL's PN_LOCAL_ESC).
_LOCAL_ESCAPABLE = "_~.-!$&'()*+,;=/?#@%"
_LOCAL_ESCAPE = re.compile(r"\\([" + re.escape(_LOCAL_ESCAPABLE) + "])")
_PERCENT = re.compile(r"%[0-9A-Fa-f]{2}")


def unescape_local(local: str) -> str:
    r"""A prefixed name's local part as its IRI holds it: ``Paris\,_Texas`` is ``Paris,_Texas``."""
    return _LOCAL_ESCAPE.sub(r"\1", local)


def _local_name(local: str) -> str | None:
    r"""*local* as a prefixed name's local part (``Paris,_Texas`` as ``Paris\,_Texas``), or ``None`` when a
    character cannot be written there (a space, a quote): then only the full IRI names it."""
    out = []
    for index, char in enumerate(local):
        if char.isalnum() or char == "_" or char == ":" or char == "-" and index > 0 \
                or char == "." and 0 < index < len(local) - 1 \
                or char == "%" and _PERCENT.match(local, index):
            out.append(char)
        elif char in _LOCAL_ESCAPABLE:
            out.append("\\" + char)
        else:
            return None
    return "".join(out)


class Kind(Enum):
    """What a profile's value must be; the value is how an error says it."""

    TEXT = "a string"
    TEXTS = "a string or a list of strings"
    LIST = "a list of strings"
    FLAG = "true or false"
    TABLE = "a table"
    TEXT_TABLE = "a table of strings"


#: Every key a profile may hold, by table ("" for the top level), and what its value must be: a misspelt key
#: (as in bot.ini) or a value of another type is an error naming the key and the file.
SCHEMA: dict[str, dict[str, Kind]] = {
    "": {"name": Kind.TEXT, "title": Kind.TEXT, "sparql": Kind.TABLE, "prefixes": Kind.TEXT_TABLE,
         "ids": Kind.TABLE, "names": Kind.TABLE, "entries": Kind.TABLE, "prompt": Kind.TABLE, "store": Kind.TABLE},
    "sparql": {"endpoint": Kind.TEXT, "api": Kind.TEXT, "dialect": Kind.TEXT, "base": Kind.TEXT,
               "scholarly_service": Kind.TEXT, "engines": Kind.LIST},
    "ids": {"items": Kind.TEXTS, "item_pattern": Kind.TEXT, "item_example": Kind.TEXT, "item_forms": Kind.LIST,
            "properties": Kind.TEXTS, "property_pattern": Kind.TEXT, "property_example": Kind.TEXT,
            "property_forms": Kind.LIST, "classes": Kind.TEXTS, "class_pattern": Kind.TEXT,
            "case_sensitive": Kind.FLAG},
    "names": {"label": Kind.TEXTS, "language": Kind.TEXT, "languages": Kind.LIST, "description": Kind.TEXT,
              "class": Kind.TEXT},
    "entries": {"model": Kind.TEXT, "value_text": Kind.LIST, "unit": Kind.TEXT, "no_unit": Kind.TEXT,
                "fact_head": Kind.TEXT, "fact_predicate": Kind.TEXT, "fact_tail": Kind.TEXT},
    "store": {"json": Kind.TEXT},
    "prompt": {"query": Kind.TEXT, "service": Kind.TEXT, "checks": Kind.TEXT, "projection": Kind.TEXT,
               "rules": Kind.LIST},
}
#: Every key a profile may hold, by table.
KNOWN_KEYS = {table: set(keys) for table, keys in SCHEMA.items()}
#: What to write instead of a value of the wrong type, where a likely mistake has a right form.
_HINTS = {("names", "language"): ' (several languages: languages = ["en", "nl"])'}


def _type_name(value: Any) -> str:
    """*value*'s TOML type in words: "a list holding an integer"."""
    if isinstance(value, list):
        odd = next((each for each in value if not isinstance(each, str)), None)
        return "an empty list" if not value else f"a list holding {_type_name(odd)}" if odd is not None \
            else "a list of strings"
    if isinstance(value, dict):
        odd = next((each for each in value.values() if not isinstance(each, str)), None)
        return "a table" if odd is None else f"a table holding {_type_name(odd)}"
    names = {bool: "a boolean", int: "an integer", float: "a number", str: "a string", dict: "a table"}
    return next((name for kind, name in names.items() if isinstance(value, kind)), "a date or time")


def _fits(value: Any, kind: Kind) -> bool:
    strings = isinstance(value, list) and all(isinstance(each, str) for each in value)
    return {Kind.TEXT: isinstance(value, str), Kind.TEXTS: isinstance(value, str) or strings and bool(value),
            Kind.LIST: strings, Kind.FLAG: isinstance(value, bool), Kind.TABLE: isinstance(value, dict),
            Kind.TEXT_TABLE: isinstance(value, dict) and all(isinstance(each, str) for each in value.values())}[kind]


def _section(data: dict[str, Any], name: str, origin: str) -> dict[str, Any]:
    section = data.get(name, {})
    if not isinstance(section, dict):
        raise ProfileError(f"{origin}: [{name}] must be a table")
    return section


def _check_keys(data: dict[str, Any], origin: str) -> None:
    """Every key known, every value of its key's type: one line naming the file, the table and the key."""
    for table, schema in SCHEMA.items():
        section = _section(data, table, origin) if table else data
        unknown = sorted(set(section) - set(schema))
        where = f" in [{table}]" if table else ""
        if unknown:
            raise ProfileError(f"{origin}: unknown keys{where}: {', '.join(unknown)} "
                               f"(known: {', '.join(sorted(schema))})")
        for key, kind in schema.items():
            if key in section and not _fits(section[key], kind):
                raise ProfileError(f"{origin}: {f'[{table}] ' if table else ''}{key} must be {kind.value}, not "
                                   f"{_type_name(section[key])}{_HINTS.get((table, key), '')}")


def _required(section: dict[str, Any], key: str, where: str) -> Any:
    if key not in section:
        raise ProfileError(f"{where}: {key} is missing")
    return section[key]


def _namespaces(section: dict[str, Any], key: str, where: str, required: bool = True) -> tuple[str, ...]:
    """One namespace or a list of them."""
    value = _required(section, key, where) if required else section.get(key, [])
    value = [value] if isinstance(value, str) else value
    if not isinstance(value, list) or not all(isinstance(each, str) and each for each in value) \
            or required and not value:
        raise ProfileError(f"{where}: {key} must be a namespace IRI or a list of them")
    return tuple(value)


def _ids(ids: dict[str, Any], prefixes: dict[str, str], origin: str) -> Ids:
    where = f"{origin} [ids]"
    patterns = ["item_pattern", "property_pattern"] + (["class_pattern"] if "classes" in ids else [])
    for key in patterns:
        try:
            re.compile(_required(ids, key, where))
        except re.error as error:
            raise ProfileError(f"{origin}: [ids] {key} is not a regular expression: {error}") from error
    result = Ids(items=_namespaces(ids, "items", where), item_pattern=ids["item_pattern"],
                 item_example=_required(ids, "item_example", where), properties=_namespaces(ids, "properties", where),
                 property_pattern=ids["property_pattern"], property_example=_required(ids, "property_example", where),
                 item_forms=tuple(ids.get("item_forms", ())), property_forms=tuple(ids.get("property_forms", ())),
                 classes=_namespaces(ids, "classes", where, required=False), class_pattern=ids.get("class_pattern", ""),
                 case_sensitive=bool(ids.get("case_sensitive", True)))
    return result


def _names(names: dict[str, Any], origin: str) -> Names:
    """One label predicate or several; one language (``language``) or several in order (``languages``)."""
    where = f"{origin} [names]"
    labels = _required(names, "label", where)
    labels = (labels,) if isinstance(labels, str) else tuple(labels)
    if not all(labels):
        raise ProfileError(f"{where}: label must name predicates, not an empty string")
    if "language" in names and "languages" in names:
        raise ProfileError(f"{where}: give language or languages, not both")
    languages = names.get("languages", [names["language"]] if names.get("language") else [])
    if not all(languages) or len(set(languages)) < len(languages):
        raise ProfileError(f"{where}: languages must be language codes, each once, not {languages!r}")
    return Names(labels=labels, languages=tuple(language.lower() for language in languages),
                 description=names.get("description", ""), type=names.get("class", ""))


def _check_bare(ids: Ids, prefixes: dict[str, str], origin: str) -> None:
    """Bare IDs are read in one namespace: every other namespace of IDs needs a prefix."""
    bare = {namespace for namespace in (*ids.items, *ids.classes, *ids.properties)
            if namespace not in prefixes.values()}
    if len(bare) > 1:
        raise ProfileError(f"{origin}: [ids] IDs of {' and '.join(sorted(bare))} would be written alike: "
                           "give all but one of these namespaces a prefix in [prefixes]")


def parse_profile(text: str, origin: str = "<profile>") -> GraphProfile:
    """A profile from its TOML *text*; :class:`ProfileError` names *origin* and what is wrong."""
    try:
        data = tomllib.loads(text)
    except tomllib.TOMLDecodeError as error:
        raise ProfileError(f"{origin}: not valid TOML: {error}") from error
    _check_keys(data, origin)
    sparql, ids, names = (_section(data, name, origin) for name in ("sparql", "ids", "names"))
    entries, prompt, store = (_section(data, name, origin) for name in ("entries", "prompt", "store"))
    model = entries.get("model", "triples")
    if model not in ENTRY_MODELS:
        raise ProfileError(f"{origin}: [entries] model must be one of {', '.join(ENTRY_MODELS)}, not {model!r}")
    json_format = store.get("json", "wikidata")
    if json_format not in JSON_FORMATS:
        raise ProfileError(f"{origin}: [store] json must be one of {', '.join(JSON_FORMATS)}, not {json_format!r}")
    dialect = sparql.get("dialect", "sparql11")
    if dialect not in DIALECTS:
        raise ProfileError(f"{origin}: [sparql] dialect must be one of {', '.join(DIALECTS)}, not {dialect!r}")
    prefixes = dict(_section(data, "prefixes", origin))
    ids_read = _ids(ids, prefixes, origin)
    read_names = _names(names, origin)
    _check_bare(ids_read, prefixes, origin)
    return GraphProfile(
        name=_required(data, "name", origin), title=data.get("title") or data["name"],
        endpoint=sparql.get("endpoint", ""), dialect=dialect, api=sparql.get("api", ""),
        base=sparql.get("base", ""), scholarly_service=sparql.get("scholarly_service", ""),
        engines=tuple(sparql.get("engines", ())),
        prefixes=prefixes, ids=ids_read,
        names=read_names,
        entries=Entries(model=model, value_text=tuple(entries.get("value_text", ())), unit=entries.get("unit", ""),
                        no_unit=entries.get("no_unit", ""), fact_head=entries.get("fact_head", ""),
                        fact_predicate=entries.get("fact_predicate", ""), fact_tail=entries.get("fact_tail", "")),
        prompt=PromptLines(**{key: _required(prompt, key, f"{origin} [prompt]")
                              for key in ("query", "service", "checks", "projection")},
                           title=data.get("title") or data["name"], rules=tuple(prompt.get("rules", ()))),
        json_format=json_format, source=text)


_PROFILES = resources.files("agent") / "profiles"


def profile_names() -> list[str]:
    """The profiles shipped with the agent."""
    return sorted(entry.name.removesuffix(".toml") for entry in _PROFILES.iterdir() if entry.name.endswith(".toml"))


@lru_cache(maxsize=None)
def _shipped(name: str) -> GraphProfile:
    return parse_profile(_PROFILES.joinpath(f"{name}.toml").read_text(encoding="utf-8"), f"agent/profiles/{name}.toml")


def load_graph(name_or_path: str | Path) -> GraphProfile:
    """A shipped profile by name (``wikidata``, ``kqapro``), or the profile file at a path."""
    text = str(name_or_path)
    if text in profile_names():
        return _shipped(text)
    path = Path(text)
    if not path.is_file():
        raise ProfileError(f"no graph profile {text!r}: name one of {', '.join(profile_names())}, "
                           "or the path of a profile file")
    try:
        return parse_profile(path.read_text(encoding="utf-8"), str(path))
    except (OSError, UnicodeDecodeError) as error:
        raise ProfileError(f"cannot read the graph profile {path}: {error}") from error


WIKIDATA = _shipped("wikidata")


# -- Wikibase IDs in text ------------------------------------------------------------------------------------------
# The one definition of how a Wikibase ID is written in text (a model's words, a forum thread, a query, a dump):
# every reader of IDs builds its pattern from these.  Items and properties are as Wikidata's profile writes them;
# lexemes, their forms and senses, and media files follow the same Wikibase numbering.

#: The number of a Wikibase ID (``42`` in ``Q42``): no leading zero.
ID_NUMBER = "[1-9][0-9]*"
#: An item's ID (``Q42``), as the Wikidata profile's ``item_pattern`` says.
ITEM_ID = WIKIDATA.ids.item_pattern
#: A property's ID (``P31``), as the Wikidata profile's ``property_pattern`` says.
PROPERTY_ID = WIKIDATA.ids.property_pattern
#: A lexeme's (``L7``), a lexeme's form or sense (``L7-F1``, ``L7-S2``), a media file's (``M5``).
LEXEME_ID = "L" + ID_NUMBER
LEXEME_PART_ID = f"{LEXEME_ID}-[FS]{ID_NUMBER}"
MEDIA_ID = "M" + ID_NUMBER
#: An item or a property: what search hits and the model's words name.
ENTITY_ID = f"(?:{ITEM_ID}|{PROPERTY_ID})"
#: Any entity with a page of its own on a Wikibase: an item, a property or a lexeme.
PAGE_ID = f"(?:{ITEM_ID}|{PROPERTY_ID}|{LEXEME_ID})"
#: Any ID a query or a trace may hold: the above, a lexeme's form or sense, a media file.
ANY_ID = f"(?:{LEXEME_PART_ID}|{ITEM_ID}|{PROPERTY_ID}|{LEXEME_ID}|{MEDIA_ID})"

#: Compiled, for :meth:`re.Pattern.fullmatch` and searches of their own.
ITEM_ID_RE = re.compile(ITEM_ID)
PROPERTY_ID_RE = re.compile(PROPERTY_ID)
ENTITY_ID_RE = re.compile(ENTITY_ID)
PAGE_ID_RE = re.compile(PAGE_ID)
ANY_ID_RE = re.compile(ANY_ID)


def entity_order(entity_id: str) -> tuple[str, int]:
    """The order of items and properties (:data:`ENTITY_ID`) for a reader: by kind, then by number (``P31`` before
    ``P279``)."""
    return entity_id[0], int(entity_id[1:])
