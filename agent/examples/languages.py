"""The forum's four most common languages (English, German, French, Spanish), told apart by their function words.

One list serves two jobs: guessing an archived request's language, and
leaving those words out when two requests are compared across languages
(:meth:`agent.examples.retrieval.Retriever.same_request`): "Wer waren die
Doktorväter von Carl Friedrich Gauß?" and "Who were the doctoral advisors
of Carl Friedrich Gauss?" share no function word, and need not.
"""

from __future__ import annotations

import re
from collections import Counter

from agent.kb.local.search import fold

FUNCTION_WORDS: dict[str, frozenset[str]] = {
    "en": frozenset("""the a an and or of to in on at by for from with is are was were be been has have had do does did
        which what who whom whose when where how why all that this these those there it its his her their they he
        she we you i me my our your not no as than then also any some each every give me list show find get want
        would could can please""".split()),
    "de": frozenset("""der die das den dem des ein eine einen einem einer eines und oder von zu im in am an auf aus bei
        mit nach für ist sind war waren wird werden wurde wurden hat haben hatte welche welcher welches welchen was wer
        wen wem wessen wann wo wie warum alle allen dass diese dieser dieses es sein seine ihr ihre sie er wir ich
        mich mir nicht kein keine als auch gibt gib zeige liste finde bitte""".split()),
    "fr": frozenset("""le la les l un une des du de d et ou à au aux en dans sur par pour avec est sont était étaient
        été a ont avait quel quelle quels quelles que qui quoi quand où comment pourquoi tous toutes tout ce cet
        cette ces il elle ils elles son sa ses leur leurs je me moi nous vous ne pas plus aussi donne liste
        montre trouve""".split()),
    "es": frozenset("""el la los las lo un una unos unas del de y o a al en con por para es son era eran fue fueron
        ha han había cual cuál cuales cuáles que qué quien quién quienes cuando cuándo donde dónde como cómo
        todos todas todo este esta estos estas ese esa su sus él ella ellos yo me mi nosotros no más también
        dame lista muestra encuentra""".split()),
}
#: Every language's function words, folded as the retriever folds words (case and accents).
ANY_FUNCTION_WORD = frozenset(fold(word) for words in FUNCTION_WORDS.values() for word in words)


def guess_language(text: str) -> str:
    """The language whose function words *text* uses most; "" when it uses none of them."""
    words = Counter(re.findall(r"\w+", text.lower()))
    scores = {language: sum(words[word] for word in common) for language, common in FUNCTION_WORDS.items()}
    best = max(scores, key=lambda language: scores[language])
    return best if scores[best] else ""
