"""The fast backend's answers, shaped like vLLM 0.33's, computed once as bytes.

Pure: no I/O. ``backend.py`` writes them into the nginx/Lua backend; the smoke check in
``measure/smoke.py`` uses the same constants to tell a faithful pass-through from a mangled one.
"""

from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass

SERVED_MODEL_NAME = "smollm2-standard"
LOGICAL_MODEL = "smollm2"
PROMPT_TOKENS = 24
# 16 content tokens -> role + 16 content + finish + usage chunks + [DONE] = 20 SSE events: each is
# one write on loopback, which costs the backend ~13 us of kernel time, so more would make the
# backend's own stream ceiling (~2-3k req/s on one core) approach a fast gateway's.
CONTENT_TOKENS: tuple[str, ...] = tuple(
    f"{word} " for word in "The capital of France is Paris , on the Seine , famed for art and food".split()
)
CREATED = 1_767_225_600
# Sent by every request; LiteLLM's proxy refuses to start without a strong master key.
API_KEY = "sk-" + hashlib.sha256(b"duet overhead benchmark").hexdigest()
COMPLETION_ID = "chatcmpl-bench0000000000000000000000"
RESPONSE_ID = "resp_bench0000000000000000000000"
MESSAGE_ITEM_ID = "msg_bench000000000000"
ANTHROPIC_MESSAGE_ID = "chatcmpl-bench000000000000"


@dataclass(frozen=True, slots=True)
class CannedResponses:
    """Every body the backend serves, as UTF-8 bytes ready to send."""

    chat_json: bytes
    chat_sse_events: tuple[bytes, ...]
    models_json: bytes
    metrics_text: bytes
    responses_json: bytes
    responses_sse_events: tuple[bytes, ...]
    messages_json: bytes
    messages_sse_events: tuple[bytes, ...]

    @property
    def sse_event_count(self) -> int:
        """Number of ``data:`` events in a stream, ``[DONE]`` included."""
        return len(self.chat_sse_events)


def _dumps(value: object) -> str:
    return json.dumps(value, separators=(",", ":"))


def _usage() -> dict[str, object]:
    completion = len(CONTENT_TOKENS)
    return {
        "prompt_tokens": PROMPT_TOKENS,
        "total_tokens": PROMPT_TOKENS + completion,
        "completion_tokens": completion,
        "prompt_tokens_details": None,
    }


def chat_completion_json() -> bytes:
    """A non-stream ``chat.completion`` body as vLLM returns it."""
    body = {
        "id": COMPLETION_ID,
        "object": "chat.completion",
        "created": CREATED,
        "model": SERVED_MODEL_NAME,
        "choices": [{
            "index": 0,
            "message": {"role": "assistant", "content": "".join(CONTENT_TOKENS).strip(),
                        "refusal": None, "annotations": None, "audio": None,
                        "function_call": None, "tool_calls": [], "reasoning_content": None},
            "logprobs": None,
            "finish_reason": "stop",
            "stop_reason": None,
        }],
        "service_tier": None,
        "system_fingerprint": None,
        "usage": _usage(),
        "prompt_logprobs": None,
        "kv_transfer_params": None,
    }
    return _dumps(body).encode()


def _chunk(delta: dict[str, object], finish_reason: str | None = None) -> dict[str, object]:
    return {
        "id": COMPLETION_ID,
        "object": "chat.completion.chunk",
        "created": CREATED,
        "model": SERVED_MODEL_NAME,
        "choices": [{"index": 0, "delta": delta, "logprobs": None,
                     "finish_reason": finish_reason, "stop_reason": None}],
    }


def chat_completion_sse_events() -> tuple[bytes, ...]:
    """The SSE events of a stream with usage, each ``data: ...\\n\\n``, ending in ``[DONE]``."""
    chunks: list[dict[str, object]] = [_chunk({"role": "assistant", "content": ""})]
    chunks += [_chunk({"content": token}) for token in CONTENT_TOKENS]
    chunks.append(_chunk({"content": ""}, finish_reason="stop"))
    usage_chunk = {"id": COMPLETION_ID, "object": "chat.completion.chunk", "created": CREATED,
                   "model": SERVED_MODEL_NAME, "choices": [], "usage": _usage()}
    chunks.append(usage_chunk)
    events = [f"data: {_dumps(chunk)}\n\n".encode() for chunk in chunks]
    return (*events, b"data: [DONE]\n\n")


