"""What every command line of the project shares: the name it goes by in its usage line.

Installed as a console script (``spinach-bot``), a command is called by that
name; run as a module, by ``python -m <module>``.  argparse's default would
show ``run.py`` or ``__main__.py``.
"""

from __future__ import annotations

import os
import sys


def program_name(module: str) -> str:
    """The console script's name when run as one, else ``python -m <module>``."""
    name = os.path.basename(sys.argv[0]) if sys.argv and sys.argv[0] else ""
    if not name or name.endswith(".py") or name.startswith("-") or name.startswith("python"):
        return f"python -m {module}"
    return name
