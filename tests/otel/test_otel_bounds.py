"""What a model or a provider chooses goes onto spans at a bounded length: a tool name it
made up (an unknown tool's) is shortened as model texts show it, and a call id to a few
hundred characters, each cut ending in "…". Content capture is off: these are attributes
every span has. A status description (an error's message, which the SDK's attribute
limits do not bound) is cut to 1024 characters.
"""

from __future__ import annotations

from collections.abc import Iterator

import anyio
import pytest
from opentelemetry.trace import StatusCode
from otel_support import OpenAIScripted, Telemetry
from providers import wire
from providers.server import ProviderServer, Reply, error, running_server, stream

from llm_worker import (
    LlmRequest,
    ProviderError,
    ToolError,
    Worker,
    tool,
    tool_definitions,
    tool_registry,
)
from llm_worker.providers.openai import OpenAIChatClient, OpenAIResponsesClient
from llm_worker.testing import ScriptedCall, ScriptedResponse

pytestmark = [
    pytest.mark.anyio,
    # The openai SDK leaves inner async generators to the garbage collector, which trio
    # reports as ResourceWarnings (as in tests/providers).
    pytest.mark.filterwarnings(
        r"ignore:Async generator '(openai|httpx2|httpcore2)\.[^']*' was garbage "
        r"collected:ResourceWarning"
    ),
]

MAX_NAME = 100  # as ToolNotFoundError's text shows a name
MAX_ID = 256
MAX_DESCRIPTION = 1024
HUGE = "x" * 1_000_000  # an error message of any length


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


@pytest.fixture
def server() -> Iterator[ProviderServer]:
    """The provider tests' local server (``running_server``)."""
    with running_server() as running:
        yield running


def failed_spans(telemetry: Telemetry) -> list[str | None]:
    """The status descriptions of the chat and the run span, which both failed."""
    spans = [telemetry.one("chat gpt-test"), telemetry.one("invoke_agent")]
    assert all(span.status.status_code is StatusCode.ERROR for span in spans)
    return [span.status.description for span in spans]


@pytest.mark.parametrize(
    ("api", "reply"),
    [
        pytest.param(
            "responses",
            stream(*wire.ResponseEvents().start().error("server_error", HUGE)),
            id="a streamed error event",
        ),
        pytest.param(
            "chat",
            error(400, wire.openai_error(HUGE, "invalid_request_error")),
            id="an HTTP 400 body",
        ),
    ],
)
async def test_a_providers_huge_error_message_is_cut_on_the_spans(
    telemetry: Telemetry, server: ProviderServer, api: str, reply: Reply
) -> None:
    """A provider's error message of 1 000 000 characters (the openai SDK against a local
    server): the ProviderError's text is cut short, and is the chat and the run span's
    status description as it is."""
    server.add(reply)
    client_type = OpenAIResponsesClient if api == "responses" else OpenAIChatClient
    async with client_type(
        "gpt-test", api_key="k", base_url=f"{server.base_url}/v1", max_retries=0
    ) as client:
        worker = Worker(client, instrumentation=telemetry.instrumentation())
        with anyio.fail_after(20), pytest.raises(ProviderError) as info:
            await worker.run("hi")
    said = str(info.value)
    assert len(said) < 350
    assert said.endswith("x...")
    assert failed_spans(telemetry) == [said, said]


def failing(message: str) -> OpenAIScripted:
    """A client of the user's whose request fails with a ``ProviderError`` of ``message``
    (not a built-in provider client's: nothing cut it before)."""

    def fail(request: LlmRequest) -> ScriptedResponse:
        raise ProviderError("openai", message)

    return OpenAIScripted([fail])


async def test_an_errors_huge_message_is_cut_on_the_spans(telemetry: Telemetry) -> None:
    """An error of a client of the user's whose text is 1 000 023 characters: the chat and
    the run span's status description is its first 1023, and "…"."""
    worker = Worker(failing(HUGE), instrumentation=telemetry.instrumentation())
    with anyio.fail_after(5), pytest.raises(ProviderError):
        await worker.run("go")
    cut = ("openai request failed: " + HUGE)[: MAX_DESCRIPTION - 1] + "…"
    assert failed_spans(telemetry) == [cut, cut]


async def test_a_description_within_the_bound_is_kept_as_it_is(telemetry: Telemetry) -> None:
    """An error whose text is exactly 1024 characters: the description is all of it."""
    message = "y" * (MAX_DESCRIPTION - len("openai request failed: "))
    worker = Worker(failing(message), instrumentation=telemetry.instrumentation())
    with anyio.fail_after(5), pytest.raises(ProviderError):
        await worker.run("go")
    whole = f"openai request failed: {message}"
    assert len(whole) == MAX_DESCRIPTION
    assert failed_spans(telemetry) == [whole, whole]


@tool_registry
class Failures:
    @tool
    async def fail(self) -> str:
        """Fail with a long text."""
        raise ToolError("z" * 1_000_000)


async def test_an_error_results_huge_text_is_cut_on_its_span(telemetry: Telemetry) -> None:
    """With capture_content=True, an error result's text (here cut to the result limit,
    about 100 000 characters) becomes its execute_tool span's description cut to 1024
    characters; the model reads the result as it is."""
    worker = Worker(
        OpenAIScripted([ScriptedResponse(tool_calls=[ScriptedCall("fail", {}, id="c1")]), "ok"]),
        instrumentation=telemetry.instrumentation(capture_content=True),
    )
    worker.register_tools(tool_definitions(Failures()))
    with anyio.fail_after(5):
        await worker.run("go")
    result = worker.history[2].content  # type: ignore[union-attr]
    assert len(result) > MAX_DESCRIPTION
    span = telemetry.one("execute_tool fail")
    assert span.status.description == result[: MAX_DESCRIPTION - 1] + "…"
