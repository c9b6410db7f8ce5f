"""A package that re-exports its registry class: ``from .tools import Shop``."""

from .tools import Shop

__all__ = ["Shop"]
