"""Make text from the LLM, from Wikidata labels or from the asker inert in wikitext.

Nothing that passes through here can become a link, template, category, magic
word, signature, heading, list, table or HTML element in a reply:

* :func:`inline` and :func:`preformatted` escape ``& < >`` and ``~`` as HTML
  entities and wrap the text in ``<nowiki>`` or ``<pre>``, which MediaWiki
  keeps out of both the parser and the signature expansion at save time.
* :func:`safe_sparql` rewrites a query so that it holds no wikitext at all
  while meaning the same: SPARQL ignores white space between tokens, and its
  ``\\uXXXX`` escapes (decoded before the query is parsed) can spell any
  character inside literals and IRIs.  Comments are left out.
"""

from __future__ import annotations

import re

#: Characters spelt as ``\\uXXXX`` inside SPARQL literals: each could start wikitext markup.
_LITERAL_ESCAPES = frozenset("~{}[]|<>")
_TOKEN = re.compile(
    r'"""(?:[^"\\]|\\.|"(?!""))*(?:"""|$)'
    r"|'''(?:[^'\\]|\\.|'(?!''))*(?:'''|$)"
    r'|"(?:[^"\\\n]|\\.)*(?:"|$)'
    r"|'(?:[^'\\\n]|\\.)*(?:'|$)"
    r"|<[^<>\"{}|^`\\\s]*>"
    r"|#[^\n]*",
    re.DOTALL,
)


def inline(text: str, limit: int | None = None) -> str:
    """One line of untrusted text, shown as it is (cut at *limit* characters)."""
    text = " ".join(str(text).split())
    if limit is not None and len(text) > limit:
        text = text[: limit - 1] + "…"
    return f"<nowiki>{_entities(text)}</nowiki>" if text else ""


def preformatted(text: str) -> str:
    """Untrusted text over several lines, in a ``<pre>`` block."""
    return f"<pre>{_entities(str(text))}</pre>"


def _entities(text: str) -> str:
    return text.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;").replace("~", "&#126;")


def _escape(char: str) -> str:
    return f"\\u{ord(char):04X}"


def _spell(body: str, characters: frozenset[str]) -> str:
    """Spell *characters* and the second of every ``__`` as SPARQL escapes."""
    body = "".join(_escape(char) if char in characters else char for char in body)
    return body.replace("__", "_" + _escape("_"))


def _iri(token: str) -> str:
    """An IRI: ``~``, ``[[ ]]`` and ``__`` spelt out; a relative one that could pass for a tag gets its first
    character spelt too (``<ref>``, ``</syntaxhighlight>``)."""
    body = _spell(token[1:-1], frozenset("~")).replace("[[", "[" + _escape("[")).replace("]]", "]" + _escape("]"))
    if body and ":" not in body and (body[0].isalpha() or body[0] == "/"):
        body = _escape(body[0]) + body[1:]
    return f"<{body}>"


def _literal(token: str) -> str:
    quote = 3 if token[:3] in ('"""', "'''") else 1
    closed = len(token) >= 2 * quote and token.endswith(token[:quote])
    end = len(token) - quote if closed else len(token)
    return token[:quote] + _spell(token[quote:end], _LITERAL_ESCAPES) + token[end:]


def _code(text: str) -> str:
    """Query text outside literals, IRIs and comments: separate braces and brackets, break runs."""
    text = re.sub(r"([{}\[\]])(?=[{}\[\]])", r"\1 ", text)
    text = text.replace("~", " ~ ").replace("__", "_x_")
    return text


def safe_sparql(query: str) -> str:
    """The same query, free of wikitext: no ``{{ }} [[ ]] ~~~ __MAGIC__``, tags or comments."""
    pieces: list[str] = []
    position = 0
    for match in _TOKEN.finditer(query):
        pieces.append(_code(query[position:match.start()]))
        token = match.group(0)
        if token.startswith("#"):
            pass  # a comment: left out
        elif token.startswith("<"):
            pieces.append(_iri(token))
        else:
            pieces.append(_literal(token))
        position = match.end()
    pieces.append(_code(query[position:]))
    text = "".join(pieces)
    return "\n".join(line.rstrip() for line in text.splitlines()).strip()


def sparql_template(query: str) -> str:
    """``{{SPARQL|query=...}}`` whose "Try it!" link runs :func:`safe_sparql` of *query*."""
    # Bars become {{!}}, spaced so that no brace of the query can join a template's braces;
    # the newline keeps a closing brace of the query apart from the template's (MediaWiki trims it).
    body = re.sub(r"\|+", lambda bars: " " + "{{!}}" * len(bars.group(0)) + " ", safe_sparql(query))
    return "{{SPARQL|query=" + body + "\n}}"


def syntaxhighlight(query: str) -> str:
    """A query shown in ``<syntaxhighlight lang="sparql">`` (its content is raw: the query must be safe)."""
    return f'<syntaxhighlight lang="sparql">{safe_sparql(query)}</syntaxhighlight>'
