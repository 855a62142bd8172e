"""The Wikidata Query Service's "Try it!" link: the one place that knows how a query opens there, for the bot's
replies and the chat page alike."""

from __future__ import annotations

QUERY_SERVICE = "https://query.wikidata.org/#"


def query_service_link(query: str) -> str:
    """The query service URL that opens *query* exactly: every byte but letters and digits percent-encoded,
    so the URL holds no wikitext (not even ``~~~`` or ``__``)."""
    data = query.encode("utf-8", "surrogatepass")
    return QUERY_SERVICE + "".join(chr(byte) if chr(byte).isascii() and chr(byte).isalnum() else f"%{byte:02X}"
                                   for byte in data)
