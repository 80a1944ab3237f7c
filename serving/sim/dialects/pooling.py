"""POST /v1/embeddings and /detokenize in vLLM 0.32's shapes (``EmbeddingResponse``,
``DetokenizeResponse`` in ``vllm/entrypoints/pooling/embed/protocol.py`` and
``vllm/entrypoints/serve/tokenize/protocol.py``). An embedding is a deterministic unit vector
drawn from the input's text; it is answered at once (no engine time: a pooling pass is one
prefill, which the simulator's decode-step model does not cover)."""

from __future__ import annotations

import base64
import math
import random
import struct
import time
import zlib
from typing import Any

import orjson

from serving.sim.dialects.api_request import BadRequest
from serving.sim.tokens import count_tokens, words

EMBEDDING_DIMENSIONS = 384


def embedding_of(text: str, dimensions: int = EMBEDDING_DIMENSIONS) -> list[float]:
    """A unit vector determined by ``text`` (the same text always embeds alike)."""
    rng = random.Random(zlib.crc32(text.encode()))
    vector = [rng.gauss(0.0, 1.0) for _ in range(dimensions)]
    norm = math.sqrt(sum(x * x for x in vector)) or 1.0
    return [x / norm for x in vector]


def _inputs(body: dict[str, Any]) -> list[tuple[str, int]]:
    """Each input's text and token count: a string, token ids, or a batch of either."""
    raw = body.get("input")
    batch = raw if isinstance(raw, list) and raw and not all(isinstance(t, int) for t in raw) else [raw]
    inputs = []
    for item in batch:
        if isinstance(item, str) and item:
            inputs.append((item, count_tokens(item)))
        elif isinstance(item, list) and item and all(isinstance(t, int) for t in item):
            inputs.append((" ".join(map(str, item)), len(item)))
        else:
            raise BadRequest("input: a non-empty string or list of token ids, or a batch of them", "input")
    return inputs


def embeddings(body: dict[str, Any], served_name: str, request_hex: str) -> bytes:
    """The whole answer; ``encoding_format`` "float" (default) or "base64" (little-endian float32)."""
    encoding = body.get("encoding_format") or "float"
    if encoding not in ("float", "base64"):
        raise BadRequest(f"encoding_format: 'float' or 'base64', got {encoding!r}", "encoding_format")
    dimensions = body.get("dimensions") or EMBEDDING_DIMENSIONS
    data = []
    prompt_tokens = 0
    for index, (text, tokens) in enumerate(_inputs(body)):
        vector: list[float] | str = embedding_of(text, dimensions)
        if encoding == "base64":
            vector = base64.b64encode(struct.pack(f"<{dimensions}f", *vector)).decode()
        data.append({"index": index, "object": "embedding", "embedding": vector})
        prompt_tokens += tokens
    usage = {"prompt_tokens": prompt_tokens, "total_tokens": prompt_tokens, "completion_tokens": 0,
             "prompt_tokens_details": None}
    return orjson.dumps({"id": f"embd-{request_hex}", "object": "list", "created": int(time.time()),
                         "model": served_name, "data": data, "usage": usage})


def detokenize(body: dict[str, Any]) -> bytes:
    """``{"prompt": text}``: one word-like piece per token id (the simulator's ids carry no text)."""
    tokens = body.get("tokens")
    if not isinstance(tokens, list) or not all(isinstance(t, int) for t in tokens):
        raise BadRequest("tokens: a list of token ids", "tokens")
    pieces = [next(words(t)) for t in tokens]
    return orjson.dumps({"prompt": "".join(pieces)})
