"""What reaches the model from the forum's memory is data: each example in the one form the prompt shows.

Anyone can write on the forum, and an archived thread's words reach later
askers' prompts as an example.  No list of phrases covers every language
and encoding a text aimed at the model can take, so an example is shown by
construction as something quoted, never as words to the model
(:func:`prompt_example`):

* its text is read as a person reads it (:func:`plain`): Unicode NFKC
  (full-width letters become plain ones, as do ligatures and other
  compatibility forms), without the characters no reader sees (format
  characters: zero-width, bidirectional controls, the tag characters
  U+E0000–E007F; controls, private use, surrogates, unassigned code points,
  and the other default-ignorable ones: variation selectors, fillers), its
  white space one space;
* its question, whole and at most :data:`QUESTION_CHARS` long (a longer one
  is not shown: a question cut mid-request misleads), is quoted as a JSON string
  on the example's line, ``<`` and ``[`` written as JSON escapes: no line
  break, heading (``### System:``), fence or chat template token
  (``<start_of_turn>``, ``<|im_start|>``, ``[INST]``) can be spelt in it,
  as a server that reads such tokens in a message's text would take them;
* its query is the same query in fewer characters
  (:func:`agent.examples.queries.whole_query`), on one line, at most
  :data:`QUERY_CHARS` long (never cut), and shown only where no chat
  template token can be read in it (:data:`TOKEN_SHAPE`);
* the prompt labels the block as earlier requests written by other people,
  data to compare with and never instructions to follow
  (``prompts/question.j2``).

The phrase filter (:func:`addresses_model`) is the second line: it reads a
text in the same form (and the English hidden in tag characters), so a
thread that speaks to the model is kept out of the store by the harvest
(:mod:`bot.archive`), and such an example from an older store is not shown.
"""

from __future__ import annotations

import json
import re
import unicodedata

from agent.examples.queries import whole_query

#: A question shown at most this long, in characters; a longer one is not shown (a forum post can run to
#: paragraphs, and a question is never cut).
QUESTION_CHARS = 600
#: A query shown at most this long, in characters; a longer one is not shown (a query is never cut).
QUERY_CHARS = 1500
#: Code points no reader sees that Unicode does not class as format or other characters: the rest of
#: Default_Ignorable_Code_Point (a combining grapheme joiner, Hangul fillers, Khmer inherent vowels, Mongolian
#: and other variation selectors).
_IGNORABLE = re.compile("[\u034f\u115f\u1160\u17b4\u17b5\u180b-\u180f\u3164\ufe00-\ufe0f\uffa0"
                        "\U000e0100-\U000e01ef]")
#: Line breaks as :meth:`str.splitlines` knows them.
_LINE_BREAKS = re.compile("\r\n|[\n\r\v\f\x1c\x1d\x1e\x85\u2028\u2029]")
#: How a chat template's token starts, in every family we know of: an angle-bracketed run without a space or a
#: colon (``<start_of_turn>``, ``<bos>``, ``</s>``; an absolute IRI has a colon), ``<|`` (``<|im_start|>``,
#: ``<|eot_id|>``, and DeepSeek's full-width bars once NFKC made them plain), a bracketed upper-case word
#: (``[INST]``, ``[/INST]``, ``[SYSTEM_PROMPT]``) other than the label service's ``[AUTO_LANGUAGE]``.
TOKEN_SHAPE = re.compile(r"<[^\s<>:]*>|<\||\[(?!AUTO_LANGUAGE\])/?[A-Z][A-Z0-9_]*\]")
_TAG_CHARACTERS = re.compile("[\U000e0020-\U000e007e]")


def _visible(text: str, lines: bool) -> str:
    """*text* without the characters no reader sees; white space as one space (line breaks as ``\\n`` when
    *lines*)."""
    if lines:
        text = _LINE_BREAKS.sub("\n", text)
    text = _IGNORABLE.sub("", text)
    return "".join(character if unicodedata.category(character)[0] != "C" or (lines and character == "\n")
                   else " " if character.isspace() else "" for character in text)


