"""The SPARQL tokenizer: lossless on every real gold query and on any text, right on the tricky cases."""

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from agent.sparql_lexer import KINDS, tokenize


def kinds(query: str) -> list[tuple[str, str]]:
    return [(token.kind, token.text) for token in tokenize(query) if token.kind != "space"]


def test_every_gold_query_round_trips_with_no_unknown_token(gold_queries):
    queries = gold_queries
    assert len(queries) == 714
    for query in queries:
        tokens = tokenize(query)
        assert "".join(token.text for token in tokens) == query
        assert all(query[token.start:token.start + len(token.text)] == token.text for token in tokens)
        assert [token.text for token in tokens if token.kind == "unknown"] == [], query


@settings(max_examples=400, deadline=None)
@given(st.text(alphabet=st.characters(codec=None, exclude_categories=()), max_size=80)
       | st.text(alphabet="<>\"'#\\:?$_@.{}|~\n\r\t aZ09%-", max_size=80))
def test_any_text_round_trips(text):
    tokens = tokenize(text)
    assert "".join(token.text for token in tokens) == text
    assert all(token.kind in KINDS and token.text for token in tokens)


@pytest.mark.parametrize(("query", "expected"), [
    # PN_LOCAL_ESC keeps the tokenizer in step: the quote, hash and tilde belong to the name.
    ("ex:it\\'s \"<!--\"", [("pname", "ex:it\\'s"), ("string", '"<!--"')]),
    ("ex:a\\#b ex:c\\~d", [("pname", "ex:a\\#b"), ("pname", "ex:c\\~d")]),
    ("ex:%41b wd:Q5.", [("pname", "ex:%41b"), ("pname", "wd:Q5"), ("punct", ".")]),
    (":local :", [("pname", ":local"), ("pname", ":")]),
    # A prefix may hold dots but not end with one; a run of names without a colon is words.
    ("a.b:c ab.:x a.b", [("pname", "a.b:c"), ("word", "ab"), ("punct", "."), ("pname", ":x"), ("word", "a"),
                         ("punct", "."), ("word", "b")]),
    # IRIs hold any character the grammar allows, comment and tag look-alikes included.
    ("<!--> <http://x/#frag> <ref>", [("iri", "<!-->"), ("iri", "<http://x/#frag>"), ("iri", "<ref>")]),
    ("<http://ex.org/ü~é>", [("iri", "<http://ex.org/ü~é>")]),
    # `<` that opens no IRI is the less-than operator.
    ("FILTER(?a < ?b && ?c<=3)", [("word", "FILTER"), ("punct", "("), ("var", "?a"), ("punct", "<"),
                                    ("var", "?b"), ("punct", "&&"), ("var", "?c"), ("punct", "<="),
                                    ("number", "3"), ("punct", ")")]),
    ("?a <?b> 2", [("var", "?a"), ("iri", "<?b>"), ("number", "2")]),
    # Strings: escapes, a hash inside, long forms over lines, language tags and datatypes.
    ('"a\\"b#c"@en-GB', [("string", '"a\\"b#c"'), ("langtag", "@en-GB")]),
    ("'''it's\n#no comment''' # comment", [("string", "'''it's\n#no comment'''"), ("comment", "# comment")]),
    ('"""x""\\""""', [("string", '"""x""\\""""')]),
    ('"5"^^xsd:integer', [("string", '"5"'), ("punct", "^^"), ("pname", "xsd:integer")]),
    # Comments, kept whole, including the query service's own directives.
    ("#defaultView:Map\nSELECT", [("comment", "#defaultView:Map"), ("word", "SELECT")]),
    ("?x#c\r\n?y", [("var", "?x"), ("comment", "#c"), ("var", "?y")]),
    # Numbers, variables, blank nodes, keywords.
    ("1. 1.5 .5e-3 2E10 -7", [("number", "1"), ("punct", "."), ("number", "1.5"), ("number", ".5e-3"),
                               ("number", "2E10"), ("punct", "-"), ("number", "7")]),
    ("$v ?ä _:b1 [] a true", [("var", "$v"), ("var", "?ä"), ("bnode", "_:b1"), ("punct", "["), ("punct", "]"),
                              ("word", "a"), ("word", "true")]),
    ("wdt:P31/wdt:P279* ?x", [("pname", "wdt:P31"), ("punct", "/"), ("pname", "wdt:P279"), ("punct", "*"),
                              ("var", "?x")]),
    ("GROUP_CONCAT(?x; separator='|')", [("word", "GROUP_CONCAT"), ("punct", "("), ("var", "?x"), ("punct", ";"),
                                         ("word", "separator"), ("punct", "="), ("string", "'|'"),
                                         ("punct", ")")]),
    # Text that is not SPARQL: unterminated strings and stray characters become unknown, one character each.
    ('"open\n', [("unknown", '"'), ("word", "open")]),
    ("`\x7f", [("unknown", "`"), ("unknown", "\x7f")]),
])
def test_token_kinds(query, expected):
    assert kinds(query) == expected
