"""The simulator's embeddings and detokenize bodies, in vLLM 0.32's shapes."""

from __future__ import annotations

import base64
import math
import struct

import orjson
import pytest

from serving.sim.dialects.api_request import BadRequest
from serving.sim.dialects.pooling import detokenize, embedding_of, embeddings


def test_embeddings_float_in_vllm_shape():
    body = orjson.loads(embeddings({"input": ["one", [1, 2, 3]]}, "m", "ab"))
    assert list(body) == ["id", "object", "created", "model", "data", "usage"]
    assert body["id"] == "embd-ab" and body["object"] == "list" and body["model"] == "m"
    assert [(d["index"], d["object"]) for d in body["data"]] == [(0, "embedding"), (1, "embedding")]
    assert math.isclose(sum(x * x for x in body["data"][0]["embedding"]), 1.0, rel_tol=1e-9)
    assert body["usage"] == {"prompt_tokens": 1 + 3, "total_tokens": 4, "completion_tokens": 0,
                             "prompt_tokens_details": None}


def test_embeddings_base64_is_little_endian_float32():
    body = orjson.loads(embeddings({"input": "same text", "encoding_format": "base64"}, "m", "ab"))
    decoded = struct.unpack("<384f", base64.b64decode(body["data"][0]["embedding"]))
    assert all(math.isclose(a, b, rel_tol=1e-6, abs_tol=1e-7) for a, b in zip(decoded, embedding_of("same text"), strict=True))


@pytest.mark.parametrize("body", [{"input": ""}, {"input": [None]}, {"input": "x", "encoding_format": "hex"}])
def test_bad_embedding_input_is_a_bad_request(body):
    with pytest.raises(BadRequest):
        embeddings(body, "m", "ab")


def test_detokenize_gives_one_piece_per_token():
    assert isinstance(orjson.loads(detokenize({"tokens": [1, 2, 3]}))["prompt"], str)
    with pytest.raises(BadRequest):
        detokenize({"tokens": "1 2"})
