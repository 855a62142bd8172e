"""Text from others (the asker, the model, a graph's labels and values) as a page can show it.

One definition for every reader that shows such text: the bot's wikitext
(:mod:`bot.wikitext`) and the chat page (:mod:`serve.events`) both clean it
here before they encode it their own way.
"""

from __future__ import annotations

import re
import unicodedata

_LINE_BREAKS = re.compile(r"\r\n|[\n\r\u0085\u2028\u2029]")


def dropped(char: str) -> bool:
    """Characters a page cannot show or MediaWiki would rewrite at save time: controls, surrogates,
    format characters (bidi overrides) and noncharacters."""
    category = unicodedata.category(char)
    code = ord(char)
    return (category in ("Cc", "Cs", "Cf") and char not in "\t\n") or (0xFDD0 <= code <= 0xFDEF) \
        or (code & 0xFFFE) == 0xFFFE


def clean(text: str) -> str:
    """*text* as MediaWiki would store it: NFC, ``\\n`` line breaks, nothing it cannot show."""
    text = unicodedata.normalize("NFC", _LINE_BREAKS.sub("\n", str(text)))
    return "".join(char for char in text if not dropped(char))
