"""The prefix index: longest cached prefix per replica, learned from dispatches, bounded, and
forgotten when a replica restarts."""

from __future__ import annotations

import pytest

from gateway.domain import Health, ReplicaState
from gateway.state.prefix_blocks import token_block_ids
from gateway.state.prefix_index import InMemoryPrefixIndex, Life, restarted


def blocks(*ids: int) -> tuple[int, ...]:
    return ids


def test_the_longest_learned_prefix_is_what_a_replica_holds():
    index = InMemoryPrefixIndex(100)
    index.learn("r1", blocks(1, 2, 3))
    assert index.cached_blocks("r1", blocks(1, 2, 3, 4)) == 3
    assert index.cached_blocks("r1", blocks(1, 2, 9, 4)) == 2
    assert index.cached_blocks("r1", blocks(7, 2, 3)) == 0  # a chain broken at the head holds nothing
    assert index.cached_blocks("r2", blocks(1, 2, 3)) == 0
    assert index.cached_blocks("r1", ()) == 0


def test_a_conversation_grows_its_prefix_turn_by_turn():
    index = InMemoryPrefixIndex(1000)
    prompt: list[int] = []
    for turn in range(10):
        prompt += list(range(turn * 100, turn * 100 + 100))
        ids = token_block_ids(prompt, 16)
        assert index.cached_blocks("r", ids) == len(token_block_ids(prompt[:-100], 16))
        index.learn("r", ids)


def test_eviction_takes_the_tails_of_prefixes_before_their_heads():
    index = InMemoryPrefixIndex(4)
    index.learn("r", blocks(1, 2, 3))
    index.learn("r", blocks(10, 11, 12))  # 6 blocks for 4 places: the oldest prefix's tail goes
    assert index.blocks_held("r") == 4
    assert index.cached_blocks("r", blocks(10, 11, 12)) == 3
    assert index.cached_blocks("r", blocks(1, 2, 3)) == 1  # its head is still there


def test_stays_bounded_under_a_million_distinct_prefixes():
    capacity = 31_250
    index = InMemoryPrefixIndex(capacity)
    for prefix in range(1_000_000):
        index.learn("r", (prefix,))
    assert index.blocks_held("r") == capacity
    assert index.cached_blocks("r", (999_999,)) == 1  # the most recent are the ones kept
    assert index.cached_blocks("r", (0,)) == 0


def state(health: Health = Health.UP, started_at: float | None = 100.0) -> ReplicaState:
    return ReplicaState("r", health=health, started_at=started_at)


@pytest.mark.parametrize(("before", "after", "forgotten"), [
    (state(), state(), False),
    (state(started_at=100.0), state(started_at=250.0), True),  # vLLM restarted between two scrapes
    (state(Health.DOWN), state(Health.UP), True),  # went down, came back
    (state(Health.UP, None), state(Health.UP, None), False),
    (state(Health.DOWN, None), state(Health.UP, None), True),  # no start time: down then up is all we see
    (state(Health.UP, 100.0), state(Health.UNKNOWN, None), False),  # a scrape went stale: not a restart
    (state(Health.UP), state(Health.DOWN), False),  # down: forgotten only once it is back
])
def test_a_restarted_replica_is_treated_as_cold(before, after, forgotten):
    index = InMemoryPrefixIndex(100)
    index.watch({"r": before})
    index.learn("r", blocks(1, 2))
    index.watch({"r": after})
    assert index.cached_blocks("r", blocks(1, 2)) == (0 if forgotten else 2)


def test_down_then_up_is_caught_even_with_routing_reads_in_between():
    index = InMemoryPrefixIndex(100)
    index.watch({"r": state()})
    index.learn("r", blocks(1, 2))
    for _ in range(3):
        index.watch({"r": state(Health.DOWN)})
    index.watch({"r": state()})
    assert index.cached_blocks("r", blocks(1, 2)) == 0
    index.learn("r", blocks(1, 2))
    index.watch({"r": state()})  # up and up again: kept
    assert index.cached_blocks("r", blocks(1, 2)) == 2


def test_restart_rule_ignores_an_unknown_start_time():
    assert not restarted(Life(100.0, False), Life(None, False))
