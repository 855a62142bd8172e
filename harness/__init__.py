"""The evaluation harness: datasets, metrics, runs, reports and the upstream replay.

It drives the :mod:`agent` package, which the bot shares; its heavier
dependencies (SciPy, Matplotlib) come with the ``[eval]`` extra.
"""


def __getattr__(name: str):
    """``harness.evaluate(...)``: a whole run as one call (:mod:`harness.run`), imported when first asked for, so
    that ``import harness.datasets`` stays light."""
    if name == "evaluate":
        from harness.run import evaluate

        return evaluate
    raise AttributeError(f"module 'harness' has no attribute {name!r}")
