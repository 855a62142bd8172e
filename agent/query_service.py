"""The Wikidata Query Service's "Try it!" link: the one place that knows how a query opens there, for the bot's
replies and the chat page alike."""

from __future__ import annotations

QUERY_SERVICE = "https://query.wikidata.org/#"


def percent_encoded(query: str) -> str:
    """*query* as a link carries it: every byte but ASCII letters and digits percent-encoded, so the URL holds no
    wikitext (not even ``~~~`` or ``__``)."""
    data = query.encode("utf-8", "surrogatepass")
    return "".join(chr(byte) if chr(byte).isascii() and chr(byte).isalnum() else f"%{byte:02X}" for byte in data)


def query_service_link(query: str) -> str:
    """The query service URL that opens *query* exactly (:func:`percent_encoded`)."""
    return QUERY_SERVICE + percent_encoded(query)
