"""Another API over the chat engine, as vLLM serves Anthropic's Messages API
(``vllm/entrypoints/anthropic/serving.py`` turns the request into a chat request and the chat
answer or stream back into its own shape). A ``Dialect`` says how; ``serving.sim.server.over_chat``
runs it through the simulator's chat endpoint, so timing, faults and scripted answers are chat's."""

from __future__ import annotations

from typing import Any, Protocol

import orjson


class StreamTranslator(Protocol):
    def feed(self, chunk: dict[str, Any] | None) -> bytes:
        """The dialect's events for one chat chunk (None: the chat stream's ``[DONE]``)."""


class Dialect(Protocol):
    def chat_request(self, body: dict[str, Any]) -> dict[str, Any]:
        """The chat request that answers ``body``; raises BadRequest."""

    def full(self, chat: dict[str, Any], body: dict[str, Any]) -> dict[str, Any]:
        """The dialect's whole answer from chat's."""

    def stream(self, body: dict[str, Any]) -> StreamTranslator: ...


def event(name: str, data: dict[str, Any]) -> bytes:
    """One named server-sent event, as vLLM writes them for these APIs."""
    return b"event: " + name.encode() + b"\ndata: " + orjson.dumps(data) + b"\n\n"
