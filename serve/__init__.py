"""The agent as a service: the TEXT2SPARQL API and a chat page that shows the agent's steps as it takes them.

``spinach-serve`` (:mod:`serve.__main__`) starts one server for the graphs it
is given; :mod:`serve.app` builds the web application, :mod:`serve.runs`
decides which questions run when, :mod:`serve.text2sparql` and
:mod:`serve.chat` are the two ways in.
"""
