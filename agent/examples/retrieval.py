"""Find the solved examples most like a question, and give the agent's first prompt those that fit whole.

Two rankings, fused:

1. By words, with SQLite FTS5's BM25 over one index of two signals: the
   question's words but its language's function words (:func:`content_words`)
   against the examples' questions, and the properties the question names: a
   run of its words that is the label or an alias of a property some example
   uses (longest runs first, each word used once: "official language" is
   P37, not also "language"), looked for among the examples' properties,
   weighted :data:`PROPERTY_WEIGHT` times a question word.  A name shared by
   more than :data:`MAX_SENSES` properties ("from", "president") names none:
   the question does not say which one it means; nor does a function word
   ("of", "in").  The names come from the knowledge base
   (:mod:`agent.examples.naming`), not from a list of ours.
2. By meaning (:mod:`agent.examples.meaning`): the cosine of the question's
   vector and each example's, which finds a paraphrase or a request in
   another language that shares no word with it.

Reciprocal rank fusion (Cormack, Clarke and Büttcher, 2009) with a small
constant (:data:`FUSION_K`) takes the top of each in turn, and first what both
put near the top; the rank by words counts :data:`WORDS_WEIGHT_ACROSS` for an
example in another language than the question's (:func:`language_of`), where
shared words are names at best.  A strong match by meaning wins rank 1: when
the example nearest in meaning reaches :data:`STRONG_MEANING` and is nearer
than the fused first by :data:`STRONG_MARGIN`, it goes first (a near
paraphrase says more than shared words; ranks alone cannot tell a cosine of
0.95 from one of 0.85); and when the fused first is in another language than
the question, the nearest in meaning goes first (:func:`meaning_first_across`):
across languages the words may reorder the examples, not choose the first.
An example that shares no word with the question is relevant, and returned
(:meth:`Match.relevant`), only if its cosine is :data:`RELEVANT_ABOVE`
(:data:`RELEVANT_ABOVE_ACROSS` across languages) above the question's usual
cosine with the store's examples: the model's cosines sit lower for some
languages than others, and the floor moves with them.  Examples are taken one per thread and
one per question (QALD-7 and QALD-9 ask many of the same).
``scripts/bench_examples.py`` measures it on each question set held out in
turn, against plain BM25 and meaning alone, at rank 1 and 5.

No leakage: examples from the question's own thread (:class:`ThreadRef`) and
any ids given as *excluded* are never returned.
"""

from __future__ import annotations

import math
import re
import threading
from collections import Counter, defaultdict
from dataclasses import dataclass, field
from functools import lru_cache

import numpy as np

from agent.examples.languages import ANY_FUNCTION_WORD, FUNCTION_WORDS, guess_language
from agent.examples.meaning import MAX_WORDS, MEANINGS, Meanings, StoreVectors
from agent.examples.quoted import prompt_example
from agent.examples.store import DEFAULT_GRAPH, ExampleStore, SolvedExample, ThreadRef
from agent.kb.local.search import fold

