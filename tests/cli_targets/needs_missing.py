"""Importing this module fails: it needs a package that is not installed."""

from __future__ import annotations

import llm_worker_test_missing_dependency  # noqa: F401
