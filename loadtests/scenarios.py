"""The requests each task type sends: chat bodies with synthesised prompts of the traced length,
the output length forced (``max_tokens`` = ``min_tokens`` = N and ``ignore_eos``, which vLLM and the
simulator honour), streaming with usage, and the class's task and SLO headers.

Pure: plain data in, plain data out, so the shapes of the requests are tested without locust.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from loadtests.prompts import PromptSynthesizer, Style
from loadtests.slo import Slo
from loadtests.streaming import ToolCall

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


def chat_body(model: str, messages: list[dict[str, Any]], output_tokens: int, **extra: Any) -> dict[str, Any]:
    """A streaming chat body whose output is forced to ``output_tokens``."""
    return {
        "model": model,
        "messages": messages,
        "max_tokens": output_tokens,
        "min_tokens": output_tokens,
        "ignore_eos": True,
        "stream": True,
        "stream_options": {"include_usage": True},
        **extra,
    }


@dataclass(frozen=True, slots=True)
class ScenarioSettings:
    """What every scenario needs: the logical model, prompt synthesis, SLOs and the time scale."""

    model: str
    synthesizer: PromptSynthesizer
    slos: dict[str, Slo]
    time_scale: float = 1.0


def single_turn(settings: ScenarioSettings, task: str, input_tokens: int, output_tokens: int, seed: int) -> ChatRequest:
    """A one-message request (coding, chat, extraction) of ``input_tokens`` prompt tokens."""
    instruction = _INSTRUCTIONS.get(task, "")
    style: Style = "code" if task == "coding" else "prose"
    words = max(1, input_tokens - settings.synthesizer.counter.count_text(instruction))
    content = instruction + settings.synthesizer.text(words, style, seed)
    body = chat_body(settings.model, [{"role": "user", "content": content}], output_tokens)
    return ChatRequest(task, body, slo_headers(task, settings.slos.get(task), settings.time_scale), output_tokens)


def agent_first_turn(settings: ScenarioSettings, input_tokens: int, seed: int) -> ChatRequest:
    """The agent's first turn: the question with the tool offered; the model answers with a call
    (a short, forced-length output stands for the call's arguments)."""
    content = _INSTRUCTIONS["agent"] + settings.synthesizer.text(max(1, input_tokens), "prose", seed)
    messages = [{"role": "user", "content": content}]
    body = chat_body(settings.model, messages, 24, tools=list(AGENT_TOOLS), tool_choice="auto")
    return ChatRequest("agent", body, slo_headers("agent", settings.slos.get("agent"), settings.time_scale), 24)


def agent_second_turn(
    settings: ScenarioSettings, first: ChatRequest, calls: tuple[ToolCall, ...], result_tokens: int,
    output_tokens: int, seed: int,
) -> ChatRequest:
    """The turn after the tool ran: the history, the assistant's call(s), and a tool result of
    ``result_tokens`` tokens; the answer is forced to ``output_tokens``."""
    call = calls[0] if calls else ToolCall(f"call_{seed}", "search_documents", '{"query": "x"}')
    assistant = {
        "role": "assistant",
        "content": None,
        "tool_calls": [{"id": call.id, "type": "function", "function": {"name": call.name, "arguments": call.arguments}}],
    }
    tool = {"role": "tool", "tool_call_id": call.id, "content": settings.synthesizer.text(result_tokens, "prose", seed + 1)}
    messages = [*first.body["messages"], assistant, tool]
    body = chat_body(settings.model, messages, output_tokens, tools=list(AGENT_TOOLS), tool_choice="none")
    return ChatRequest("agent", body, first.headers, output_tokens)