#: How much more a named property counts than a word of the question, and how many properties a name may have
#: to count (chosen on held-out question sets; see scripts/bench_examples.py).
PROPERTY_WEIGHT = 0.5
MAX_SENSES = 2
#: Candidates each ranking gives the fusion.
POOL = 50
#: Reciprocal rank fusion: an example at rank r (from 1) of a ranking scores 1 / (FUSION_K + r) there.  With the
#: weights below and the strong match by meaning, chosen by ``scripts/bench_examples.py --tune`` on SPINACH dev,
#: WikiWebQuestions dev and half of QALD-10 in German alone (among 3, 10 and 60; 0.75 and 1; 0.1 and 0.25), for the
#: best rank 1 against plain BM25 and meaning.
FUSION_K = 10
#: How much the ranking by words counts in the fusion, against the ranking by meaning's 1: for an example in the
#: question's language, and for one in another (where shared words are names at best, and meaning knows more).
WORDS_WEIGHT = 0.75
WORDS_WEIGHT_ACROSS = 0.1
#: A strong match by meaning: the cosine from which the example nearest in meaning goes first, when it is nearer than
#: the fused first by the margin (chosen by ``scripts/bench_examples.py --tune`` on the tuning sets alone, among
#: 0.88 to 0.92 and 0 to 0.04, for the best rank 1 against plain BM25 and meaning alone).  Cosines of the model's
#: direct translations reach about 0.9, of unrelated questions 0.7 to 0.85.
STRONG_MEANING = 0.88
STRONG_MARGIN = 0.02
#: Properties nearly every query uses: naming them says nothing about which example fits.
GENERIC_PROPERTIES = frozenset({"P31", "P279"})
#: What the examples' lines may take in the first prompt, in estimated tokens (:func:`estimated_tokens`; the block's
#: heading aside): room for five whole examples of the usual size, a small share of a model's context.
PROMPT_TOKENS = 1500
#: Characters per token in the estimate: fewer than prose's four, as a query's IDs, prefixes and punctuation are
#: cut into short tokens.
CHARS_PER_TOKEN = 3.0
#: The characters the prompt adds around an example's question and query (see prompts/question.j2).
EXAMPLE_FRAME = "-  → \n"
#: How far above the question's usual cosine (:data:`USUAL`) an example found by meaning alone must be to be
#: relevant: in the question's language, and in another (where the model's cosines of a translation run lower).  An
#: example that shares a word (other than a function word) or a named property with the question needs no cosine.
#: The floor moves with the question because this model's cosines do: a question's median cosine with the store is
#: 0.75 in English, 0.72 in German (QALD-10 against the other sets), lower still in other scripts, so a fixed floor
#: tuned in one language keeps out what a question in another needs.  Chosen by ``scripts/bench_examples.py --tune``
#: on the tuning sets alone: those (0.02 to 0.07) that show fewest examples while costing no tuning set more than
#: a quarter point of recall at 5 against no floor (0.07 cost 0.4 points).  It keeps out what
#: means something else in the store's own domain; it cannot tell a request about another domain asked in the same
#: shape ("How many suppliers do we have in France?" reaches 0.865 with "How many countries are there in Europe?").
RELEVANT_ABOVE = 0.06
RELEVANT_ABOVE_ACROSS = 0.05
#: A question's usual cosine is its median cosine with the store's examples, when the store holds at least
#: :data:`USUAL_FROM` (fewer say too little of what an unrelated example looks like); otherwise :data:`USUAL`, an
#: English question's median with a store of the datasets' questions.
USUAL_FROM = 200
USUAL = 0.75
#: The IDF-weighted cosine of two requests' words from which they are the same request.  Between a SPINACH
#: question and its best example from another thread it reaches 0.67 at most (scripts/bench_examples.py); a
#: question with a quarter of its words dropped keeps 0.79 or more in nine cases out of ten.
SAME_REQUEST = 0.75


def estimated_tokens(text: str) -> int:
    """The tokens *text* takes in a prompt, estimated from its length (:data:`CHARS_PER_TOKEN`)."""
    return math.ceil(len(text) / CHARS_PER_TOKEN)


def content_words(text: str) -> list[str]:
    """:func:`words_of` *text* without the function words of its language (English when it uses none of the
    forum's four): "Qui a peint la Joconde ?" asks about "peint" and "joconde", not "la"."""
    common = {fold(word) for word in FUNCTION_WORDS[guess_language(text) or "en"]}
    return [word for word in words_of(text) if word not in common]


def words_of(text: str) -> list[str]:
    """*text*'s words, case and accents folded, a plural ``-s`` dropped (``awards`` reads as ``award``)."""
    return [word[:-1] if len(word) > 3 and word.endswith("s") and not word.endswith("ss") else word
            for word in re.findall(r"\w+", fold(text))]


@dataclass
class Match:
    example: SolvedExample
    #: The ranking's score (higher is better): BM25's, negated; the cosine; or the fused score.
    score: float
    #: The named properties (of the question) this example's query uses.
    shows: set[str] = field(default_factory=set)
    #: The cosine of its question's vector and the question's, where the ranking by meaning found it.
    cosine: float | None = None
    #: Whether the ranking by words found it: it shares a word (not a function word) or a named property.
    shares_words: bool = False
    #: The question's usual cosine with the store's examples (:data:`USUAL_FROM`), where the ranking by meaning ran.
    usual: float = USUAL

    def relevant(self, above: float = RELEVANT_ABOVE) -> bool:
        """Whether it is worth showing: it shares words with the question, or its cosine is *above* the question's
        usual one by that much."""
        return self.shares_words or (self.cosine is not None and self.cosine - self.usual >= above)


