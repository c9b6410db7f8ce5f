"""``llm_worker.__all__`` lists exactly the public names, and they present as ``llm_worker.X``."""

from __future__ import annotations
import __future__

import ast
import inspect
import pickle
import subprocess
import sys
import types
from pathlib import Path
from typing import Any

import pytest

import llm_worker


def defined_public_names() -> list[str]:
    """Public names bound in the package namespace, minus imported modules and __future__ flags
    (each name of ``__all__`` looked up first: they load when first used)."""
    for name in llm_worker.__all__:
        getattr(llm_worker, name)
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
        if is_class(getattr(llm_worker, name)) or inspect.isfunction(getattr(llm_worker, name))
    ]


def is_class(value: object) -> bool:
    """``inspect.isclass``, minus the aliases (``ToolDefinition = Callable[...]``) that pass
    for classes on Python 3.10, where a generic alias forwards ``__class__``."""
    return inspect.isclass(value) and not isinstance(value, types.GenericAlias)


class TestLazyLoading:
    def test_the_table_matches_what_type_checkers_read(self) -> None:
        """``_HOMES`` (what loads each name at run time) and the ``TYPE_CHECKING`` imports (what
        mypy and pyright read) name the same names from the same modules."""
        source = Path(llm_worker.__file__).read_text(encoding="utf-8")
        [block] = [
            node
            for node in ast.parse(source).body
            if isinstance(node, ast.If) and ast.unparse(node.test) == "typing.TYPE_CHECKING"
        ]
        imported = {
            alias.name: "." + node.module
            for node in block.body
            if isinstance(node, ast.ImportFrom) and node.module is not None
            for alias in node.names
        }
        assert imported == llm_worker._HOMES
        assert sorted(imported) == sorted(llm_worker.__all__)

    def test_import_loads_no_module_of_the_library(self) -> None:
        """``import llm_worker`` alone loads none of its modules; a name loads its own and
        presents every public name of the modules that came with it as ``llm_worker.X``."""
        code = (
            "import sys, llm_worker\n"
            "print(sorted(m for m in sys.modules if m.startswith('llm_worker.')))\n"
            "from llm_worker import Worker\n"
            "import llm_worker._conversation as c\n"
            "print(Worker.__module__, c.ToolCall.__module__, 'ToolCall' in vars(llm_worker))"
        )
        done = subprocess.run(
            [sys.executable, "-c", code], capture_output=True, text=True, timeout=60, check=True
        )
        assert done.stdout.splitlines() == ["[]", "llm_worker llm_worker True"]

    def test_names_looked_up_from_many_threads_at_once(self) -> None:
        """Threads that look up names of different modules at the same moment, in a fresh
        interpreter, each get their name, presented as ``llm_worker.X``."""
        code = (
            "import threading, llm_worker\n"
            "names = sorted(llm_worker.__all__)\n"
            "barrier = threading.Barrier(8)\n"
            "found = {}\n"
            "def look(offset):\n"
            "    barrier.wait()\n"
            "    for name in names[offset::8]:\n"
            "        found[name] = getattr(llm_worker, name)\n"
            "threads = [threading.Thread(target=look, args=(i,)) for i in range(8)]\n"
            "for thread in threads: thread.start()\n"
            "for thread in threads: thread.join()\n"
            "wrong = [n for n, v in found.items() if getattr(v, '__module__', 'llm_worker')\n"
            "         .startswith('llm_worker.')]\n"
            "print(len(found) == len(names), wrong)"
        )
        for _ in range(3):
            done = subprocess.run(
                [sys.executable, "-c", code], capture_output=True, text=True, timeout=60, check=True
            )
            assert done.stdout.strip() == "True []", done.stderr

    def test_an_unknown_name_is_an_attribute_error(self) -> None:
        with pytest.raises(AttributeError, match="module 'llm_worker' has no attribute 'Wroker'"):
            llm_worker.Wroker  # type: ignore[attr-defined]  # noqa: B018


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
