"""/v1/completions: OpenAI's (legacy) completions, a prompt rather than messages."""

from __future__ import annotations

from typing import Any

from gateway.endpoints.body import Body
from gateway.endpoints.endpoint import Endpoint
from gateway.endpoints.prompt import PromptView, prompt_view


class CompletionBody(Body):
    prompt: str | list[Any]

    def prompt_view(self) -> PromptView:
        return prompt_view(self.prompt)


COMPLETIONS = Endpoint("/v1/completions", CompletionBody, "Create a completion (OpenAI-compatible; stream with SSE)")