@dataclass(frozen=True)
class PromptExample:
    """An example as the agent's first prompt shows it: its question, and its query whole."""

    question: str
    query: str


class Retriever:
    """Ranks a store's examples for a question.

    *use_properties* and *use_meaning* off give plain BM25 over the
    question's words (the benchmark's baseline); *excluded* are ids never
    returned (a test split's own threads, in evaluation); examples written for
    another graph than *graph* never are either.  *property_weight*,
    *max_senses* and *fusion_k* are there for the benchmark to choose.
    """

    def __init__(self, store: ExampleStore, use_properties: bool = True, use_meaning: bool = True,
                 excluded: frozenset[int] = frozenset(), property_weight: float = PROPERTY_WEIGHT,
                 max_senses: int = MAX_SENSES, fusion_k: int = FUSION_K, meanings: Meanings = MEANINGS,
                 above: float = RELEVANT_ABOVE, above_across: float = RELEVANT_ABOVE_ACROSS, stopwords: bool = True,
                 words_weight: float = WORDS_WEIGHT, words_weight_across: float = WORDS_WEIGHT_ACROSS,
                 strong: float = STRONG_MEANING, strong_margin: float = STRONG_MARGIN, graph: str = DEFAULT_GRAPH,
                 usual_from: int = USUAL_FROM):
        self.store = store
        self.strong = strong
        self.strong_margin = strong_margin
        self.graph = graph
        self.words_weight = words_weight
        self.words_weight_across = words_weight_across
        self.meanings = meanings
        self.above = above
        self.above_across = above_across
        self.usual_from = usual_from
        self.stopwords = stopwords
        self.fusion_k = fusion_k
        self.use_properties = use_properties
        self.use_meaning = use_meaning
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
        #: The ids of the examples written for other graphs than :attr:`graph`, as of the store's version.
        self._other_graphs: tuple[tuple[int, int] | None, frozenset[int]] = (None, frozenset())
        #: The store's examples' ids and vectors, as of the store's version.
        self._meant: tuple[tuple[int, int] | None, StoreVectors] = (None, StoreVectors(np.zeros(0, dtype=np.int64),
                                                                                       np.empty((0, 0))))

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

    def ranking(self) -> str:
        """How it ranks, in words, as an evaluation run records it (a run is not resumed with another ranking)."""
        words = "words and named properties" if self.use_properties else "plain BM25 over the words"
        model = self.meanings.model() if self.use_meaning else None
        if not model:
            return f"{words} alone" + ("" if self.stopwords else ", function words included")
        return (f"{words} and meaning ({model}), fused (k {self.fusion_k}, words {self.words_weight:g}, across "
                f"languages {self.words_weight_across:g}), a cosine of {self.strong:g} first when nearer by "
                f"{self.strong_margin:g}, relevant {self.above:g} above the question's usual cosine (across languages "
                f"{self.above_across:g})")

    def similar(self, question: str, k: int = 5, thread: ThreadRef | None = None) -> list[Match]:
        """The *k* examples most like *question* and relevant to it (:meth:`Match.relevant`), never from *thread* or
        the excluded ids: the ranking by words and the ranking by meaning fused (by words alone without the
        model)."""
        rankings = [self.by_words(question, thread)]
        if self.use_meaning and self.meanings.available():
            rankings.append(self.by_meaning(question, thread))
        return self.fuse(question, rankings, k)

    def fuse(self, question: str, rankings: list[list[Match]], k: int = 5) -> list[Match]:
        """The *k* best of *rankings* (by words, then by meaning when there is one) of *question* fused, a strong
        match by meaning first (:meth:`strong_first`), those below the floor left out, one per thread and question."""
        language = language_of(question)

        def relevant(match: Match) -> bool:
            return match.relevant(self.above if _same_language(language, match.example) else self.above_across)
        if len(rankings) > 1:
            fused = _fused(rankings, self.fusion_k, lambda match: self.words_weight if _same_language(
                language, match.example) else self.words_weight_across)
            ranked = [match for match in self.strong_first(fused, rankings[1]) if relevant(match)]
            ranked = meaning_first_across(language, ranked, rankings[1])
        else:
            ranked = [match for match in rankings[0] if relevant(match)]
        return _one_per_thread_and_question(ranked)[:k]

    def strong_first(self, fused: list[Match], by_meaning: list[Match]) -> list[Match]:
        """*fused* with the example nearest in meaning first when its cosine reaches :attr:`strong` and exceeds the
        fused first's by :attr:`strong_margin` (or the fused first is not among the nearest by meaning at all)."""
        if not fused or not by_meaning:
            return fused
        nearest, first = by_meaning[0], fused[0]
        if nearest.example.id == first.example.id or nearest.cosine is None or nearest.cosine < self.strong:
            return fused
        if first.cosine is not None and nearest.cosine - first.cosine < self.strong_margin:
            return fused
        return sorted(fused, key=lambda match: match.example.id != nearest.example.id)

    def by_words(self, question: str, thread: ThreadRef | None = None) -> list[Match]:
        """Up to :data:`POOL` examples by BM25 over *question*'s words and the properties it names."""
        words = list(dict.fromkeys((content_words if self.stopwords else words_of)(question)))[:MAX_WORDS]
        named = self.named_properties(question) if self.use_properties else {}
        terms = [f'"{word}"' for word in words] + [f'properties : "{pid.lower()}"' for pid in named]
        if not terms:
            return []
        with self._lock:
            ranked = self.store.ranked(" OR ".join(terms), (1.0, self.property_weight if named else 1.0), POOL)
            excluded = self._excluded(thread)
            candidates = [candidate for candidate in ranked if candidate[0] not in excluded]
            examples = {example.id: example for example in self.store.examples([id_ for id_, _ in candidates])}
        return _one_per_thread_and_question([Match(examples[id_], -score, examples[id_].properties & set(named),
                                                   shares_words=True) for id_, score in candidates if id_ in examples])

    def by_meaning(self, question: str, thread: ThreadRef | None = None) -> list[Match]:
        """Up to :data:`POOL` examples by the cosine of their question's vector and *question*'s."""
        with self._lock:
            excluded = self._excluded(thread)
            version = self.store.version()
            if self._meant[0] != version:
                self._meant = (version, self.meanings.of_store(self.store))
            _, meant = self._meant
        if not len(meant):
            return []
        named = set(self.named_properties(question)) if self.use_properties else set()
        cosines = meant.vectors @ self.meanings.of_question(question)
        if excluded:
            cosines[np.isin(meant.ids, np.fromiter(excluded, dtype=np.int64, count=len(excluded)))] = -np.inf
        best = [index for index in nearest(cosines, POOL) if cosines[index] > -np.inf]
        finite = cosines[cosines > -np.inf]
        usual = float(np.median(finite)) if len(finite) >= self.usual_from else USUAL
        with self._lock:
            examples = {example.id: example for example in self.store.examples(meant.ids[best].tolist())}
        return _one_per_thread_and_question([Match(examples[id_], float(cosines[index]), examples[id_].properties
                                                   & named, float(cosines[index]), usual=usual)
                                             for index, id_ in zip(best, meant.ids[best].tolist())
                                             if id_ in examples])

    def _excluded(self, thread: ThreadRef | None) -> set[int] | frozenset[int]:
        """The ids never returned for a question of *thread* (the caller holds the lock)."""
        version = self.store.version()
        if self._other_graphs[0] != version:  # read once per version of the store: a scan of every example
            self._other_graphs = (version, frozenset(self.store.ids_of_other_graphs(self.graph)))
        return self.excluded | self._other_graphs[1] | (self.store.ids_in_threads([thread]) if thread else set())

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


