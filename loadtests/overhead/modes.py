"""The request kinds a run measures: which endpoint, streamed or not, and which gateways serve it.

Chat (issue #3) runs against every gateway. The Responses API (issue #20) runs against the
direct connection, Duet and vllm-router only: vllm-router 0.1.17 routes ``POST /v1/responses``
to its workers (the route is in its binary's route table, beside ``/v1/responses/{response_id}``),
so its rate is the yardstick. LiteLLM is left out of these rows: the goal is stated against
vllm-router, and each mode adds ~20 s per gateway to a run that should stay a few minutes.
"""

from __future__ import annotations

from dataclasses import dataclass

CHAT_PATH = "/v1/chat/completions"
RESPONSES_PATH = "/v1/responses"


@dataclass(frozen=True, slots=True)
class Mode:
    """One row kind of the table: ``name`` as printed, the ``path`` POSTed, ``stream`` or not."""

    name: str
    path: str
    stream: bool

    @property
    def api(self) -> str:
        """``chat`` or ``responses``: which canned request and answer the mode uses."""
        return "responses" if self.path == RESPONSES_PATH else "chat"


CHAT_MODES = (Mode("non-stream", CHAT_PATH, False), Mode("stream", CHAT_PATH, True))
RESPONSES_MODES = (Mode("responses", RESPONSES_PATH, False), Mode("responses-stream", RESPONSES_PATH, True))
ALL_MODES = CHAT_MODES + RESPONSES_MODES
# Who is measured in the Responses modes (see the module docstring); "direct" is the backend itself.
RESPONSES_GATEWAYS = frozenset({"direct", "duet", "vllm-router"})


def modes_for(gateway: str) -> tuple[Mode, ...]:
    """The modes ``gateway`` is measured in: chat always, the Responses API where it is compared."""
    return ALL_MODES if gateway in RESPONSES_GATEWAYS else CHAT_MODES


def mode_named(name: str) -> Mode:
    """The mode called ``name`` (``KeyError`` for an unknown one)."""
    for mode in ALL_MODES:
        if mode.name == name:
            return mode
    raise KeyError(name)
