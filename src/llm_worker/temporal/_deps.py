"""A durable run's ``deps`` travel as JSON data: into the workflow, and into each tool call.

In a process, ``run(..., deps=...)`` hands tools any object. A durable run's
deps are part of the workflow's input and of every tool call activity's, so
they must be data: with ``deps_type`` (a dataclass, a pydantic model, a
TypedDict...) they are written and read by pydantic (``TypeAdapter``), and are
a ``deps_type`` instance again in the workflow's hooks and in the tools;
without one, they must already be JSON data (or ``None``).
"""

from __future__ import annotations

import sys
from typing import Any

from pydantic import TypeAdapter
from typing_extensions import is_typeddict

__all__ = ["DepsCodec"]


class DepsCodec:
    """Writes and reads one worker's deps: through ``deps_type`` if it has one."""

    __slots__ = ("_adapter", "deps_type")

    def __init__(self, deps_type: type[Any] | None) -> None:
        if (
            deps_type is not None
            and is_typeddict(deps_type)
            and type(deps_type).__module__ == "typing"
            and sys.version_info < (3, 12)
        ):  # said here, not at the first run: pydantic cannot read it
            raise TypeError(
                f"deps_type {deps_type.__qualname__} is a typing.TypedDict, which pydantic "
                f"cannot read before Python 3.12: declare it with typing_extensions.TypedDict"
            )
        self.deps_type = deps_type
        self._adapter: TypeAdapter[Any] | None = None

    def dump(self, deps: object) -> object:
        """``deps`` as JSON data (``None`` stays ``None``)."""
        if deps is None or self.deps_type is None:
            return deps
        return self.adapter().dump_python(deps, mode="json")

    def load(self, data: object) -> Any:
        """The deps ``dump`` wrote (``None`` stays ``None``)."""
        if data is None or self.deps_type is None:
            return data
        return self.adapter().validate_python(data)

    def adapter(self) -> TypeAdapter[Any]:
        # Built on first use: a worker without deps never pays for it.
        if self._adapter is None:
            assert self.deps_type is not None
            self._adapter = TypeAdapter(self.deps_type)
        return self._adapter
