"""The 714 real gold queries of SPINACH and QALD-10, posted as final queries on a real MediaWiki.

Each is rendered by :func:`bot.render.final_query_wikitext` and parsed by the
wiki (a hundred queries a parse, a test a batch): every one must be shown and linked
exactly as written, the ``{{SPARQL}}`` template must carry nearly all of them
(syntax colouring), and none may bring a link, tag, comment, category,
heading or template of its own.
"""

from __future__ import annotations

import html
import json
import re
import urllib.parse
import urllib.request

import pytest

from agent.query_service import QUERY_SERVICE
from bot.render import final_query_wikitext
from bot.wikitext import fits_sparql_template

BATCH = 100
CHUNK = re.compile(r'<div id="gold-(\d+)">(.*?)<div id="end-\1">', re.DOTALL)
HREF = re.compile(r'<a [^>]*href="([^"]*)"')


def parse(api_url: str, text: str) -> dict:
    """``action=parse`` of *text*, sent as a POST (a batch of queries is too long for a URL)."""
    body = urllib.parse.urlencode({"action": "parse", "text": text, "contentmodel": "wikitext", "format": "json",
                                   "formatversion": "2", "disablelimitreport": "1", "title": "Gold queries",
                                   "prop": "text|links|templates|externallinks|categories|sections|properties"})
    with urllib.request.urlopen(api_url, data=body.encode(), timeout=300) as response:
        return json.load(response)["parse"]


def visible_text(fragment: str) -> str:
    """What a reader sees (and copies) of a rendered fragment: tags gone, ``<br>`` as a line break."""
    return html.unescape(re.sub(r"<[^>]+>", "", re.sub(r"<br\s*/?>", "\n", fragment)))


def batch_page(queries: list[str], first: int) -> str:
    """The queries as one page, each between markers that no query text can forge (it is escaped)."""
    return "".join(f'<div id="gold-{first + i}">\n{final_query_wikitext(query)}\n</div><div id="end-{first + i}">'
                   "</div>\n" for i, query in enumerate(queries))


def test_nearly_every_gold_query_fits_the_template(gold_queries):
    assert len(gold_queries) == 714
    assert sum(fits_sparql_template(query.strip(" \t\r\n")) for query in gold_queries) >= 697


@pytest.mark.parametrize("first", range(0, 714, BATCH))
def test_every_gold_query_is_posted_as_written_and_inert(gold_queries, mediawiki, first):
    """One batch of a hundred (the batches spread over the test processes: the colouring costs a process a query)."""
    gold = gold_queries
    parsed = parse(mediawiki.api_url, batch_page(gold[first:first + BATCH], first))
    assert parsed["links"] == [] and parsed["categories"] == [] and parsed["sections"] == []
    assert parsed["properties"] in ([], {})
    assert {item["title"] for item in parsed["templates"]} <= {"Template:SPARQL"}
    assert all(url.startswith(QUERY_SERVICE) for url in parsed["externallinks"])
    text = parsed["text"]
    assert "<!--" not in text
    chunks = {int(number): chunk for number, chunk in CHUNK.findall(text)}
    assert sorted(chunks) == list(range(first, min(first + BATCH, len(gold))))
    for number, chunk in chunks.items():
        query = gold[number].strip(" \t\r\n")
        [href] = HREF.findall(chunk)  # the one link: "Try it!"
        linked = urllib.parse.unquote(html.unescape(href).removeprefix(QUERY_SERVICE))
        shown = re.search(r"<pre[^>]*>(.*?)</pre>|<div class=\"mw-code\"[^>]*>(.*?)</div>", chunk, re.DOTALL)
        assert shown is not None, chunk
        shown_text = visible_text(shown.group(1) if shown.group(1) is not None else shown.group(2))
        assert linked == query, (number, linked, query)
        assert shown_text.rstrip("\n") == query, (number, shown_text, query)
        # no element but the highlighter's, the link and the block's own
        assert re.sub(r"<(/?)(a|div|pre|span|p|br)\b[^>]*>", "", chunk).count("<") == 0, chunk
