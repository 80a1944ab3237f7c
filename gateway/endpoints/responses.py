"""/v1/responses: OpenAI's Responses API. Its stream ends on ``event: response.completed`` (or
``.failed``, ``.incomplete``); a cut stream ends with ``event: error``. A response is stored on
the replica that made it (``gateway.flow.affinity``)."""

from __future__ import annotations

from typing import Any

from pydantic import model_validator

from gateway.endpoints.body import PositiveTokens
from gateway.endpoints.chat import ChatBody
from gateway.endpoints.endpoint import Endpoint
from gateway.proxy.framing import Framing, ends_on_event, event


class ResponsesBody(ChatBody):
    """/v1/responses (OpenAI's Responses API). ``input`` and ``instructions`` are read as chat
    ``messages`` (for classification and counting only: the body goes upstream as sent);
    ``previous_response_id`` names a response stored on one replica; ``request_id`` (a vLLM
    extra) becomes the new response's id."""

    input: str | list[Any]
    instructions: str | None = None
    max_output_tokens: PositiveTokens | None = None
    previous_response_id: str | None = None
    request_id: str | None = None

    @model_validator(mode="before")
    @classmethod
    def _read_as_chat(cls, data: Any) -> Any:
        if isinstance(data, dict) and "messages" not in data and "input" in data:
            data = {**data, "messages": response_messages(data.get("instructions"), data["input"])}
        return data

    def output_limit(self) -> int | None:
        return self.max_output_tokens


def response_messages(instructions: Any, items: Any) -> list[dict[str, Any]]:
    """The Responses API's instructions and input items as chat messages (text only), never empty."""
    messages: list[dict[str, Any]] = [{"role": "system", "content": instructions}] if isinstance(instructions, str) else []
    if isinstance(items, str):
        return [*messages, {"role": "user", "content": items}]
    for item in items if isinstance(items, list) else []:
        if not isinstance(item, dict):
            continue
        if "content" in item:
            messages.append({"role": item.get("role", "user"), "content": item["content"]})
        elif "output" in item or "arguments" in item:  # a function call's result, or the call
            text = item.get("output", item.get("arguments"))
            messages.append({"role": "tool", "content": text if isinstance(text, str) else ""})
    return messages or [{"role": "user", "content": ""}]


def _cut(message: str, error_type: str, code: str) -> bytes:
    return event("error", {"type": "error", "code": code, "message": message, "param": None})


FRAMING = Framing(ends_on_event("response.completed", "response.failed", "response.incomplete"), _cut)
RESPONSES_API = Endpoint("/v1/responses", ResponsesBody, "Create a response (OpenAI's Responses API; stream with SSE)",
                         framing=FRAMING, stream_usage=False)
