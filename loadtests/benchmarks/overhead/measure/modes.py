"""The request kinds a run measures: which endpoint, streamed or not, and which gateways serve it.

Chat (issue #3) runs against every gateway. The Responses API (issue #20) runs against the
direct connection, Duet and vllm-router only: vllm-router 0.1.17 routes ``POST /v1/responses``
to its workers (the route is in its binary's route table, beside ``/v1/responses/{response_id}``),
so its rate is the yardstick. LiteLLM is left out of these rows: the goal is stated against
vllm-router, and each mode adds ~20 s per gateway to a run that should stay a few minutes.
Anthropic's Messages API runs against the direct connection and Duet only: vllm-router 0.1.17
has no ``/v1/messages`` route, so there is no peer rate to hold Duet to, only the added latency.
"""

from __future__ import annotations

from dataclasses import dataclass

CHAT_PATH = "/v1/chat/completions"
RESPONSES_PATH = "/v1/responses"
MESSAGES_PATH = "/v1/messages"


@dataclass(frozen=True, slots=True)
class Mode:
    """One row kind of the table: ``name`` as printed, the ``path`` POSTed, ``stream`` or not."""

    name: str
    path: str
    stream: bool

    @property
    def api(self) -> str:
        """``chat``, ``responses`` or ``messages``: which canned request and answer the mode uses."""
        return {RESPONSES_PATH: "responses", MESSAGES_PATH: "messages"}.get(self.path, "chat")


CHAT_MODES = (Mode("non-stream", CHAT_PATH, False), Mode("stream", CHAT_PATH, True))
RESPONSES_MODES = (Mode("responses", RESPONSES_PATH, False), Mode("responses-stream", RESPONSES_PATH, True))
MESSAGES_MODES = (Mode("messages", MESSAGES_PATH, False), Mode("messages-stream", MESSAGES_PATH, True))
ALL_MODES = CHAT_MODES + RESPONSES_MODES + MESSAGES_MODES
# Who is measured in the other APIs' modes (see the module docstring); "direct" is the backend itself.
RESPONSES_GATEWAYS = frozenset({"direct", "duet", "vllm-router"})
MESSAGES_GATEWAYS = frozenset({"direct", "duet"})


def modes_for(gateway: str) -> tuple[Mode, ...]:
    """The modes ``gateway`` is measured in: chat always, the other APIs where they are compared."""
    return (CHAT_MODES + (RESPONSES_MODES if gateway in RESPONSES_GATEWAYS else ())
            + (MESSAGES_MODES if gateway in MESSAGES_GATEWAYS else ()))


def mode_named(name: str) -> Mode:
    """The mode called ``name`` (``KeyError`` for an unknown one)."""
    for mode in ALL_MODES:
        if mode.name == name:
            return mode
    raise KeyError(name)
