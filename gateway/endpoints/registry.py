"""Every proxied API, registered once. The HTTP layer serves exactly these (its fast path by path,
the gate's route table, the OpenAPI document); the lifecycle reads their bodies as ``RequestBody``.

A new API: one module beside this one (its body type, its ``Endpoint``: path, framing, tracked)
and one line in ``ENDPOINTS``."""

from __future__ import annotations

from typing import Any

from gateway.endpoints.body import decode_json_object, validate_body
from gateway.endpoints.chat import CHAT, ChatBody
from gateway.endpoints.completions import COMPLETIONS, CompletionBody
from gateway.endpoints.embeddings import EMBEDDINGS, EmbeddingsBody
from gateway.endpoints.endpoint import Endpoint
from gateway.endpoints.messages import MESSAGES_API
from gateway.endpoints.responses import RESPONSES_API
from gateway.endpoints.tokenize import DETOKENIZE, TOKENIZE

# What the lifecycle reads of any proxied API's body (Messages and Responses are chat bodies,
# tokenize's a completions body).
RequestBody = ChatBody | CompletionBody | EmbeddingsBody

# By path, in the OpenAPI document's order.
ENDPOINTS: dict[str, Endpoint[RequestBody]] = {
    e.path: e for e in (CHAT, COMPLETIONS, EMBEDDINGS, TOKENIZE, DETOKENIZE, MESSAGES_API, RESPONSES_API)
}


def parse_any_body(raw: bytes) -> tuple[dict[str, Any], ChatBody | CompletionBody]:
    """A chat body when it has ``messages``, else a completions body (the dry run, ``duet explain``)."""
    data = decode_json_object(raw)
    if "messages" in data:
        return validate_body(data, ChatBody)
    return validate_body(data, CompletionBody)
