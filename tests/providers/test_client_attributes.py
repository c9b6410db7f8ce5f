"""What each provider client says it talks to: ``provider``, ``model``, ``base_url``
(read-only), and ``supports_output_format``; tracing reads the first three."""

from __future__ import annotations

import pytest
from opentelemetry.sdk.metrics import MeterProvider
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
from support import GEMINI_SDK, needs_gemini_sdk

from llm_worker import Worker
from llm_worker.otel import OpenTelemetry
from llm_worker.providers.anthropic import AnthropicClient
from llm_worker.providers.openai import OpenAIChatClient, OpenAIResponsesClient

from . import wire
from .server import ProviderServer, stream

if GEMINI_SDK:  # google-genai needs Python 3.11+ (tests/support.py)
    from llm_worker.providers.gemini import GeminiClient

pytestmark = pytest.mark.filterwarnings(
    r"ignore:Async generator '(openai|httpx2|httpcore2)\.[^']*' was garbage "
    r"collected:ResourceWarning"
)


def clients(server: ProviderServer):
    url = server.base_url
    found = [
        (OpenAIChatClient("gpt-x", api_key="k", base_url=f"{url}/v1"), "openai", f"{url}/v1/"),
        (OpenAIResponsesClient("gpt-y", api_key="k", base_url=f"{url}/v1"), "openai", f"{url}/v1/"),
        (AnthropicClient("claude-x", api_key="k", base_url=url), "anthropic", url),
    ]
    if GEMINI_SDK:
        found.append((GeminiClient("gemini-x", api_key="k", base_url=url), "gcp.gemini", url))
    return found


class TestAttributes:
    def test_provider_model_and_base_url(self, server):
        """Each client names its provider as the OpenTelemetry GenAI conventions do, its
        model, and where its SDK client sends requests."""
        for client, provider, base_url in clients(server):
            assert (client.provider, client.base_url) == (provider, base_url)
            assert client.model.split("-")[0] in ("gpt", "claude", "gemini")
            assert client.supports_output_format is True

    def test_they_are_read_only(self, server):
        """provider, model and base_url cannot be set."""
        client = OpenAIChatClient("gpt-x", api_key="k", base_url=f"{server.base_url}/v1")
        for name in ("provider", "model", "base_url"):
            with pytest.raises(AttributeError):
                setattr(client, name, "other")
        assert client.model == "gpt-x"

    @needs_gemini_sdk
    def test_gemini_on_vertex_ai(self):
        """On Vertex AI (here express mode, an API key) Gemini's provider is gcp.vertex_ai."""
        client = GeminiClient("gemini-x", vertexai=True, api_key="k")
        assert client.provider == "gcp.vertex_ai"
        assert client.base_url == "https://aiplatform.googleapis.com/"

    def test_a_passed_client_tells_its_base_url(self, server):
        """With an SDK client passed in, base_url is that client's."""
        import openai

        sdk = openai.AsyncOpenAI(api_key="k", base_url=f"{server.base_url}/v2")
        assert OpenAIChatClient("gpt-x", client=sdk).base_url == f"{server.base_url}/v2/"


@pytest.mark.anyio
async def test_the_chat_span_reads_them(server):
    """A traced run through a real client: its spans carry the client's provider, model
    and server address and port."""
    exporter = InMemorySpanExporter()
    tracer_provider = TracerProvider()
    tracer_provider.add_span_processor(SimpleSpanProcessor(exporter))
    telemetry = OpenTelemetry(tracer_provider=tracer_provider, meter_provider=MeterProvider())
    server.add(stream(*wire.chat_text("Hi.")))
    async with OpenAIChatClient(
        "gpt-x", api_key="k", base_url=f"{server.base_url}/v1", max_retries=0
    ) as client:
        await Worker(client, instrumentation=telemetry).run("hello")
    [chat] = [span for span in exporter.get_finished_spans() if span.name == "chat gpt-x"]
    attributes = dict(chat.attributes or {})
    host, port = server.base_url.removeprefix("http://").split(":")
    assert attributes["gen_ai.provider.name"] == "openai"
    assert attributes["gen_ai.request.model"] == "gpt-x"
    assert (attributes["server.address"], attributes["server.port"]) == (host, int(port))
