"""Find the solved examples most like a question, and give the agent's first prompt those that fit whole.

Two signals, both ranked by SQLite FTS5's BM25 over one index:

1. the question's words against the examples' questions (plain BM25);
2. the properties the question names: a run of its words that is the label
   or an alias of a property some example uses (longest runs first, each
   word used once: "official language" is P37, not also "language"), looked
   for among the examples' properties, weighted :data:`PROPERTY_WEIGHT`
   times a question word.  A name shared by more than :data:`MAX_SENSES`
   properties ("from", "president") names none: the question does not say
   which one it means; nor does a function word ("of", "in").

A question of at most :data:`PLAIN_UP_TO` words ("who is justin bieber's
brother?") is ranked by plain BM25 alone: its few words are nearly all
names, and the property it names pulls in requests that merely share it.
Longer questions get both signals: "what is the name of justin bieber
brother?" names sibling (P3373), which brings in "what was the name of
jfk's brothers?" ahead of four other questions about Justin Bieber.

The names come from the knowledge base (:mod:`agent.examples.naming`), so
the second signal is the knowledge base's own labels, not a list of ours.
Examples are taken in BM25's order, one per thread and one per question
(QALD-7 and QALD-9 ask many of the same questions).  The settings are
measured by ``scripts/bench_examples.py`` on each question set held out in
turn, against plain BM25.

No leakage: examples from the question's own thread (:class:`ThreadRef`) and
any ids given as *excluded* are never returned.
"""

from __future__ import annotations

import json
import math
import re
import threading
from collections import Counter, defaultdict
from dataclasses import dataclass, field

from agent.examples.languages import ANY_FUNCTION_WORD, guess_language
from agent.examples.queries import shorten_text, whole_query
from agent.examples.store import ExampleStore, SolvedExample, ThreadRef
from agent.kb.local.search import fold

#: How much more a named property counts than a word of the question, and how many properties a name may have
#: to count (chosen on held-out question sets; see scripts/bench_examples.py).
PROPERTY_WEIGHT = 0.5
MAX_SENSES = 2
#: Questions of at most this many words are ranked by plain BM25 (chosen on held-out question sets, like the two
#: above; see scripts/bench_examples.py).
PLAIN_UP_TO = 6
#: Candidates read from the index before the choice.
POOL = 50
#: The question's words read at most (a forum post may be long; its first words say what it asks).
MAX_WORDS = 64
#: Properties nearly every query uses: naming them says nothing about which example fits.
GENERIC_PROPERTIES = frozenset({"P31", "P279"})
#: What the examples' lines may take in the first prompt, in characters (the block's heading aside).
PROMPT_CHARS = 440
#: A question shown at most this long, in characters.
QUESTION_CHARS = 200
#: The characters the prompt adds around an example's question and query (see prompts/question.j2).
EXAMPLE_FRAME = "-  → \n"
#: The IDF-weighted cosine of two requests' words from which they are the same request.  Between a SPINACH
#: question and its best example from another thread it reaches 0.67 at most (scripts/bench_examples.py); a
#: question with a quarter of its words dropped keeps 0.79 or more in nine cases out of ten.
SAME_REQUEST = 0.75


def words_of(text: str) -> list[str]:
    """*text*'s words, case and accents folded, a plural ``-s`` dropped (``awards`` reads as ``award``)."""
    return [word[:-1] if len(word) > 3 and word.endswith("s") and not word.endswith("ss") else word
            for word in re.findall(r"\w+", fold(text))]


@dataclass
class Match:
    example: SolvedExample
    #: FTS5's BM25 score (lower is better).
    score: float
    #: The named properties (of the question) this example's query uses.
    shows: set[str] = field(default_factory=set)


@dataclass(frozen=True)
class PromptExample:
    """An example as the agent's first prompt shows it: its question, and its query whole."""

    question: str
    query: str


