"""The agent's Jinja2 prompt templates (``*.j2``), shipped as package data.

A package rather than a plain directory so that an installed wheel carries
the templates and :mod:`agent.prompts` finds them with ``jinja2.PackageLoader``
wherever the code is installed, not only in a checkout.
"""
