"""How each API's event stream ends, and how the gateway tells a client its stream was cut.

    API                  last event                                     a cut stream ends with
    chat, completions    data: [DONE]                                   an error event, then [DONE]
    Messages (Anthropic) event: message_stop                            event: error
    Responses            event: response.completed / .failed / .incomplete   event: error

The relay (``gateway.proxy.relay``) asks ``ends`` of every block of complete events it forwards;
for chat that is the same ``has_done`` search it always made.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import orjson

from gateway.proxy.sse import DONE, error_event, has_done

# (message, error type, error code) -> the bytes that end the client's stream.
Cut = Callable[[str, str, str], bytes]


@dataclass(frozen=True, slots=True)
class Framing:
    ends: Callable[[bytes], bool]
    cut: Cut


def _openai_cut(message: str, error_type: str, code: str) -> bytes:
    return error_event(message, error_type, code) + DONE


def _ends_on_event(*names: str) -> Callable[[bytes], bool]:
    """Whether a block of complete events holds an event named one of ``names``."""
    heads = tuple(f"event: {name}\n".encode() for name in names)
    inside = tuple(b"\n\n" + head for head in heads)

    def ends(block: bytes) -> bool:
        return any(block.startswith(head) for head in heads) or any(mark in block for mark in inside)

    return ends


def _event(name: str, data: dict[str, object]) -> bytes:
    return b"event: " + name.encode() + b"\ndata: " + orjson.dumps(data) + b"\n\n"


def _messages_cut(message: str, error_type: str, code: str) -> bytes:
    """Anthropic's error event (its error types: api_error, overloaded_error, ...)."""
    return _event("error", {"type": "error", "error": {"type": "api_error", "message": message}})


def _responses_cut(message: str, error_type: str, code: str) -> bytes:
    return _event("error", {"type": "error", "code": code, "message": message, "param": None})


OPENAI = Framing(has_done, _openai_cut)
MESSAGES = Framing(_ends_on_event("message_stop"), _messages_cut)
RESPONSES = Framing(_ends_on_event("response.completed", "response.failed", "response.incomplete"), _responses_cut)
