"""A target that writes to file descriptor 1, then fails while it is imported."""

import os

os.write(1, b"written before the error\n")
raise RuntimeError("the import fails")
