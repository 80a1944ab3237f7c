"""The requests each task type sends: chat bodies with synthesised prompts of the traced length,
streaming with usage, and the class's task and SLO headers.

The answer's traced length N reaches the replica, never the gateway (issue #16: no oracle). By
default a request sends no ``max_tokens`` (a client without a ceiling) and names N in
``vllm_xargs.sim_output_tokens``, where the simulator ends the answer as a model's EOS would; the
gateway does not read ``vllm_xargs`` and must plan with the lengths it learned, and a real vLLM
ignores the field and answers at its own length. With ``forced_length`` (a mode for comparison,
labelled so wherever it is used) the request forces N instead: ``max_tokens`` = ``min_tokens`` = N
and ``ignore_eos``, which vLLM and the simulator honour and which tells the gateway N exactly.

Pure: plain data in, plain data out, so the shapes of the requests are tested without locust.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from loadtests.load.prompts import PromptSynthesizer, Style
from loadtests.load.streaming import ToolCall
from loadtests.scoring.slo import Slo

# The agent's tool: a lookup whose result is fed back as the second turn's input.
AGENT_TOOLS: tuple[dict[str, Any], ...] = (
    {
        "type": "function",
        "function": {
            "name": "search_documents",
            "description": "Search the knowledge base and return matching passages.",
            "parameters": {
                "type": "object",
                "properties": {"query": {"type": "string"}, "limit": {"type": "integer"}},
                "required": ["query"],
            },
        },
    },
)
_INSTRUCTIONS = {
    "coding": "Complete the following code.\n\n",
    "chat": "",
    "agent": "Find what the documents say about this and answer: ",
    "extraction": "Extract every date, amount and party named in the document below as JSON.\n\n",
}


@dataclass(frozen=True, slots=True)
class ChatRequest:
    """One HTTP request to send: its body, its headers, and the name locust groups it under."""

    task: str
    body: dict[str, Any]
    headers: dict[str, str]
    output_tokens: int

    @property
    def name(self) -> str:
        return f"chat [{self.task}]"


def slo_headers(task: str, slo: Slo | None, time_scale: float) -> dict[str, str]:
    """``x-duet-task`` and llm-d's ``x-slo-ttft-ms`` / ``x-slo-tpot-ms``, divided by the time scale
    (a run compressed ``time_scale`` times has that much less wall time per token)."""
    headers = {"x-duet-task": task}
    if slo is not None:
        for header, target_ms in (("x-slo-ttft-ms", slo.ttft_ms), ("x-slo-tpot-ms", slo.tpot_ms)):
            if target_ms is not None:
                headers[header] = f"{target_ms / time_scale:.3f}"
    return headers


def chat_body(model: str, messages: list[dict[str, Any]], output_tokens: int, forced: bool = False,
              **extra: Any) -> dict[str, Any]:
    """A streaming chat body whose answer is ``output_tokens`` long: named for the simulator alone
    (natural), or forced on every replica and visible to the gateway (``forced``)."""
    body: dict[str, Any] = {"model": model, "messages": messages, "stream": True, "stream_options": {"include_usage": True}}
    if forced:
        body.update(max_tokens=output_tokens, min_tokens=output_tokens, ignore_eos=True)
    else:
        body["vllm_xargs"] = {"sim_output_tokens": output_tokens}
    return {**body, **extra}


@dataclass(frozen=True, slots=True)
class ScenarioSettings:
    """What every scenario needs: the logical model, prompt synthesis, SLOs and the time scale."""

    model: str
    synthesizer: PromptSynthesizer
    slos: dict[str, Slo]
    time_scale: float = 1.0
    forced_length: bool = False  # force each answer's length (an oracle for the gateway), for comparison


def single_turn(settings: ScenarioSettings, task: str, input_tokens: int, output_tokens: int, seed: int) -> ChatRequest:
    """A one-message request (coding, chat, extraction) of ``input_tokens`` prompt tokens."""
    instruction = _INSTRUCTIONS.get(task, "")
    style: Style = "code" if task == "coding" else "prose"
    words = max(1, input_tokens - settings.synthesizer.counter.count_text(instruction))
    content = instruction + settings.synthesizer.text(words, style, seed)
    body = chat_body(settings.model, [{"role": "user", "content": content}], output_tokens, settings.forced_length)
    return ChatRequest(task, body, slo_headers(task, settings.slos.get(task), settings.time_scale), output_tokens)


def agent_first_turn(settings: ScenarioSettings, input_tokens: int, seed: int) -> ChatRequest:
    """The agent's first turn: the question with the tool offered; the model answers with a call
    (a short answer stands for the call's arguments)."""
    content = _INSTRUCTIONS["agent"] + settings.synthesizer.text(max(1, input_tokens), "prose", seed)
    messages = [{"role": "user", "content": content}]
    body = chat_body(settings.model, messages, 24, settings.forced_length, tools=list(AGENT_TOOLS), tool_choice="auto")
    return ChatRequest("agent", body, slo_headers("agent", settings.slos.get("agent"), settings.time_scale), 24)


def agent_second_turn(
    settings: ScenarioSettings, first: ChatRequest, calls: tuple[ToolCall, ...], result_tokens: int,
    output_tokens: int, seed: int,
) -> ChatRequest:
    """The turn after the tool ran: the history, the assistant's call(s), and a tool result of
    ``result_tokens`` tokens; the answer is ``output_tokens`` long."""
    call = calls[0] if calls else ToolCall(f"call_{seed}", "search_documents", '{"query": "x"}')
    assistant = {
        "role": "assistant",
        "content": None,
        "tool_calls": [{"id": call.id, "type": "function", "function": {"name": call.name, "arguments": call.arguments}}],
    }
    tool = {"role": "tool", "tool_call_id": call.id, "content": settings.synthesizer.text(result_tokens, "prose", seed + 1)}
    messages = [*first.body["messages"], assistant, tool]
    body = chat_body(settings.model, messages, output_tokens, settings.forced_length, tools=list(AGENT_TOOLS),
                     tool_choice="none")
    return ChatRequest("agent", body, first.headers, output_tokens)
