"""/v1/embeddings: one forward pass per input, served by the model's embedding variants when it
has some (``gateway.flow.plan.serving_replicas``)."""

from __future__ import annotations

from typing import Any

from gateway.endpoints.body import Body
from gateway.endpoints.endpoint import Endpoint
from gateway.endpoints.prompt import PromptView, prompt_view


class EmbeddingsBody(Body):
    """/v1/embeddings: ``input`` is a string, token ids, or a batch of either."""

    input: str | list[Any]

    @property
    def prompt(self) -> str | list[Any]:
        return self.input

    def output_limit(self) -> int | None:
        return 1  # an embedding is one forward pass: nothing is decoded

    def prompt_view(self) -> PromptView:
        return prompt_view(self.input, cut=False)  # no prompt cache to find: no prefix blocks


EMBEDDINGS = Endpoint("/v1/embeddings", EmbeddingsBody, "Create embeddings (the model's embedding variants when it has some)")
