"""A target that calls ``sys.exit`` while it is imported (a script's ``argparse``, say)."""

import sys

sys.exit(3)