def meaning_first_across(language: str, ranked: list[Match], by_meaning: list[Match]) -> list[Match]:
    """*ranked* (fused, relevant) with the example nearest in meaning first when the first is in another language
    than the question's: across languages a shared word is a name at best, so the words may reorder the examples
    below, but the first is meaning's (the ranking by meaning alone's first, unless the relevance floor keeps it
    out)."""
    if not ranked or _same_language(language, ranked[0].example):
        return ranked
    kept = {match.example.id for match in ranked}
    nearest_id = next((match.example.id for match in by_meaning if match.example.id in kept), None)
    return sorted(ranked, key=lambda match: match.example.id != nearest_id)


def nearest(scores: np.ndarray, k: int) -> list[int]:
    """The indices of the *k* highest *scores*, highest first, ties in index order: as a stable sort of all of them
    would give, without sorting a large store's every score."""
    if len(scores) <= k:
        return np.argsort(-scores, kind="stable").tolist()
    kth = np.partition(scores, len(scores) - k)[len(scores) - k]
    candidates = np.flatnonzero(scores >= kth)
    return candidates[np.argsort(-scores[candidates], kind="stable")][:k].tolist()


def _thread_of(example: SolvedExample) -> tuple[str, str]:
    return (fold(example.heading), example.month) if example.heading else (example.key, "")