class Retriever:
    """Ranks a store's examples for a question.

    *use_properties* off gives plain BM25 over the question's words (the
    benchmark's baseline); *excluded* are ids never returned (a test split's
    own threads, in evaluation).  *property_weight*, *max_senses* and
    *plain_up_to* are there for the benchmark to choose.
    """

    def __init__(self, store: ExampleStore, use_properties: bool = True, excluded: frozenset[int] = frozenset(),
                 property_weight: float = PROPERTY_WEIGHT, max_senses: int = MAX_SENSES,
                 plain_up_to: int = PLAIN_UP_TO):
        self.store = store
        self.use_properties = use_properties
        self.plain_up_to = plain_up_to
        self.excluded = excluded
        self.property_weight = property_weight
        self.max_senses = max_senses
        self._lock = threading.Lock()
        self._names: dict[str, set[str]] = defaultdict(set)
        for name, pid in store.property_names() if use_properties else []:
            if pid not in GENERIC_PROPERTIES:
                self._names[" ".join(words_of(name))].add(pid)
        self._longest = max((len(name.split()) for name in self._names), default=0)
        #: Document frequencies of the terms compared within one language (False) and across languages (True).
        self._frequencies: dict[bool, Counter] = {}
        self._documents = 0

    def named_properties(self, question: str) -> dict[str, str]:
        """The properties *question* names, each with the words that name it; longest names first, no word
        read twice, a name of more than :attr:`max_senses` properties or a function word naming none."""
        words = words_of(question)[:MAX_WORDS]
        taken = [False] * len(words)
        found: dict[str, str] = {}
        for size in range(min(self._longest, len(words)), 0, -1):
            for start in range(len(words) - size + 1):
                if any(taken[start:start + size]):
                    continue
                phrase = " ".join(words[start:start + size])
                senses = self._names.get(phrase, set())
                meant = len(senses) <= self.max_senses and phrase not in ANY_FUNCTION_WORD
                for pid in sorted(senses) if meant else ():
                    found.setdefault(pid, phrase)
                if senses:
                    taken[start:start + size] = [True] * size
        return found

    def similar(self, question: str, k: int = 5, thread: ThreadRef | None = None) -> list[Match]:
        """The *k* examples most like *question*, never from *thread* or the excluded ids; a question of at most
        :attr:`plain_up_to` words by plain BM25."""
        every_word = words_of(question)
        words = list(dict.fromkeys(every_word))[:MAX_WORDS]
        named = self.named_properties(question) if self.use_properties and len(every_word) > self.plain_up_to \
            else {}
        terms = [f'"{word}"' for word in words] + [f'properties : "{pid.lower()}"' for pid in named]
        if not terms or k <= 0:
            return []
        with self._lock:
            ranked = self.store.ranked(" OR ".join(terms), (1.0, self.property_weight if named else 1.0), POOL)
            excluded = self.excluded | (self.store.ids_in_threads([thread]) if thread else set())
            candidates = [candidate for candidate in ranked if candidate[0] not in excluded]
            examples = {example.id: example for example in self.store.examples([id_ for id_, _ in candidates])}
        matches = [Match(examples[id_], score, examples[id_].properties & set(named))
                   for id_, score in candidates if id_ in examples]
        return _one_per_thread_and_question(matches)[:k]

    def property_labels(self, pids: list[str]) -> dict[str, str]:
        """The labels the store knows for *pids*."""
        with self._lock:
            return self.store.property_labels(pids)

    def same_request(self, question: str, match: Match) -> bool:
        """Whether *match* is clearly the same request as *question*: the cosine of their terms, each weighted by
        its rarity among the store's questions (IDF), reaches :data:`SAME_REQUEST`.  In one language the terms
        are all their words ("When did Rumi die?" is not "When was Rumi born?"); across the forum's languages,
        what they name (:meth:`concepts`), as their function words differ."""
        across = guess_language(question) != guess_language(match.example.question)
        terms = self.concepts if across else words_of
        with self._lock:
            if across not in self._frequencies:
                self._frequencies[across] = Counter(term for example in self.store.examples()
                                                    for term in set(terms(example.question)))
                self._documents = self.store.count()
            frequencies = self._frequencies[across]
        first, second = (self._weights(terms(text), frequencies) for text in (question, match.example.question))
        norm = math.sqrt(sum(value * value for value in first.values()) * sum(value * value
                                                                               for value in second.values()))
        return bool(norm) and sum(first[term] * second[term] for term in first.keys() & second.keys()) / norm \
            >= SAME_REQUEST

    def concepts(self, text: str) -> list[str]:
        """What *text* names, in a form its translation shares: the properties it names (by ID, from their names in
        the knowledge base's languages) and its other words but the forum languages' function words."""
        named = self.named_properties(text) if self.use_properties else {}
        phrases = {word for phrase in named.values() for word in phrase.split()}
        return list(named) + [word for word in words_of(text)[:MAX_WORDS]
                              if word not in ANY_FUNCTION_WORD and word not in phrases]

    def _weights(self, terms: list[str], frequencies: Counter) -> dict[str, float]:
        return {term: count * math.log((self._documents + 1) / (frequencies[term] + 0.5))
                for term, count in Counter(terms).items()}


def _thread_of(example: SolvedExample) -> tuple[str, str]:
    return (fold(example.heading), example.month) if example.heading else (example.key, "")


def _one_per_thread_and_question(matches: list[Match]) -> list[Match]:
    """*matches* but the second of one thread, or of one question asked in two sources (QALD-7 and QALD-9 share
    many): a copy shows the model nothing new."""
    seen: set[tuple[str, ...]] = set()
    kept = []
    for match in matches:
        keys = {("thread", *_thread_of(match.example)), ("question", *words_of(match.example.question))}
        if not keys & seen:
            seen |= keys
            kept.append(match)
    return kept


def prompt_examples(matches: list[Match], chars: int = PROMPT_CHARS) -> list[PromptExample]:
    """The examples of *matches*, in their order, that fit whole in *chars* characters together.

    Each is its question as a quoted string (data, not words to the model;
    cut after a word beyond :data:`QUESTION_CHARS`: a forum post can run to
    paragraphs) and its query as posted, in fewer
    characters (:func:`whole_query`).  A query is never cut: an example that
    would not fit, or whose query cannot be read whole, is left out and the
    next one tried.
    """
    shown = []
    left = chars
    for match in matches:
        query = whole_query(match.example.sparql)
        question = json.dumps(shorten_text(match.example.question, QUESTION_CHARS), ensure_ascii=False)
        size = len(question) + len(query or "") + len(EXAMPLE_FRAME)
        if query and size <= left:
            shown.append(PromptExample(question, query))
            left -= size
    return shown
