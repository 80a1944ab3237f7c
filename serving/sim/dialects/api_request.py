"""The edge: an OpenAI request body (chat or completions) read into one immutable ``Call``.

Only what the simulator acts on is read; unknown fields are ignored, as vLLM ignores them.
The task hint for speculative acceptance comes from the ``x-duet-task`` header, else from
``vllm_xargs.duet_task`` in the body; ``vllm_xargs.sim_prompt_tokens`` overrides the prompt's
counted length (for load tests that want long prompts without sending them), and
``vllm_xargs.sim_output_tokens`` sets the length of the answer the model would give (it ends
with EOS there, ``finish_reason: stop``, unless ``max_tokens`` cuts it first).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import orjson

from serving.sim.profile import ChatTemplate
from serving.sim.tokens import chat_prompt_text, count_tokens, message_text

TASKS = ("chat", "coding", "agent", "long-context", "reasoning", "extraction")


class BadRequest(ValueError):
    """The body is not a request vLLM would accept; ``param`` names the field."""

    def __init__(self, message: str, param: str | None = None) -> None:
        super().__init__(message)
        self.param = param


@dataclass(frozen=True, slots=True)
class Call:
    """One inference request, as the simulator needs it."""

    chat: bool
    model: str | None
    prompt_text: str
    prompt_tokens: int
    max_tokens: int | None
    min_tokens: int
    ignore_eos: bool
    n: int
    stream: bool
    include_usage: bool
    continuous_usage: bool
    tools: tuple[dict[str, Any], ...]
    tool_choice: object
    task: str
    temperature: float | None = None
    output_tokens: int | None = None  # the answer's natural length, if the request says
    # The last message is a tool's result: a simulated model answers it rather than calling again.
    after_tool: bool = False
    last_user_message: str = ""  # the last user or tool message: what scripted answers match on (serving.sim.answers.script)
    priority: int = 0  # vLLM's scheduling priority (lower first; used under --scheduling-policy priority)
    # Disaggregated prefill, from the body's ``kv_transfer_params`` as vLLM's P/D proxies send it:
    # ``do_remote_decode`` (compute the prompt here, hand its KV off) or ``do_remote_prefill``
    # (the KV was computed elsewhere: pull it, then decode).
    remote_decode: bool = False
    remote_prefill: bool = False


def parse_call(raw: bytes, *, chat: bool, headers: dict[str, str], template: ChatTemplate) -> Call:
    """Read a request body; raises ``BadRequest`` with vLLM-like wording."""
    try:
        body = orjson.loads(raw)
    except orjson.JSONDecodeError as exc:
        raise BadRequest(f"JSON decode error: {exc}") from exc
    if not isinstance(body, dict):
        raise BadRequest("Input should be a valid dictionary")
    text, tokens = _chat_prompt(body, template) if chat else _completion_prompt(body)
    found = body.get("vllm_xargs")
    xargs: dict[str, Any] = found if isinstance(found, dict) else {}
    if "sim_prompt_tokens" in xargs:
        tokens = _int(xargs, "sim_prompt_tokens", 0, 1)
    found = body.get("stream_options")
    stream_options: dict[str, Any] = found if isinstance(found, dict) else {}
    stream = bool(body.get("stream", False))
    if stream_options and not stream:
        raise BadRequest("Stream options can only be defined when `stream=True`.", "stream_options")
    tools = body.get("tools") or []
    if chat and not isinstance(tools, list):
        raise BadRequest("tools must be a list", "tools")
    max_tokens = body.get("max_completion_tokens", body.get("max_tokens")) if chat else body.get("max_tokens", 16)
    return Call(
        chat=chat,
        model=body.get("model"),
        prompt_text=text,
        prompt_tokens=tokens,
        max_tokens=None if max_tokens is None else _int({"max_tokens": max_tokens}, "max_tokens", None, 1),
        min_tokens=_int(body, "min_tokens", 0, 0),
        ignore_eos=bool(body.get("ignore_eos", False)),
        n=_int(body, "n", 1, 1),
        stream=stream,
        include_usage=stream and bool(stream_options.get("include_usage", False)),
        continuous_usage=stream and bool(stream_options.get("continuous_usage_stats", False)),
        tools=tuple(t for t in tools if isinstance(t, dict)) if chat else (),
        tool_choice=body.get("tool_choice", "auto" if tools else "none"),
        task=_task(headers, xargs),
        temperature=body.get("temperature") if isinstance(body.get("temperature"), int | float) else None,
        output_tokens=_int(xargs, "sim_output_tokens", None, 1),
        after_tool=chat and body["messages"][-1].get("role") == "tool",
        last_user_message=_last_user_message(body) if chat else text,
        priority=_priority(body),
        **_kv_transfer(body),
    )


def _kv_transfer(body: dict[str, Any]) -> dict[str, bool]:
    params = body.get("kv_transfer_params")
    if params is None:
        return {}
    if not isinstance(params, dict):
        raise BadRequest("kv_transfer_params: Input should be a valid dictionary", "kv_transfer_params")
    return {"remote_decode": bool(params.get("do_remote_decode")), "remote_prefill": bool(params.get("do_remote_prefill"))}


def _chat_prompt(body: dict[str, Any], template: ChatTemplate) -> tuple[str, int]:
    messages = body.get("messages")
    if not isinstance(messages, list) or not messages or not all(isinstance(m, dict) for m in messages):
        raise BadRequest("messages: Field required (a non-empty list of messages)", "messages")
    text = chat_prompt_text(messages)
    tokens = sum(count_tokens(message_text(m.get("content"))) for m in messages)
    tokens += template.per_message_tokens * len(messages) + template.generation_prompt_tokens
    if not any(m.get("role") == "system" for m in messages):
        tokens += template.default_system_tokens
    if body.get("tools"):
        tokens += count_tokens(orjson.dumps(body["tools"]).decode())  # the template renders them
    return text, tokens


def _last_user_message(body: dict[str, Any]) -> str:
    """The last user message, or a tool's result sent after it: what the model answers next."""
    users = [m for m in body["messages"] if m.get("role") in ("user", "tool")]
    return message_text(users[-1].get("content")) if users else ""


