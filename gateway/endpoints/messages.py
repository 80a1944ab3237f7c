"""/v1/messages: Anthropic's Messages API. Its stream ends on ``event: message_stop``; a cut
stream ends with Anthropic's ``event: error``."""

from __future__ import annotations

from typing import Any

from gateway.endpoints.body import PositiveTokens
from gateway.endpoints.chat import ChatBody
from gateway.endpoints.endpoint import Endpoint
from gateway.endpoints.prompt import PromptView, chat_view
from gateway.proxy.framing import Framing, ends_on_event, event


class MessagesBody(ChatBody):
    """/v1/messages (Anthropic's Messages API): ``max_tokens`` is required, the system prompt is
    its own field, tools carry an ``input_schema``; content blocks' text is read like chat's."""

    max_tokens: PositiveTokens
    system: str | list[dict[str, Any]] | None = None

    def prompt_view(self) -> PromptView:
        return chat_view(self.messages, self.tools, self.system if isinstance(self.system, str) else None)


def _cut(message: str, error_type: str, code: str) -> bytes:
    """Anthropic's error event (its error types: api_error, overloaded_error, ...)."""
    return event("error", {"type": "error", "error": {"type": "api_error", "message": message}})


FRAMING = Framing(ends_on_event("message_stop"), _cut)
MESSAGES_API = Endpoint("/v1/messages", MessagesBody, "Create a message (Anthropic's Messages API; stream with SSE)",
                        framing=FRAMING, stream_usage=False)
