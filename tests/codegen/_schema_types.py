"""Models named like some in test_schema.py, for tests where two types share one name."""

from pydantic import BaseModel


class Window(BaseModel):
    opens: int


class Flag(BaseModel):
    on: int | bool = 1


class Same(BaseModel):
    a: int
