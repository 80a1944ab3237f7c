"""The routes beside chat, end to end (gateway under uvicorn, simulated replicas): embeddings
routed to the model's embedding variant and counted, tokenize and detokenize passed through."""

from __future__ import annotations

import copy

import httpx
import openai
import pytest

from serving.sim.server.testing import SimProcess

from .cluster import cluster

FAST_PROFILES = {"standard": ("fast-test", "--time-scale", "1"), "fast": ("fast-test", "--time-scale", "1")}


@pytest.fixture(scope="module")
def embedder():
    with SimProcess("fast-test", "--served-model-name", "smollm2-embed") as sim:
        yield sim


@pytest.fixture(scope="module")
def demo(tmp_path_factory, embedder):
    def add_embedding_variant(raw):
        model = raw["models"]["smollm2"]
        embed = copy.deepcopy(model["variants"]["standard"])
        embed.update(served_model_name="smollm2-embed", replicas=[{"url": embedder.url}])
        embed.pop("launch_profile", None)
        model["variants"]["embed"] = embed
        model["embedding_variants"] = ["embed"]

    with cluster(tmp_path_factory.mktemp("endpoints"), FAST_PROFILES, edit=add_embedding_variant) as c:
        yield c


@pytest.fixture(scope="module")
def client(demo):
    with openai.OpenAI(base_url=demo.url + "/v1", api_key="unused", max_retries=0, timeout=20) as c:
        yield c


def test_embeddings_go_to_the_embedding_variant_with_the_client_model_name(client):
    raw = client.embeddings.with_raw_response.create(model="smollm2", input=["a cat", "a dog"])
    result = raw.parse()  # the SDK asks for base64 and decodes it
    assert raw.headers["x-duet-variant"] == "embed"
    assert result.model == "smollm2"
    assert [d.index for d in result.data] == [0, 1]
    assert len(result.data[0].embedding) == 384
    assert result.usage.prompt_tokens > 0


def test_chat_never_goes_to_the_embedding_variant(client):
    variants = {client.chat.completions.with_raw_response.create(
        model="smollm2", messages=[{"role": "user", "content": "hi"}], max_tokens=2).headers["x-duet-variant"]
        for _ in range(6)}
    assert variants <= {"standard", "fast"}


def test_embeddings_are_counted_like_chat(demo, client):
    client.embeddings.create(model="smollm2", input="count me", encoding_format="float")
    metrics = httpx.get(demo.url + "/metrics").text
    assert any(line.startswith("duet_requests_total{") and 'variant="embed"' in line for line in metrics.splitlines())


def test_tokenize_and_detokenize_pass_through(demo):
    tokens = httpx.post(demo.url + "/tokenize", json={"model": "smollm2", "prompt": "Hello there, world"}).json()
    assert tokens["count"] == len(tokens["tokens"]) > 0 and tokens["max_model_len"] > 0
    chat = httpx.post(demo.url + "/tokenize", json={"model": "smollm2", "messages": [{"role": "user", "content": "hi"}]})
    assert chat.status_code == 200 and chat.json()["count"] > 0
    text = httpx.post(demo.url + "/detokenize", json={"model": "smollm2", "tokens": tokens["tokens"]})
    assert text.status_code == 200 and isinstance(text.json()["prompt"], str)
    assert text.headers["x-duet-variant"] in {"standard", "fast"}


def test_unknown_model_on_tokenize_is_404(demo):
    response = httpx.post(demo.url + "/tokenize", json={"model": "nope", "prompt": "x"})
    assert response.status_code == 404