def _completion_prompt(body: dict[str, Any]) -> tuple[str, int]:
    prompt = body.get("prompt")
    if isinstance(prompt, list) and len(prompt) == 1 and isinstance(prompt[0], str | list):
        prompt = prompt[0]
    if isinstance(prompt, str):
        if not prompt:
            raise BadRequest("Prompt cannot be empty", "prompt")
        return prompt, count_tokens(prompt)
    if isinstance(prompt, list) and prompt and all(isinstance(t, int) for t in prompt):
        return " ".join(map(str, prompt)), len(prompt)
    raise BadRequest("prompt: a string or a list of token ids (one prompt per request here)", "prompt")


def _priority(body: dict[str, Any]) -> int:
    """vLLM's ``priority``: any int64 (0 when absent); vLLM accepts it whatever its scheduling
    policy, and only a priority-scheduling engine orders by it."""
    value = body.get("priority", 0)
    if not isinstance(value, int) or isinstance(value, bool) or not -(2**63) <= value < 2**63:
        raise BadRequest(f"priority: Input should be a valid integer, got {value!r}", "priority")
    return value


def _int(body: dict[str, Any], key: str, default: int | None, minimum: int) -> Any:
    value = body.get(key, default)
    if value is None:
        return None
    if not isinstance(value, int) or isinstance(value, bool) or value < minimum:
        raise BadRequest(f"{key} must be at least {minimum}, got {value}. (parameter={key}, value={value})", key)
    return value


def _task(headers: dict[str, str], xargs: dict[str, Any]) -> str:
    task = headers.get("x-duet-task") or xargs.get("duet_task") or "chat"
    return str(task).lower()
