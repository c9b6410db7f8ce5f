"""A second ``Window`` model, for tests where two types share one name."""

from pydantic import BaseModel


class Window(BaseModel):
    opens: int
