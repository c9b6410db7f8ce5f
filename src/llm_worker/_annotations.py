"""What an annotation is, asked the same way on every Python the package supports.

Never with ``isinstance(annotation, type)``: on Python 3.10 a generic alias
given its arguments (``list[Movie]``, a ``types.GenericAlias``) forwards
``__class__`` to what it parametrises, so ``isinstance(list[Movie], type)`` is
True there (3.11 stopped that). Its own type is what it is on every version.
"""

from __future__ import annotations

from typing import Any, TypeGuard

__all__ = ["is_class"]


def is_class(annotation: Any) -> TypeGuard[type[Any]]:
    """Whether ``annotation`` is a class (``Movie``, ``list``), not a generic alias given its
    arguments (``list[Movie]``)."""
    return issubclass(type(annotation), type)
