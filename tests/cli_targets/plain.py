"""A module without registry classes."""

from __future__ import annotations


class Plain:
    def search(self, query: str) -> str:
        return query


def helper() -> None:
    """Not a class."""
