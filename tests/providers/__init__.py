"""Tests of ``llm_worker.providers``: real SDKs against a local server speaking each wire format."""
