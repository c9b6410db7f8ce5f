"""Deps described by a ``Protocol`` (``_context.run_checked``, ``deps_types_fit``): a deps
type a run cannot check is not checked, at run time; the type checkers check it.

``isinstance()`` refuses a ``Protocol`` that is not ``@runtime_checkable``, and
``issubclass()`` one with data members. Such a ``deps_type=``, or the ``X`` of a tool's
``ToolContext[X]``, used to fail every run (or the registration) with typing's own
``TypeError``.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Protocol, runtime_checkable

import anyio
import pytest
from support import calls, results_of

from llm_worker import Approve, Pause, ToolContext, Worker, WorkerResult, tool, tool_registry
from llm_worker._context import deps_types_fit, run_checked
from llm_worker.testing import ScriptedClient


class HasUser(Protocol):
    user: str


@runtime_checkable
class HasUserChecked(Protocol):
    """isinstance() checks it; issubclass() cannot (a data member)."""

    user: str


@runtime_checkable
class HasTenantChecked(Protocol):
    tenant: int


@runtime_checkable
class Greets(Protocol):
    """Methods only: isinstance() and issubclass() both check it."""

    def greet(self) -> str: ...


@dataclass
class Deps:
    user: str


@dataclass
class OtherDeps:
    tenant: int


@dataclass
class Greeter:
    user: str

    def greet(self) -> str:
        return f"hi {self.user}"


@tool_registry
class App:
    @tool
    async def whoami(self, ctx: ToolContext[HasUser]) -> str:
        """Who is asking."""
        return ctx.deps.user

    @tool
    async def whoami_checked(self, ctx: ToolContext[HasUserChecked]) -> str:
        """Who is asking."""
        return ctx.deps.user

    @tool
    async def needs_deps(self, ctx: ToolContext[Deps]) -> str:
        """Who is asking, from a Deps."""
        return ctx.deps.user


def one_call(name: str) -> ScriptedClient:
    return ScriptedClient([calls((name, {})), "done"])


class _Uncheckable(type):
    """A metaclass whose classes isinstance() cannot check; it counts the attempts."""

    attempts = 0

    def __instancecheck__(cls, instance: object) -> bool:
        _Uncheckable.attempts += 1
        raise TypeError("cannot check")


class Opaque(metaclass=_Uncheckable):
    pass


class TestRunChecked:
    @pytest.mark.parametrize("deps_type", [HasUser, Any, "Deps", None, Opaque])
    def test_what_isinstance_cannot_check_is_not_checked(self, deps_type):
        """A Protocol not @runtime_checkable, Any, what is not a class: None (no check)."""
        assert run_checked(deps_type) is None

    @pytest.mark.parametrize("deps_type", [Deps, HasUserChecked, Greets, dict])
    def test_what_isinstance_checks_is_kept(self, deps_type):
        assert run_checked(deps_type) is deps_type

    def test_a_wanted_type_issubclass_cannot_check_fits(self):
        """A Protocol with data members (runtime-checkable or not) is not checked at
        registration; the types a class check can compare still are."""
        assert deps_types_fit(Deps, HasUserChecked)
        assert deps_types_fit(OtherDeps, HasUser)
        assert deps_types_fit(HasTenantChecked, HasUserChecked)
        assert deps_types_fit(Greeter, Greets)
        assert not deps_types_fit(Deps, Greets)
        assert not deps_types_fit(HasUser, Deps)


@pytest.mark.anyio
class TestProtocolDepsType:
    async def test_a_worker_of_protocol_deps_runs(self):
        """deps_type=<Protocol, not runtime-checkable>: runs are not checked, and run."""
        worker = Worker(one_call("whoami"), deps_type=HasUser)
        worker.register_tools([App().whoami.definition()])
        with anyio.fail_after(5):
            assert await worker.run("who?", deps=Deps("ada")) is WorkerResult.FINISHED
        assert [(r.content, r.is_error) for r in results_of(worker.history)] == [("ada", False)]

    async def test_resume_and_a_locked_worker_are_not_checked_either(self):
        worker = Worker(one_call("whoami"), deps_type=HasUser)
        worker.register_tools([App().whoami.definition()])
        worker.add_pre_tool_call_hook(lambda ctx: Pause())
        locked = worker.lock()
        with anyio.fail_after(5):
            assert await locked.run("who?", deps=Deps("ada")) is WorkerResult.PAUSED
            assert await locked.resume(Approve(), deps=Deps("bob")) is WorkerResult.FINISHED
        assert results_of(locked.history)[0].content == "bob"

    async def test_the_check_is_decided_once_when_the_worker_is_built(self):
        """Whether a run can check the deps is asked when the Worker is built, not per run."""
        _Uncheckable.attempts = 0
        worker = Worker(ScriptedClient(["a", "b", "c"]), deps_type=Opaque)
        assert _Uncheckable.attempts == 1
        with anyio.fail_after(5):
            for _ in range(3):
                await worker.run("go", deps=object())  # type: ignore[arg-type]
        assert _Uncheckable.attempts == 1

    async def test_a_runtime_checkable_protocol_is_still_checked(self):
        """deps_type=<@runtime_checkable Protocol>: each run checks its deps with isinstance."""
        worker = Worker(one_call("whoami_checked"), deps_type=HasUserChecked)
        worker.register_tools([App().whoami_checked.definition()])
        with pytest.raises(TypeError) as info:
            worker.run_stream("who?", deps=OtherDeps(1))  # type: ignore[arg-type]
        assert str(info.value) == (
            "this worker's runs take deps of type HasUserChecked (deps_type=); got OtherDeps"
        )
        with anyio.fail_after(5):
            await worker.run("who?", deps=Deps("ada"))
        assert results_of(worker.history)[0].content == "ada"

    def test_a_tool_for_a_class_the_protocol_is_not_is_refused(self):
        """Registration still compares the types a class check can compare."""
        worker = Worker(ScriptedClient(), deps_type=HasUser)
        with pytest.raises(TypeError) as info:
            worker.register_tools([App().needs_deps.definition()])
        assert str(info.value) == (
            "tool 'needs_deps' takes ToolContext[Deps], but this worker's runs give deps of "
            "type HasUser (deps_type=)"
        )


@pytest.mark.anyio
class TestProtocolToolContext:
    async def test_a_data_protocol_tool_registers_on_a_worker_with_deps_type(self):
        """ToolContext[<@runtime_checkable Protocol with a data member>] on a Worker of
        other deps: issubclass() cannot compare them, so registration does not, and it runs."""
        worker = Worker(one_call("whoami_checked"), deps_type=Deps)
        worker.register_tools([App().whoami_checked.definition()])
        with anyio.fail_after(5):
            await worker.run("who?", deps=Deps("ada"))
        assert results_of(worker.history)[0].content == "ada"

    def test_a_data_protocol_tool_registers_on_a_worker_of_another_protocol(self):
        worker = Worker(ScriptedClient(), deps_type=HasTenantChecked)
        worker.register_tools([App().whoami_checked.definition()])
        assert len(worker.tool_server_handle()) == 1

    async def test_without_deps_type_runs_check_what_isinstance_can(self):
        """No deps_type: a ToolContext[<runtime-checkable Protocol>] tool's deps are checked
        with isinstance each run; a plain Protocol's are not."""
        worker = Worker(one_call("whoami_checked"))
        worker.register_tools([App().whoami_checked.definition(), App().whoami.definition()])
        with pytest.raises(TypeError, match=r"takes ToolContext\[HasUserChecked\]\); got int"):
            worker.run_stream("who?", deps=1)  # type: ignore[arg-type]
        with anyio.fail_after(5):
            await worker.run("who?", deps=Deps("ada"))  # type: ignore[arg-type]
        assert results_of(worker.history)[0].content == "ada"


class TestWhatIsNoClass:
    @pytest.mark.parametrize("given", [dict[str, int], list[Deps]])
    def test_a_generic_alias_is_no_deps_type(self, given: object) -> None:
        """``dict[str, int]`` is refused as on every Python (on 3.10 it passes
        ``isinstance(..., type)``), and a run never checks deps against it."""
        with pytest.raises(TypeError, match="deps_type must be a class"):
            Worker(ScriptedClient([]), deps_type=given)  # type: ignore[call-overload]
        assert run_checked(given) is None
