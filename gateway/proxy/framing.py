"""How an API's event stream ends, and how the gateway tells a client its stream was cut: each
proxied API says its own (``gateway.endpoints``: Messages ends on ``event: message_stop``, the
Responses API on ``event: response.completed``, ``.failed`` or ``.incomplete``, both cut with an
``event: error``); OpenAI's, below, ends on ``data: [DONE]`` and is cut with an error event,
then [DONE].

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


def ends_on_event(*names: str) -> Callable[[bytes], bool]:
    """Whether a block of complete events holds an event named one of ``names``."""
    heads = tuple(f"event: {name}\n".encode() for name in names)
    inside = tuple(b"\n\n" + head for head in heads)

    def ends(block: bytes) -> bool:
        return any(block.startswith(head) for head in heads) or any(mark in block for mark in inside)

    return ends


def event(name: str, data: dict[str, object]) -> bytes:
    """A named SSE event with a JSON payload."""
    return b"event: " + name.encode() + b"\ndata: " + orjson.dumps(data) + b"\n\n"


# OpenAI's: chat, completions (and the relay's default).
OPENAI = Framing(has_done, _openai_cut)
