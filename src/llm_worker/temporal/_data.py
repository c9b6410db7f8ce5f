"""What a durable run carries as JSON data: its ``deps``, and its structured answer.

In a process, ``run(..., deps=...)`` hands tools any object, and ``worker.output``
is any value. A durable run's deps are part of the workflow's input and of every
tool call activity's, and its answer part of the workflow's result, so they
travel as data: with a type (``deps_type``, ``output_type``: a dataclass, a
pydantic model, a TypedDict...) they are written and read by pydantic
(``TypeAdapter``), and are an instance of the type again where they arrive;
without one, deps must already be JSON data (or ``None``).
"""

from __future__ import annotations

import sys
from typing import Any

from pydantic import TypeAdapter
from typing_extensions import is_protocol, is_typeddict

__all__ = ["DataCodec"]


class DataCodec:
    """Writes and reads the values of one type as JSON data: through ``data_type`` if given.

    ``role`` is the keyword that gave the type (``"deps_type"``), for its errors.
    """

    __slots__ = ("_adapter", "data_type")

    def __init__(self, data_type: Any, role: str) -> None:
        if (
            data_type is not None
            and is_typeddict(data_type)
            and type(data_type).__module__ == "typing"
            and sys.version_info < (3, 12)
        ):  # said here, not at the first run: pydantic cannot read it
            raise TypeError(
                f"{role} {data_type.__qualname__} is a typing.TypedDict, which pydantic "
                f"cannot read before Python 3.12: declare it with typing_extensions.TypedDict"
            )
        if isinstance(data_type, type) and is_protocol(data_type):
            # A Worker's deps may be described by a Protocol; a durable run's are data,
            # made again where they arrive, so they need a type that says how.
            raise TypeError(
                f"{role} {data_type.__qualname__} is a Protocol, from which pydantic cannot "
                f"make the values again where a durable run reads them: give a dataclass, a "
                f"pydantic model or a TypedDict"
            )
        self.data_type = data_type
        self._adapter: TypeAdapter[Any] | None = None

    def dump(self, value: object) -> object:
        """``value`` as JSON data (``None`` stays ``None``)."""
        if value is None or self.data_type is None:
            return value
        # By field name, without computed fields (round_trip): what `load` takes back
        # whatever aliases the type declares (a validation_alias, a serialization_alias)
        # and even if it forbids extra keys.
        return self.adapter().dump_python(value, mode="json", by_alias=False, round_trip=True)

    def load(self, data: object) -> Any:
        """The value ``dump`` wrote (``None`` stays ``None``)."""
        if data is None or self.data_type is None:
            return data
        # By name (what `dump` writes), or by alias (as pydantic validates by default).
        return self.adapter().validate_python(data, by_alias=True, by_name=True)

    def adapter(self) -> TypeAdapter[Any]:
        # Built on first use: a worker without deps never pays for it.
        if self._adapter is None:
            assert self.data_type is not None
            self._adapter = TypeAdapter(self.data_type)
        return self._adapter
