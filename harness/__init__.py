"""The evaluation harness: datasets, metrics, runs, reports and the upstream replay.

It drives the :mod:`agent` package, which the bot shares; its heavier
dependencies (SciPy, Matplotlib) come with the ``[eval]`` extra.
"""
