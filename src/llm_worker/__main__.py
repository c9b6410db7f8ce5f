"""``python -m llm_worker schema ...``: the same command as the ``llm-worker`` console script."""

from __future__ import annotations

import sys

from ._cli import main

if __name__ == "__main__":
    sys.exit(main(prog="python -m llm_worker"))
