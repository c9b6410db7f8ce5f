"""Tests for the exception hierarchy (``llm_worker._exceptions``)."""

from __future__ import annotations

import pickle

import pytest
from hypothesis import given
from hypothesis import strategies as st

from llm_worker import (
    DuplicateToolError,
    ExecutionFailedError,
    InternalToolError,
    InvalidArgumentError,
    ToolError,
    ToolExecutionError,
    ToolNotFoundError,
    ToolServerError,
)

TOOL_ERRORS = pytest.mark.parametrize(
    ("cls", "prefix"),
    [
        (ToolError, ""),
        (InvalidArgumentError, "Invalid argument: "),
        (ExecutionFailedError, "Execution failed: "),
        (InternalToolError, "Internal error: "),
    ],
)


class TestToolError:
    @TOOL_ERRORS
    def test_str(self, cls: type[ToolError], prefix: str) -> None:
        """str() is the SPEC text: the class's prefix, then the message."""
        error = cls("bad query")
        assert str(error) == f"{prefix}bad query"
        assert error.message == "bad query"

    @pytest.mark.parametrize(
        ("error", "text"),
        [
            (InvalidArgumentError("'query': missing required argument"),
             "Invalid argument: 'query': missing required argument"),
            (ExecutionFailedError("division by zero"), "Execution failed: division by zero"),
            (InternalToolError("no database"), "Internal error: no database"),
            (ToolError("plain"), "plain"),
        ],
    )  # fmt: skip
    def test_exact_texts(self, error: ToolError, text: str) -> None:
        """The exact texts from the SPEC table."""
        assert str(error) == text

    @TOOL_ERRORS
    @given(message=st.text())
    def test_any_message(self, cls: type[ToolError], prefix: str, message: str) -> None:
        """Any message, empty or multi-line, is kept verbatim after the prefix."""
        error = cls(message)
        assert error.message == message
        assert str(error) == prefix + message

    @TOOL_ERRORS
    def test_hierarchy(self, cls: type[ToolError], prefix: str) -> None:
        """Every tool error is a ToolError and an Exception, never a ToolServerError."""
        assert issubclass(cls, ToolError)
        assert issubclass(cls, Exception)
        assert not issubclass(cls, ToolServerError)

    @TOOL_ERRORS
    def test_catchable_as_tool_error(self, cls: type[ToolError], prefix: str) -> None:
        """``except ToolError`` catches each subclass."""
        with pytest.raises(ToolError) as info:
            raise cls("m")
        assert type(info.value) is cls

    @TOOL_ERRORS
    def test_repr(self, cls: type[ToolError], prefix: str) -> None:
        """repr() shows the class name and the message."""
        assert repr(cls("m")) == f"{cls.__name__}('m')"

    @TOOL_ERRORS
    def test_pickle(self, cls: type[ToolError], prefix: str) -> None:
        """A pickled tool error loads back with its class, message and text."""
        loaded = pickle.loads(pickle.dumps(cls("line 1\nline 2")))
        assert type(loaded) is cls
        assert loaded.message == "line 1\nline 2"
        assert str(loaded) == f"{prefix}line 1\nline 2"


class TestToolServerErrors:
    def test_duplicate(self) -> None:
        """DuplicateToolError: "Tool with name '{name}' already registered", with .name."""
        error = DuplicateToolError("search")
        assert str(error) == "Tool with name 'search' already registered"
        assert error.name == "search"

    def test_not_found(self) -> None:
        """ToolNotFoundError: "Tool '{name}' not found", with .name."""
        error = ToolNotFoundError("search")
        assert str(error) == "Tool 'search' not found"
        assert error.name == "search"

    def test_not_found_is_lookup_error(self) -> None:
        """ToolNotFoundError is also a LookupError, so ``except LookupError`` catches it."""
        assert issubclass(ToolNotFoundError, LookupError)
        with pytest.raises(LookupError):
            raise ToolNotFoundError("x")

    def test_not_found_str_is_not_key_error_style(self) -> None:
        """Unlike KeyError, the text is not wrapped in quotes."""
        assert str(ToolNotFoundError("x")) == "Tool 'x' not found"

    def test_execution(self) -> None:
        """ToolExecutionError: "Tool execution failed: {detail}", with .name and .detail."""
        error = ToolExecutionError("search", "Invalid argument: 'query': missing required argument")
        assert str(error) == (
            "Tool execution failed: Invalid argument: 'query': missing required argument"
        )
        assert error.name == "search"
        assert error.detail == "Invalid argument: 'query': missing required argument"

    @given(name=st.text(), detail=st.text())
    def test_any_fields(self, name: str, detail: str) -> None:
        """Any name and detail appear verbatim in the texts; a not-found name the model
        made up is shown cut short past 100 characters (it is the model's text)."""
        from llm_worker._model_texts import shown_name

        assert str(DuplicateToolError(name)) == f"Tool with name '{name}' already registered"
        assert str(ToolNotFoundError(name)) == f"Tool '{shown_name(name)}' not found"
        assert str(ToolExecutionError(name, detail)) == f"Tool execution failed: {detail}"
        if len(name) <= 100:
            assert shown_name(name) == name
        else:
            assert shown_name(name) == name[:99] + "\u2026"

    @pytest.mark.parametrize("cls", [DuplicateToolError, ToolNotFoundError, ToolExecutionError])
    def test_hierarchy(self, cls: type[ToolServerError]) -> None:
        """Every server error is a ToolServerError and an Exception, never a ToolError."""
        assert issubclass(cls, ToolServerError)
        assert issubclass(cls, Exception)
        assert not issubclass(cls, ToolError)

    def test_only_not_found_is_lookup_error(self) -> None:
        """DuplicateToolError and ToolExecutionError are not LookupErrors."""
        assert not issubclass(DuplicateToolError, LookupError)
        assert not issubclass(ToolExecutionError, LookupError)

    @pytest.mark.parametrize(
        "error",
        [DuplicateToolError("search"), ToolNotFoundError("search")],
        ids=["duplicate", "not-found"],
    )
    def test_pickle_name(self, error: DuplicateToolError | ToolNotFoundError) -> None:
        """A pickled DuplicateToolError / ToolNotFoundError keeps its class, name and text."""
        loaded = pickle.loads(pickle.dumps(error))
        assert type(loaded) is type(error)
        assert loaded.name == "search"
        assert str(loaded) == str(error)

    def test_pickle_execution(self) -> None:
        """A pickled ToolExecutionError keeps its name, detail and text."""
        error = ToolExecutionError("search", "Execution failed: boom")
        loaded = pickle.loads(pickle.dumps(error))
        assert type(loaded) is ToolExecutionError
        assert (loaded.name, loaded.detail) == ("search", "Execution failed: boom")
        assert str(loaded) == "Tool execution failed: Execution failed: boom"

    @given(name=st.text(), detail=st.text())
    def test_pickle_any_fields(self, name: str, detail: str) -> None:
        """Pickling keeps any name and detail."""
        for error in (DuplicateToolError(name), ToolNotFoundError(name)):
            loaded = pickle.loads(pickle.dumps(error))
            assert (type(loaded), loaded.name, str(loaded)) == (type(error), name, str(error))
        loaded_exec = pickle.loads(pickle.dumps(ToolExecutionError(name, detail)))
        assert (loaded_exec.name, loaded_exec.detail) == (name, detail)

    def test_base_is_catchable(self) -> None:
        """``except ToolServerError`` catches each kind of server error."""
        for error in (
            DuplicateToolError("a"),
            ToolNotFoundError("a"),
            ToolExecutionError("a", "d"),
        ):
            with pytest.raises(ToolServerError):
                raise error
