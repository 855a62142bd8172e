"""Solved examples: the forum's memory, for the agent's first prompt and the bot's reply.

:mod:`agent.examples.store` keeps them in one SQLite file,
:mod:`agent.examples.naming` names the properties they use from the
knowledge base, :mod:`agent.examples.retrieval` finds the ones most like a
question (BM25 over the question's words and the properties it names, fused
with the vectors of :mod:`agent.examples.meaning`) and gives the prompt
those that fit whole, each as data (:mod:`agent.examples.quoted`: other
people's words, quoted, never instructions).  The command ``spinach-examples``
(:mod:`scripts.examples`) builds, updates and searches a store.
"""

from agent.examples.retrieval import Match, PromptExample, Retriever, prompt_examples
from agent.examples.store import ExampleStore, SolvedExample, ThreadRef

__all__ = ["ExampleStore", "Match", "PromptExample", "Retriever", "SolvedExample", "ThreadRef", "prompt_examples"]