def plain(text: str, lines: bool = False) -> str:
    """*text* as a reader sees it: NFKC, without format, control, private-use, surrogate, unassigned and other
    default-ignorable characters, its white space one space (with *lines*, its line breaks ``\\n`` and its other
    white space left as NFKC has it: a query's strings keep their spaces)."""
    text = _visible(unicodedata.normalize("NFKC", _visible(text, lines)), lines)
    return text if lines else " ".join(text.split())


def revealed(text: str) -> str:
    """*text* with the ASCII that tag characters spell (invisible, yet read by some models) made plain letters."""
    return _TAG_CHARACTERS.sub(lambda match: chr(ord(match[0]) - 0xE0000), text)


def quoted_question(question: str) -> str | None:
    """*question* as the prompt quotes it: plain, whole, a JSON string whose ``<`` and ``[`` are escapes;
    ``None`` beyond :data:`QUESTION_CHARS`."""
    text = plain(question)
    if len(text) > QUESTION_CHARS:
        return None
    return json.dumps(text, ensure_ascii=False).replace("<", "\\u003c").replace("[", "\\u005b")


def shown_query(sparql: str) -> str | None:
    """*sparql* as the prompt shows it: read plain (its lines kept, so a comment ends where it did), in fewer
    characters; ``None`` when it cannot be read whole, holds a line break (in a string), is longer than
    :data:`QUERY_CHARS` or could be read as a chat template's token."""
    query = whole_query(plain(sparql, lines=True))
    if query is None or len(query) > QUERY_CHARS or TOKEN_SHAPE.search(query):
        return None
    if any(character.isspace() and character != " " for character in query):
        return None
    return query


def prompt_example(question: str, sparql: str) -> tuple[str, str] | None:
    """An example's question and query as the prompt shows them (:func:`quoted_question`,
    :func:`shown_query`); ``None`` for one not shown: its query cannot be, or its text speaks to the model."""
    query, quoted = shown_query(sparql), quoted_question(question)
    if query is None or quoted is None or addresses_model(question) or addresses_model(sparql):
        return None
    return quoted, query


#: What a request to a person does not say and a text aimed at a language model does: instructions to drop its
#: instructions, words about its prompt, an address to it, a chat template's role markers.  Each is bounded (no
#: nested repetition).  Read in :func:`plain` form: full-width, zero-width-split and tag-character English too.
_TO_THE_MODEL = re.compile(
    r"\b(?:ignore|disregard|forget|override)\b[^\n]{0,40}?\b(?:previous|prior|above|earlier|all|your|these)\b"
    r"[^\n]{0,20}?\b(?:instructions?|prompts?|rules|guidelines)\b"
    r"|\b(?:system|developer)\s+(?:prompt|message|instructions?)\b"
    r"|\byou\s+are\s+(?:now\s+)?(?:an?\s+)?(?:ai|assistant|language\s+model|llm|chatbot|agent)\b"
    r"|\b(?:dear|hey|hello|attention|note\s+to\s+the)\s+(?:ai|llm|language\s+model|assistant|chatgpt|gpt|model)\b"
    r"|\b(?:ignoriere|vergiss)\b[^\n]{0,40}?\b(?:anweisungen|vorgaben|regeln)\b"
    r"|\b(?:ignore[zs]?|oublie[zs]?)\b[^\n]{0,40}?\b(?:instructions|consignes)\b"
    r"|\b(?:ignora|ignore|olvida)[dn]?\b[^\n]{0,40}?\binstrucciones\b"
    r"|<\|im_start\|>|\[/?INST\]|<\|(?:system|user|assistant)\|>|<<\s*SYS\s*>>|<(?:start|end)_of_turn>"
    r"|#{2,}\s*(?:system|instruction|assistant)\s*:",
    re.IGNORECASE)


def addresses_model(text: str) -> bool:
    """Whether *text* speaks to a language model rather than to the forum's people (read as :func:`plain`
    reads it, and with what tag characters spell)."""
    return any(_TO_THE_MODEL.search(plain(form)) is not None for form in dict.fromkeys((text, revealed(text))))
