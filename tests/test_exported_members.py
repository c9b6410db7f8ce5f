"""``llm_worker.__all__`` lists exactly the public names, and they present as ``llm_worker.X``."""

from __future__ import annotations
import __future__

import inspect
import pickle
import types
from typing import Any

import pytest

import llm_worker


def defined_public_names() -> list[str]:
    """Public names bound in the package namespace, minus imported modules and __future__ flags."""
    return sorted(
        name
        for name, value in vars(llm_worker).items()
        if not name.startswith("_")
        and not isinstance(value, types.ModuleType)
        and not isinstance(value, __future__._Feature)
    )


def public_classes_and_functions() -> list[Any]:
    return [
        getattr(llm_worker, name)
        for name in llm_worker.__all__
        if inspect.isclass(getattr(llm_worker, name))
        or inspect.isfunction(getattr(llm_worker, name))
    ]


class TestAll:
    def test_all_is_sorted_public_names(self) -> None:
        """__all__ names exactly the public names the package defines (ruff keeps it sorted)."""
        assert sorted(llm_worker.__all__) == defined_public_names()

    def test_no_duplicates(self) -> None:
        """No name appears twice in __all__."""
        assert len(set(llm_worker.__all__)) == len(llm_worker.__all__)

    def test_star_import(self) -> None:
        """``from llm_worker import *`` binds exactly the names of __all__."""
        namespace: dict[str, Any] = {}
        exec("from llm_worker import *", namespace)
        namespace.pop("__builtins__")
        assert sorted(namespace) == sorted(llm_worker.__all__)

    @pytest.mark.parametrize(
        "name",
        [
            "ToolMeta",
            "LlmToolDefinition",
            "Tool",
            "ToolDefinition",
            "ToolError",
            "InvalidArgumentError",
            "ExecutionFailedError",
            "InternalToolError",
            "ToolServerError",
            "DuplicateToolError",
            "ToolNotFoundError",
            "ToolExecutionError",
            "ToolServer",
            "ToolServerHandle",
            "Description",
            "tool",
            "tool_registry",
            "tool_definitions",
            "tool_metas",
            "ToolMethod",
            "BoundToolMethod",
        ],
    )
    def test_spec_names_exported(self, name: str) -> None:
        """Every name the SPEC lists for sections 1-3 is in __all__."""
        assert name in llm_worker.__all__

    @pytest.mark.parametrize("name", ["is_tool_registry"])
    def test_names_added_by_issues_exported(self, name: str) -> None:
        """Public names the issues added beyond the SPEC are in __all__ too."""
        assert name in llm_worker.__all__


class TestPublicModule:
    def test_classes_and_functions_found(self) -> None:
        """The package exports classes and functions (guards the checks below from vacuity)."""
        assert len(public_classes_and_functions()) >= 20

    @pytest.mark.parametrize("obj", public_classes_and_functions(), ids=lambda obj: obj.__name__)
    def test_module_is_llm_worker(self, obj: Any) -> None:
        """Each public class and function says __module__ == "llm_worker"."""
        assert obj.__module__ == "llm_worker"

    @pytest.mark.parametrize("obj", public_classes_and_functions(), ids=lambda obj: obj.__name__)
    def test_name_matches_export(self, obj: Any) -> None:
        """Each public class and function is exported under its own __name__ and __qualname__."""
        assert getattr(llm_worker, obj.__name__) is obj
        assert obj.__qualname__ == obj.__name__

    @pytest.mark.parametrize("obj", public_classes_and_functions(), ids=lambda obj: obj.__name__)
    def test_pickles_by_public_name(self, obj: Any) -> None:
        """Pickle finds each public class and function as llm_worker.<name>."""
        dumped = pickle.dumps(obj)
        assert b"llm_worker" in dumped
        assert b"llm_worker._" not in dumped
        assert pickle.loads(dumped) is obj

    def test_traceback_name(self) -> None:
        """An error's type reads llm_worker.ToolNotFoundError, not the private module."""
        error = llm_worker.ToolNotFoundError("x")
        assert f"{type(error).__module__}.{type(error).__qualname__}" == (
            "llm_worker.ToolNotFoundError"
        )


def test_every_public_name_is_in_the_guides_index() -> None:
    """docs/index.md's table says where each public name is documented: none is missing."""
    from pathlib import Path

    index = (Path(__file__).resolve().parent.parent / "docs" / "index.md").read_text()
    missing = [name for name in llm_worker.__all__ if f"`{name}`" not in index]
    assert missing == []
