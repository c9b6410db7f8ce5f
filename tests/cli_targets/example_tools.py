"""The example tools behind the golden files in ``tests/golden/``.

Between them the parameters cover: required and optional scalars, a default
that is not None, a nested model (optional and in a list), a list of strings,
an Enum, a Literal, a union, a discriminated union, a recursive model, a tuple,
numeric and string constraints, a date, descriptions from ``Description``,
``Field`` and the docstring, and a tool without parameters.
"""

from __future__ import annotations

import datetime
import enum
from typing import Annotated, Literal

from pydantic import BaseModel, Field

from llm_worker import Description, tool, tool_registry


class Color(enum.Enum):
    """A label colour."""

    RED = "red"
    GREEN = "green"
    BLUE = "blue"


class Priority(enum.IntEnum):
    LOW = 1
    HIGH = 2


class Address(BaseModel):
    """A postal address."""

    street: str
    city: str = "Springfield"
    postcode: str | None = None


class Category(BaseModel):
    """A category and its subcategories (a recursive model)."""

    name: str
    children: list[Category] = []
    parent: Category | None = None


class Cat(BaseModel):
    kind: Literal["cat"] = "cat"
    lives: int = 9


class Dog(BaseModel):
    kind: Literal["dog"] = "dog"
    good: bool = True


@tool_registry
class Library:
    """A library catalogue, offered to the model as tools."""

    @tool
    async def search(
        self,
        query: Annotated[
            str, Description("What to look for: a title, an author… («quoted» works)")
        ],
        limit: Annotated[int, Field(ge=1, le=100, description="At most this many results")] = 10,
        order: Literal["asc", "desc"] = "asc",
        tags: list[str] | None = None,
        published_after: datetime.date | None = None,
    ) -> str:
        """Search the catalogue.

        Returns the matching titles, best first.

        Args:
            tags: Only books with all of these tags.
        """
        return query

    @tool
    def add_book(
        self,
        title: Annotated[str, Field(min_length=1)],
        color: Color,
        priority: Priority = Priority.LOW,
        address: Address | None = None,
        shelf: int | str = 1,
        score: Annotated[float, Field(gt=0, lt=5, multiple_of=0.5)] = 2.5,
    ) -> str:
        """Add a book to the catalogue."""
        return title

    @tool
    def file_under(
        self,
        category: Annotated[Category, Description("Where the book goes")],
        also: list[Category] = [],  # noqa: B006 - defaults are copied by pydantic
    ) -> str:
        """File a book under a category tree."""
        return category.name


@tool_registry
class Shelter:
    @tool(name="adopt")
    async def adopt_pet(
        self,
        pet: Annotated[Cat | Dog, Field(discriminator="kind")],
        homes: list[Address],
        position: tuple[int, int] = (0, 0),
    ) -> str:
        """Adopt a pet."""
        return "ok"

    @tool
    async def ping(self) -> str:
        return "pong"
