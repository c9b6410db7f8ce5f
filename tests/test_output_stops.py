"""Structured output (``_output.py``): an answer that fails validation, told with the stop
reason of its response (cut off at the token limit, a refusal, blocked by the provider).

``RunOutput`` is driven directly with the stop reasons the clients give
(``llm_worker.providers``: Anthropic's as they come, OpenAI's and Gemini's mapped or
lower-cased). The runs at the end need the loop to pass the stop reason on
(``output.answer_text(message.text, stop_reason=message.stop_reason)`` in ``_run.py``).
"""

from __future__ import annotations

import anyio
import pytest
from pydantic import BaseModel
from support import results_of

from llm_worker import OutputValidationError, UserMessage, Worker, WorkerResult
from llm_worker._output import RunOutput
from llm_worker.testing import ScriptedCall, ScriptedClient, ScriptedResponse

pytestmark = pytest.mark.anyio


class Weather(BaseModel):
    city: str
    celsius: float


CUT = '{"city": "Os'  # JSON cut short
ANSWER = '{"city": "Oslo", "celsius": 3.5}'
REFUSAL = "I can't help with that."
CUT_PROBLEM = "input is not valid JSON (EOF while parsing a string at line 1 column 12)"
INVALID = (
    "Your final answer does not match the required format: {problems}. "
    "Answer again, with only the corrected answer."
)
SHORTER = (
    "Your final answer does not match the required format: {problems}. "
    "Answer again, shorter, with only the answer."
)

# Every reason a client gives for a response a filter or policy stopped: Chat
# Completions' and Responses' content_filter, Gemini's finish and prompt block reasons.
BLOCKS = [
    "content_filter",
    "safety",
    "recitation",
    "language",
    "blocklist",
    "prohibited_content",
    "spii",
    "image_safety",
    "image_prohibited_content",
    "image_recitation",
    "jailbreak",
    "model_armor",
    "escalation",
    "pup_limited_disabled",
]


def native(retries: int = 1) -> RunOutput:
    return RunOutput(Weather, native=True, retries=retries)


def through_tool() -> RunOutput:
    return RunOutput(Weather, native=False, retries=1)


def plain_problems(text: str) -> str:
    """What is wrong with ``text`` when nothing is said of its response."""
    output = native()
    assert output.answer_text(text) is not None
    return output.problems


class TestCutOff:
    @pytest.mark.parametrize(
        ("stop_reason", "limit"),
        [
            ("max_tokens", "the output token limit"),  # every client's
            ("model_context_window_exceeded", "the model's context window"),  # Anthropic's
        ],
    )
    def test_the_model_is_told_it_was_cut_off_and_to_answer_shorter(self, stop_reason, limit):
        """JSON cut short is no format mistake: the model reads where its answer ended,
        and to answer again shorter."""
        output = native()
        told = output.answer_text(CUT, stop_reason=stop_reason)
        problems = (
            f"the response was cut off at {limit} (stop reason '{stop_reason}'); {CUT_PROBLEM}"
        )
        assert told == SHORTER.format(problems=problems)
        assert output.problems == problems
        assert output.attempts == 1

    def test_the_error_past_the_retries_names_the_cut(self):
        """``OutputValidationError`` says why the answer is not JSON, not only that."""
        output = native(retries=0)
        output.answer_text(CUT, stop_reason="max_tokens")
        with pytest.raises(OutputValidationError) as caught:
            output.check_retries()
        assert caught.value.problems == (
            f"the response was cut off at the output token limit (stop reason 'max_tokens'); "
            f"{CUT_PROBLEM}"
        )
        assert "cut off at the output token limit" in str(caught.value)

    def test_an_answer_whole_before_the_limit_is_taken(self):
        """The stop reason only explains a failure: valid JSON is the answer."""
        output = native()
        assert output.answer_text(ANSWER, stop_reason="max_tokens") is None
        assert output.value == Weather(city="Oslo", celsius=3.5)

    def test_a_cut_off_call_of_the_output_tool_is_told_so_too(self):
        """Through the tool, the call's error result says it was cut off."""
        output = through_tool()
        text, is_error = output.answer_call(CUT, stop_reason="max_tokens")
        assert is_error
        assert text == SHORTER.format(
            problems=f"the response was cut off at the output token limit (stop reason "
            f"'max_tokens'); {CUT_PROBLEM}"
        )