def models_json() -> bytes:
    """``GET /v1/models`` listing the one served model."""
    return _dumps({"object": "list", "data": [{
        "id": SERVED_MODEL_NAME, "object": "model", "created": CREATED, "owned_by": "vllm",
        "root": SERVED_MODEL_NAME, "parent": None, "max_model_len": 2048, "permission": [],
    }]}).encode()


def metrics_text() -> bytes:
    """A small ``GET /metrics`` page with the vLLM 0.33 gauges and counters routers read."""
    labels = f'engine="0",model_name="{SERVED_MODEL_NAME}"'
    lines = [
        "# TYPE vllm:num_requests_running gauge", f"vllm:num_requests_running{{{labels}}} 0.0",
        "# TYPE vllm:num_requests_waiting gauge", f"vllm:num_requests_waiting{{{labels}}} 0.0",
        "# TYPE vllm:kv_cache_usage_perc gauge", f"vllm:kv_cache_usage_perc{{{labels}}} 0.0",
        "# TYPE vllm:prompt_tokens_total counter", f"vllm:prompt_tokens_total{{{labels}}} 0.0",
        "# TYPE vllm:generation_tokens_total counter", f"vllm:generation_tokens_total{{{labels}}} 0.0",
        "# TYPE vllm:num_preemptions_total counter", f"vllm:num_preemptions_total{{{labels}}} 0.0",
    ]
    return ("\n".join(lines) + "\n").encode()


def _response(status: str, output: list[dict[str, object]], usage: dict[str, object] | None) -> dict[str, object]:
    """A Responses API ``response`` object with vLLM 0.32's fields (tests/fixtures/vllm_cpu/apis)."""
    return {
        "id": RESPONSE_ID, "created_at": CREATED, "incomplete_details": None, "instructions": None,
        "metadata": None, "model": SERVED_MODEL_NAME, "object": "response", "output": output,
        "parallel_tool_calls": True, "temperature": 0.0, "tool_choice": "none", "tools": [], "top_p": 1.0,
        "background": False, "max_output_tokens": len(CONTENT_TOKENS), "max_tool_calls": None,
        "previous_response_id": None, "prompt": None, "reasoning": None, "service_tier": "auto",
        "status": status, "text": None, "top_logprobs": None, "truncation": "disabled", "usage": usage,
        "user": None, "presence_penalty": 0.0, "frequency_penalty": 0.0, "kv_transfer_params": None,
        "ec_transfer_params": None, "input_messages": None, "output_messages": None,
    }


def _responses_usage() -> dict[str, object]:
    completion = len(CONTENT_TOKENS)
    return {
        "input_tokens": PROMPT_TOKENS,
        "input_tokens_details": {"cached_tokens": 0, "cache_write_tokens": 0, "input_tokens_per_turn": [],
                                 "cached_tokens_per_turn": []},
        "output_tokens": completion,
        "output_tokens_details": {"reasoning_tokens": 0, "tool_output_tokens": 0, "output_tokens_per_turn": [],
                                  "tool_output_tokens_per_turn": []},
        "total_tokens": PROMPT_TOKENS + completion,
    }


def _output_text(logprobs: list[object] | None) -> dict[str, object]:
    return {"annotations": [], "text": "".join(CONTENT_TOKENS).strip(), "type": "output_text", "logprobs": logprobs}


def _message_item(status: str, content: list[dict[str, object]]) -> dict[str, object]:
    return {"id": MESSAGE_ITEM_ID, "content": content, "role": "assistant", "status": status, "type": "message",
            "phase": None}


def responses_json() -> bytes:
    """A non-stream ``response`` body as vLLM 0.32 returns it for a plain text answer."""
    item = _message_item("completed", [_output_text(None)])
    return _dumps(_response("completed", [item], _responses_usage())).encode()


def responses_sse_events() -> tuple[bytes, ...]:
    """vLLM 0.32's stream of a text answer, each ``event: TYPE\ndata: {...}\n\n``: created,
    in_progress, output_item.added, content_part.added, one output_text.delta per token, then
    output_text.done, content_part.done, output_item.done, completed. No ``[DONE]``: vLLM ends a
    Responses stream with ``response.completed``."""
    done_item = _message_item("completed", [_output_text(None)])
    part = {"content_index": 0, "item_id": MESSAGE_ITEM_ID, "output_index": 0}
    events: list[dict[str, object]] = [
        {"response": _response("in_progress", [], None), "type": "response.created"},
        {"response": _response("in_progress", [], None), "type": "response.in_progress"},
        {"item": _message_item("in_progress", []), "output_index": 0, "type": "response.output_item.added"},
        {**part, "part": {**_output_text([]), "text": ""}, "type": "response.content_part.added"},
        *({**part, "delta": token, "logprobs": [], "type": "response.output_text.delta"} for token in CONTENT_TOKENS),
        {**part, "logprobs": [], "text": "".join(CONTENT_TOKENS).strip(), "type": "response.output_text.done"},
        {**part, "part": _output_text(None), "type": "response.content_part.done"},
        {"item": done_item, "output_index": 0, "type": "response.output_item.done"},
        {"response": _response("completed", [done_item], _responses_usage()), "type": "response.completed"},
    ]
    return tuple(f"event: {event['type']}\ndata: {_dumps({**event, 'sequence_number': n})}\n\n".encode()
                 for n, event in enumerate(events))