@lru_cache(maxsize=8192)
def _question_key(question: str) -> tuple[str, ...]:
    """What makes two examples' questions the same question: their words (read once per question and process, as
    every ranking of every question compares the same examples)."""
    return tuple(words_of(question))


def _one_per_thread_and_question(matches: list[Match]) -> list[Match]:
    """*matches* but the second of one thread, or of one question asked in two sources (QALD-7 and QALD-9 share
    many): a copy shows the model nothing new."""
    seen: set[tuple[str, ...]] = set()
    kept = []
    for match in matches:
        keys = {("thread", *_thread_of(match.example)), ("question", *_question_key(match.example.question))}
        if not keys & seen:
            seen |= keys
            kept.append(match)
    return kept


def language_of(text: str) -> str:
    """*text*'s language as far as the ranking needs it: one of the forum's four (:func:`guess_language`),
    ``"other"`` for a text mostly in another script (Russian, Chinese…), "" when it cannot tell."""
    letters = [character for character in text if character.isalpha()]
    if letters and sum(character < "\u0250" for character in letters) < len(letters) / 2:
        return "other"
    return guess_language(text)


def _same_language(language: str, example: SolvedExample) -> bool:
    """Whether a question in *language* (:func:`language_of`) and *example* are in one language, as far as
    anyone can tell: an unknown side counts as the same."""
    if not language or (not example.language and language != "other"):
        return True
    return language == (example.language or language_of(example.question))


def _fused(rankings: list[list[Match]], constant: int, words_weight=lambda match: 1.0) -> list[Match]:
    """Reciprocal rank fusion of *rankings* (by words first): each example scored by the sum, over the rankings it
    is in, of 1 / (*constant* + its rank), its rank by words weighted by *words_weight* (its match); what any
    ranking found that the example's query uses is kept."""
    fused: dict[int, Match] = {}
    for index, ranking in enumerate(rankings):
        for rank, match in enumerate(ranking, 1):
            found = fused.setdefault(match.example.id, Match(match.example, 0.0))
            found.score += (words_weight(match) if index == 0 else 1.0) / (constant + rank)
            found.shows |= match.shows
            found.shares_words |= match.shares_words
            found.cosine = match.cosine if match.cosine is not None else found.cosine
            found.usual = match.usual if match.cosine is not None else found.usual
    return sorted(fused.values(), key=lambda match: -match.score)


def prompt_examples(matches: list[Match], tokens: int = PROMPT_TOKENS) -> list[PromptExample]:
    """The examples of *matches*, in their order, that fit whole in *tokens* (estimated) together.

    Each is shown whole, as data (:func:`agent.examples.quoted.prompt_example`):
    its question plain and quoted as a JSON string, its query as posted, in
    fewer characters, on one line.  Nothing is cut: an example that would
    not fit, or that cannot be shown whole and safely, is left out and the
    next one tried.
    """
    shown = []
    left = tokens
    for match in matches:
        example = prompt_example(match.example.question, match.example.sparql)
        if example is None:
            continue
        question, query = example
        size = estimated_tokens(f"- {question} → {query}\n")
        if size <= left:
            shown.append(PromptExample(question, query))
            left -= size
    return shown
