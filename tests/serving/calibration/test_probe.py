"""The probe's requests: prompts no cache can answer, prompts that grow only as far as the plan
says, and replies that are not an OpenAI-compatible replica's refused by name. (Its accuracy
against a simulated replica is tested through `duet calibrate`, tests/gateway/cli/test_calibrate.py.)"""

from __future__ import annotations

import asyncio
from collections.abc import Iterator

import httpx
import pytest

from serving.calibration.probe import ProbePlan, probe, prompt_text, served_model
from serving.errors import CalibrationError
from serving.sim.server.testing import SimProcess


@pytest.fixture(scope="module")
def sim() -> Iterator[SimProcess]:
    with SimProcess("h100-70b-bf16") as replica:
        yield replica


def test_every_prompt_opens_with_its_nonce_and_has_about_the_words_asked() -> None:
    first, second = prompt_text(100, "aaaa"), prompt_text(100, "bbbb")
    assert first.startswith("[aaaa] ") and second.startswith("[bbbb] ")
    assert first.removeprefix("[aaaa] ") == second.removeprefix("[bbbb] ")
    assert len(first.split()) == 101


def test_prompts_double_until_the_first_ones_time_has_grown_by_the_plans_factor_past_the_minimum_sizes(sim: SimProcess) -> None:
    plan = ProbePlan(first_prompt_tokens=64, prefill_growth=2.0, repeats=1, concurrencies=(1, 2), decode_tokens=8)
    samples = asyncio.run(probe(sim.url, plan=plan))
    sizes = [s.prompt_tokens for s in samples.prefill]
    assert sizes == sorted(sizes) and len(set(sizes)) == len(sizes) >= plan.min_prompt_sizes
    ttfts = [s.ttft_s for s in samples.prefill]
    assert ttfts[-1] >= 2.0 * ttfts[0] and all(t < 2.0 * ttfts[0] for t in ttfts[2:-1])
    assert [d.concurrency for d in samples.decode] == [1, 2]


@pytest.mark.parametrize(("status", "body", "message"), [
    (200, {"data": []}, "lists no model"),
    (200, [1, 2], "answered list"),
    (404, {"detail": "Not Found"}, "answered 404"),
])
def test_a_server_that_does_not_list_models_is_not_a_replica(status: int, body: object, message: str) -> None:
    transport = httpx.MockTransport(lambda request: httpx.Response(status, json=body))

    async def ask() -> tuple[str, int | None]:
        async with httpx.AsyncClient(transport=transport, base_url="http://replica") as client:
            return await served_model(client)

    with pytest.raises(CalibrationError, match=message):
        asyncio.run(ask())


def test_max_model_len_is_read_where_the_replica_says_it() -> None:
    listing = {"data": [{"id": "m", "max_model_len": 2048}]}
    transport = httpx.MockTransport(lambda request: httpx.Response(200, json=listing))

    async def ask() -> tuple[str, int | None]:
        async with httpx.AsyncClient(transport=transport, base_url="http://replica") as client:
            return await served_model(client)

    assert asyncio.run(ask()) == ("m", 2048)