def _message(content: list[dict[str, object]], stop_reason: str | None, output_tokens: int,
             streamed: bool = False) -> dict[str, object]:
    """A Messages ``message`` object; the stream's first one carries ``stop_sequence`` too."""
    return {"id": ANTHROPIC_MESSAGE_ID, "type": "message", "role": "assistant", "content": content,
            "model": SERVED_MODEL_NAME, "stop_reason": stop_reason, **({"stop_sequence": None} if streamed else {}),
            "usage": {"input_tokens": PROMPT_TOKENS, "output_tokens": output_tokens}}


def messages_json() -> bytes:
    """A non-stream Anthropic Messages answer as vLLM 0.32 returns it (tests/fixtures/vllm_cpu/apis)."""
    text: dict[str, object] = {"type": "text", "text": "".join(CONTENT_TOKENS).strip()}
    return _dumps(_message([text], "end_turn", len(CONTENT_TOKENS))).encode()


def messages_sse_events() -> tuple[bytes, ...]:
    """vLLM 0.32's Messages stream, each ``event: TYPE\ndata: {...}\n\n``: message_start,
    content_block_start, one content_block_delta per token, content_block_stop, message_delta
    (stop reason and usage), message_stop. No ``[DONE]``."""
    events: list[dict[str, object]] = [
        {"type": "message_start", "message": _message([], None, 0, streamed=True)},
        {"type": "content_block_start", "content_block": {"type": "text", "text": ""}, "index": 0},
        *({"type": "content_block_delta", "delta": {"type": "text_delta", "text": token}, "index": 0}
          for token in CONTENT_TOKENS),
        {"type": "content_block_stop", "index": 0},
        {"type": "message_delta", "delta": {"stop_reason": "end_turn", "stop_sequence": None},
         "usage": {"input_tokens": PROMPT_TOKENS, "output_tokens": len(CONTENT_TOKENS)}},
        {"type": "message_stop"},
    ]
    return tuple(f"event: {event['type']}\ndata: {_dumps(event)}\n\n".encode() for event in events)


def canned_responses() -> CannedResponses:
    """All of the backend's bodies."""
    return CannedResponses(chat_completion_json(), chat_completion_sse_events(), models_json(),
                           metrics_text(), responses_json(), responses_sse_events(), messages_json(),
                           messages_sse_events())


def request_body(stream: bool) -> bytes:
    """The chat request every gateway receives: the logical model, a short prompt, 16 tokens."""
    body: dict[str, object] = {
        "model": LOGICAL_MODEL,
        "messages": [{"role": "user", "content": "What is the capital of France? Answer briefly."}],
        "max_tokens": len(CONTENT_TOKENS),
        "temperature": 0,
    }
    if stream:
        body["stream"] = True
        body["stream_options"] = {"include_usage": True}
    return _dumps(body).encode()


def messages_request_body(stream: bool) -> bytes:
    """The same question to Anthropic's Messages API (``max_tokens`` is required there)."""
    body: dict[str, object] = {
        "model": LOGICAL_MODEL,
        "max_tokens": len(CONTENT_TOKENS),
        "temperature": 0,
        "messages": [{"role": "user", "content": "What is the capital of France? Answer briefly."}],
    }
    if stream:
        body["stream"] = True
    return _dumps(body).encode()


def responses_request_body(stream: bool) -> bytes:
    """The same question to the Responses API: ``input`` text, 16 output tokens."""
    body: dict[str, object] = {
        "model": LOGICAL_MODEL,
        "input": "What is the capital of France? Answer briefly.",
        "max_output_tokens": len(CONTENT_TOKENS),
        "temperature": 0,
    }
    if stream:
        body["stream"] = True
    return _dumps(body).encode()
