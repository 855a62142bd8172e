"""The SPINACH agent: an LLM that explores Wikidata like an expert and ends on a SPARQL query."""
