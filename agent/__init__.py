"""The SPINACH agent: an LLM that explores Wikidata like an expert and ends on a SPARQL query.

>>> from agent import Agent, AgentConfig
>>> from agent.llm import ChatModel, LLMConfig
>>> from agent.kb import open_kb
>>> agent = Agent(llm=ChatModel.from_config(LLMConfig.from_env()), kb=open_kb())  # doctest: +SKIP
>>> result = agent.run("Who were the doctoral advisors of Leonhard Euler?")       # doctest: +SKIP
"""

from agent.loop import Agent, AgentConfig, AgentContext
from agent.trace import AgentResult, Step, Usage

__all__ = ["Agent", "AgentConfig", "AgentContext", "AgentResult", "Step", "Usage"]
