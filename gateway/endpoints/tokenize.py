"""/tokenize and /detokenize (vLLM's): routed to a replica of the model and passed through, not
tracked (no admission, no quota, no spend charged)."""

from __future__ import annotations

from typing import Any

from gateway.endpoints.body import decode_json_object, validate_body
from gateway.endpoints.chat import ChatBody
from gateway.endpoints.completions import CompletionBody
from gateway.endpoints.endpoint import Endpoint


class TokenizeBody(CompletionBody):
    """/tokenize with a prompt, and /detokenize (its ``tokens`` pass through as an extra field);
    /tokenize with ``messages`` is a ChatBody."""

    prompt: str | list[Any] = ""


def parse_tokenize_body(raw: bytes) -> tuple[dict[str, Any], ChatBody | TokenizeBody]:
    """/tokenize and /detokenize: a chat body when it has ``messages``, else a prompt (or tokens)."""
    data = decode_json_object(raw)
    if "messages" in data:
        return validate_body(data, ChatBody)
    return validate_body(data, TokenizeBody)


# Either takes a chat body (messages) too, so each reads as one or the other.
Tokenizing = ChatBody | TokenizeBody
TOKENIZE: Endpoint[Tokenizing] = Endpoint(
    "/tokenize", TokenizeBody, "Tokenize a prompt or chat messages on a replica of the model",
    tracked=False, parser=parse_tokenize_body)
DETOKENIZE: Endpoint[Tokenizing] = Endpoint("/detokenize", TokenizeBody, "Detokenize token ids on a replica of the model",
                                            tracked=False, parser=parse_tokenize_body)
