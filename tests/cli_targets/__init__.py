"""Small modules the CLI tests use as ``llm-worker schema`` targets (``cli_targets.<module>``)."""
