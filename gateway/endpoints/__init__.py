"""The proxied APIs, one module each (after vLLM's ``entrypoints/openai/``): its body type (the
protocol), its path, how its stream ends and whether the gateway tracks it. ``registry`` lists
them; the HTTP layer (``gateway.api``) serves what it lists, the lifecycle (``gateway.flow``)
reads their bodies and each body's ``PromptView`` (``prompt``).

    body.py         what every body shares (``Body``), parsing and validation
    endpoint.py     ``Endpoint``: path, body type, framing, tracked or passed through
    prompt.py       ``PromptView``: a request's prompt texts, read from its body once
    chat.py, completions.py, embeddings.py, tokenize.py (and /detokenize), messages.py
                    (Anthropic's), responses.py (OpenAI's Responses API): one API each
    registry.py     ``ENDPOINTS`` (every API, once) and ``RequestBody``

Below the lifecycle: imports the vocabulary, ``gateway.errors`` and the relay's ``Framing`` only.
"""

from gateway.endpoints.body import Body, parse_body, validate_body
from gateway.endpoints.chat import ChatBody
from gateway.endpoints.completions import CompletionBody
from gateway.endpoints.embeddings import EmbeddingsBody
from gateway.endpoints.endpoint import Endpoint
from gateway.endpoints.messages import MessagesBody
from gateway.endpoints.prompt import PromptView
from gateway.endpoints.registry import ENDPOINTS, RequestBody, parse_any_body
from gateway.endpoints.responses import ResponsesBody
from gateway.endpoints.tokenize import TokenizeBody, parse_tokenize_body

__all__ = [
    "ENDPOINTS", "Body", "ChatBody", "CompletionBody", "EmbeddingsBody", "Endpoint", "MessagesBody", "PromptView",
    "RequestBody", "ResponsesBody", "TokenizeBody", "parse_any_body", "parse_body", "parse_tokenize_body", "validate_body",
]
