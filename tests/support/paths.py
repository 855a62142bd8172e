"""Where the checkout and its test material are, for a test module at any depth under ``tests/``."""

from pathlib import Path

#: The checkout: ``setup.cfg``, the packages, ``user-config.py``.
ROOT = Path(__file__).resolve().parent.parent.parent
#: The named test material: forum snippets, graphs, the hostile corpus, KQA Pro's fixture.
FIXTURES = ROOT / "tests" / "fixtures"