class TestRefusedOrBlocked:
    def test_a_refusal_is_named_and_still_retried(self):
        """Anthropic's ``refusal`` (and the OpenAI clients'): the model reads that its
        response was a refusal, and may answer again within the retries."""
        output = native()
        told = output.answer_text(REFUSAL, stop_reason="refusal")
        problems = f"the response was a refusal (stop reason 'refusal'); {plain_problems(REFUSAL)}"
        assert told == INVALID.format(problems=problems)
        output.check_retries()  # one retry left: no error yet
        output.answer_text(REFUSAL, stop_reason="refusal")
        with pytest.raises(OutputValidationError) as caught:
            output.check_retries()
        assert caught.value.problems == problems
        assert caught.value.attempts == 2

    @pytest.mark.parametrize("stop_reason", BLOCKS)
    def test_a_response_the_provider_blocked_is_named(self, stop_reason):
        """A filter's stop (Gemini sends no text then) is not a format mistake either."""
        output = native()
        told = output.answer_text("", stop_reason=stop_reason)
        problems = (
            f"the provider blocked the response (stop reason '{stop_reason}'); {plain_problems('')}"
        )
        assert told == INVALID.format(problems=problems)
        assert output.problems == problems

    def test_text_instead_of_the_output_tool_says_it_was_a_refusal(self):
        """Through the tool, a refused text answer is told as a refusal, then what the
        answer should have been."""
        output = through_tool()
        told = output.answer_text(REFUSAL, stop_reason="refusal")
        assert output.problems == (
            "the response was a refusal (stop reason 'refusal'); give your final answer by "
            "calling the tool 'final_result', not as text"
        )
        assert told == INVALID.format(problems=output.problems)


class TestOtherStops:
    @pytest.mark.parametrize(
        "stop_reason", ["stop_sequence", "other", "malformed_response", "max_messages"]
    )
    def test_any_other_stop_reason_is_named(self, stop_reason):
        """A stop reason this worker has no words for (Anthropic's ``stop_sequence``, Gemini's
        ``other``, a new one) is still worth the model's and the application's reading."""
        output = native()
        output.answer_text(CUT, stop_reason=stop_reason)
        assert output.problems == (
            f"the response ended with stop reason '{stop_reason}'; {CUT_PROBLEM}"
        )

    @pytest.mark.parametrize("stop_reason", [None, "end_turn", "tool_use"])
    def test_an_answer_that_ended_as_answers_do_is_told_as_before(self, stop_reason):
        output = native()
        told = output.answer_text(CUT, stop_reason=stop_reason)
        assert told == INVALID.format(problems=CUT_PROBLEM)
        assert output.problems == CUT_PROBLEM

    def test_a_long_stop_reason_is_cut_short(self):
        """A server's stop reason is its own text: a megabyte of it is not repeated."""
        output = native()
        output.answer_text(CUT, stop_reason="x" * 1_000_000)
        assert len(output.problems) < 300


# -- whole runs: these need the loop to pass the stop reason on (see the module docstring) --


async def run(worker: Worker) -> None:
    with anyio.fail_after(10):
        await worker.run("weather in Oslo?")


async def test_a_run_whose_answer_was_cut_off_asks_for_a_shorter_one() -> None:
    client = ScriptedClient([ScriptedResponse(CUT, stop_reason="max_tokens"), ANSWER])
    worker = Worker(client, output_type=Weather)
    await run(worker)
    assert worker.output == Weather(city="Oslo", celsius=3.5)
    assert client.requests[1].messages[-1] == UserMessage(
        SHORTER.format(
            problems=f"the response was cut off at the output token limit (stop reason "
            f"'max_tokens'); {CUT_PROBLEM}"
        )
    )


async def test_a_run_refused_past_the_retries_fails_naming_the_refusal() -> None:
    refused = ScriptedResponse(REFUSAL, stop_reason="refusal")
    client = ScriptedClient([refused, refused])
    worker = Worker(client, output_type=Weather, output_retries=1)
    with pytest.raises(OutputValidationError) as caught:
        await run(worker)
    assert caught.value.problems.startswith("the response was a refusal (stop reason 'refusal'); ")
    assert len(client.requests) == 2  # retried once, as output_retries says


async def test_a_run_through_the_tool_names_a_cut_off_text_answer() -> None:
    client = ScriptedClient(
        [
            ScriptedResponse("It is 3 degr", stop_reason="max_tokens"),
            ScriptedResponse(
                tool_calls=[ScriptedCall("final_result", {"city": "Oslo", "celsius": 3})]
            ),
        ],
        supports_output_format=False,
    )
    worker = Worker(client, output_type=Weather)
    await run(worker)
    told = client.requests[1].messages[-1]
    assert isinstance(told, UserMessage)
    assert told.text.startswith(
        "Your final answer does not match the required format: the response was cut off at "
        "the output token limit (stop reason 'max_tokens'); give your final answer by "
        "calling the tool 'final_result'"
    )


async def test_a_final_result_call_cut_off_says_so() -> None:
    """Through the output tool (a client without native output): a call whose response
    was cut at max_tokens gets an error result that says so, and the model answers again."""
    cut = ScriptedResponse(
        tool_calls=[ScriptedCall("final_result", '{"city": "Os', id="a")], stop_reason="max_tokens"
    )
    whole = ScriptedResponse(tool_calls=[ScriptedCall("final_result", ANSWER, id="b")])
    client = ScriptedClient([cut, whole], supports_output_format=False)
    worker: Worker = Worker(client, output_type=Weather)
    with anyio.fail_after(10):
        assert await worker.run("where?") is WorkerResult.FINISHED
    first = results_of(worker.history)[0]
    assert first.is_error
    assert "cut off at the output token limit (stop reason 'max_tokens')" in first.content
