"""The long rivers of Germany, the world of the reply tests: the query service's answers (41 rows for the
unfiltered draft, 6 for the final query) and the entities the model looks up."""

from __future__ import annotations

from tests.support.wikidata_server import FakeWikidata, entity, select

#: (item, label, length in km, basin in km²) of the six rivers the final query finds.
RIVERS = [("Q584", "Rhine", 1233, 185000), ("Q1653", "Danube", 2850, 801463), ("Q1676", "Elbe", 1094, 148268),
          ("Q552", "Oder", 866, 118861), ("Q1660", "Main", 527, 27292), ("Q1668", "Weser", 744, 46306)]


def decimal(value: float) -> dict:
    return {"type": "literal", "value": str(value), "datatype": "http://www.w3.org/2001/XMLSchema#decimal"}


def rivers(query: str):
    """The query service's answer: 41 rivers for the unfiltered draft, 6 for the final query."""
    if "basin_km2" in query:
        return select(["river", "riverLabel", "length", "basin_km2"], [
            {"river": item, "riverLabel": {"type": "literal", "value": label, "xml:lang": "en"},
             "length": decimal(length), "basin_km2": decimal(basin)} for item, label, length, basin in RIVERS])
    return select(["river", "length"], [{"river": f"Q{1000 + number}", "length": decimal(100 + 10 * number)}
                                        for number in range(41)])


def add_river_entities(wikidata: FakeWikidata) -> FakeWikidata:
    """*wikidata* with the item and the two properties the rivers question is about."""
    wikidata.add(entity("Q4022", "river", "natural flowing watercourse"),
                 entity("P2043", "length", "measured dimension of an object", datatype="quantity"),
                 entity("P2053", "watershed area", "size of a stream's watershed", datatype="quantity"))
    return wikidata
