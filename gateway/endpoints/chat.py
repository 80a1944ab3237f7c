"""/v1/chat/completions: OpenAI's chat completions, streamed as OpenAI's SSE (ends on [DONE])."""

from __future__ import annotations

from typing import Annotated, Any

from pydantic import Field

from gateway.endpoints.body import Body
from gateway.endpoints.endpoint import Endpoint
from gateway.endpoints.prompt import PromptView, chat_view


class ChatBody(Body):
    messages: Annotated[list[dict[str, Any]], Field(min_length=1)]
    tools: list[dict[str, Any]] | None = None
    tool_choice: str | dict[str, Any] | None = None

    def prompt_view(self) -> PromptView:
        return chat_view(self.messages, self.tools)


CHAT = Endpoint("/v1/chat/completions", ChatBody, "Create a chat completion (OpenAI-compatible; stream with SSE)")
