"""What a model chooses goes onto spans at a bounded length: a tool name it made up (an
unknown tool's) is shortened as model texts show it, and a call id to a few hundred
characters, each cut ending in "…". Content capture is off: these are attributes every
span has.
"""

from __future__ import annotations

import anyio
import pytest
from otel_support import OpenAIScripted, Telemetry

from llm_worker import Worker, tool, tool_definitions, tool_registry
from llm_worker.testing import ScriptedCall, ScriptedResponse

pytestmark = pytest.mark.anyio

MAX_NAME = 100  # as ToolNotFoundError's text shows a name
MAX_ID = 256


@tool_registry
class Tools:
    @tool
    async def lookup(self) -> str:
        """Look something up."""
        return "found"


def one_call(name: str, call_id: str) -> OpenAIScripted:
    return OpenAIScripted([ScriptedResponse(tool_calls=[ScriptedCall(name, {}, id=call_id)]), "ok"])


async def run_traced(telemetry: Telemetry, client: OpenAIScripted) -> Worker:
    worker = Worker(client, instrumentation=telemetry.instrumentation())
    worker.register_tools(tool_definitions(Tools()))
    with anyio.fail_after(5):
        await worker.run("go")
    return worker


def decision_attributes(telemetry: Telemetry) -> dict[str, object]:
    (event,) = telemetry.one("invoke_agent").events
    return dict(event.attributes or {})


async def test_an_unknown_tools_long_name_and_id_are_cut_on_its_decision(
    telemetry: Telemetry,
) -> None:
    """A call of an unknown tool named with 200 000 characters, with an id of 100 002:
    its decision event carries both cut short, each ending in "…"."""
    name, call_id = "x" * 200_000, "id" + "y" * 100_000
    await run_traced(telemetry, one_call(name, call_id))
    attributes = decision_attributes(telemetry)
    assert attributes["llm_worker.decision"] == "not_found"
    assert attributes["gen_ai.tool.name"] == "x" * (MAX_NAME - 1) + "…"
    assert attributes["gen_ai.tool.call.id"] == call_id[: MAX_ID - 1] + "…"


async def test_a_name_and_id_within_the_bounds_are_kept_as_they_are(
    telemetry: Telemetry,
) -> None:
    """At exactly the bounds, nothing is cut."""
    name, call_id = "n" * MAX_NAME, "i" * MAX_ID
    await run_traced(telemetry, one_call(name, call_id))
    attributes = decision_attributes(telemetry)
    assert attributes["gen_ai.tool.name"] == name
    assert attributes["gen_ai.tool.call.id"] == call_id


async def test_a_long_call_id_is_cut_on_its_execute_tool_span(telemetry: Telemetry) -> None:
    """A call of a known tool with an id of 100 002 characters: its span's call id is cut
    short; the tool's own name is kept; the result the model reads keeps the whole id."""
    call_id = "id" + "y" * 100_000
    worker = await run_traced(telemetry, one_call("lookup", call_id))
    span = telemetry.one("execute_tool lookup")
    attributes = span.attributes or {}
    assert attributes["gen_ai.tool.name"] == "lookup"
    assert attributes["gen_ai.tool.call.id"] == call_id[: MAX_ID - 1] + "…"
    assert worker.history[2].call_id == call_id  # type: ignore[union-attr]


def labelled(stop_reason: str, response_id: str, model: str) -> OpenAIScripted:
    answer = ScriptedResponse(
        text="ok", stop_reason=stop_reason, response_id=response_id, model=model
    )
    return OpenAIScripted([answer])


async def test_a_providers_long_labels_are_cut_on_the_chat_span_and_its_metrics(
    telemetry: Telemetry,
) -> None:
    """A response whose stop reason, id and model are 200 000 characters each: the chat
    span and the duration and token metrics show them cut short, each ending in "…"."""
    stop_reason, response_id, model = "s" * 200_000, "r" * 200_000, "m" * 200_000
    await run_traced(telemetry, labelled(stop_reason, response_id, model))
    attributes = telemetry.one("chat gpt-test").attributes or {}
    assert attributes["gen_ai.response.finish_reasons"] == ("s" * (MAX_ID - 1) + "…",)
    assert attributes["gen_ai.response.id"] == "r" * (MAX_ID - 1) + "…"
    assert attributes["gen_ai.response.model"] == "m" * (MAX_ID - 1) + "…"
    (point,) = telemetry.points("gen_ai.client.operation.duration")
    assert point.attributes["gen_ai.response.model"] == "m" * (MAX_ID - 1) + "…"


async def test_a_providers_lone_surrogates_reach_no_span_or_history(
    telemetry: Telemetry,
) -> None:
    """A stop reason, response id and model holding lone surrogates (a JSON escape such
    as "\\ud800" decodes to one): the history and the spans keep them as U+FFFD, which
    an exporter can encode (OTLP drops an attribute it cannot, at every export)."""
    worker = await run_traced(telemetry, labelled("odd\ud800", "chatcmpl-\ud800", "gpt\udfff"))
    message = worker.history[-1]
    assert (message.stop_reason, message.response_id, message.model) == (  # type: ignore[union-attr]
        "odd\ufffd",
        "chatcmpl-\ufffd",
        "gpt\ufffd",
    )
    attributes = telemetry.one("chat gpt-test").attributes or {}
    assert attributes["gen_ai.response.finish_reasons"] == ("odd\ufffd",)
    assert attributes["gen_ai.response.id"] == "chatcmpl-\ufffd"
    assert attributes["gen_ai.response.model"] == "gpt\ufffd"
    for point in telemetry.points("gen_ai.client.operation.duration"):
        assert point.attributes["gen_ai.response.model"] == "gpt\ufffd"
