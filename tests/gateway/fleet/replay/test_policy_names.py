"""Policy names with engine suffixes: ``@pd=`` and ``@chunk=`` parsed strictly, in any order,
each error naming the policy and the part it could not read."""

from __future__ import annotations

import pytest

from gateway.errors import ConfigError
from gateway.fleet.replay.policy_names import (
    ChunkGroup,
    ChunkLayout,
    PolicyName,
    PolicyNameError,
    parse_chunk_layout,
    parse_policy_name,
)

COUNTS = {"standard": 4, "fast": 2}


@pytest.mark.parametrize(("name", "parsed"), [
    ("duet", PolicyName("duet")),
    ("llm-d-default@chunk=2048", PolicyName("llm-d-default", chunk=ChunkLayout(uniform=2048))),
    ("duet@pd=2:0:duet", PolicyName("duet", pd="2:0:duet")),
    ("duet@chunk=fast:2048@pd=2:0:duet",
     PolicyName("duet", pd="2:0:duet", chunk=ChunkLayout(variants=(("fast", (ChunkGroup(None, 2048),)),)))),
    ("duet@pd=1:2+1:threshold@chunk=4096", PolicyName("duet", pd="1:2+1:threshold", chunk=ChunkLayout(uniform=4096))),
])
def test_names_and_their_suffixes(name: str, parsed: PolicyName) -> None:
    assert parse_policy_name(name) == parsed


def test_groups_give_each_replica_of_a_variant_its_budget_in_order() -> None:
    layout = parse_chunk_layout("standard:1x16384+2x8192+2048:fast:2048")
    assert layout.budgets(COUNTS, "p") == {"standard": [16384, 8192, 8192, 2048], "fast": [2048, 2048]}
    assert parse_chunk_layout("standard:4x4096").budgets(COUNTS, "p") == {"standard": [4096] * 4, "fast": [None, None]}
    assert parse_chunk_layout("2048").budgets(COUNTS, "p") == {"standard": [2048] * 4, "fast": [2048] * 2}


@pytest.mark.parametrize(("name", "path", "message"), [
    ("@chunk=2048", "@chunk=2048", "no policy"),
    ("duet@chunks=2048", "duet@chunks=2048 @chunks=2048", "unknown suffix"),
    ("duet@chunk", "duet@chunk @chunk", "unknown suffix"),
    ("duet@chunk=", "duet@chunk= @chunk", "empty"),
    ("duet@chunk=2048@chunk=4096", "duet@chunk=2048@chunk=4096 @chunk", "given twice"),
    ("duet@chunk=0", "duet@chunk=0 @chunk", "not a chunk budget"),
    ("duet@chunk=2k", "duet@chunk=2k @chunk", "not a chunk budget"),
    ("duet@chunk=standard:2048:fast", "duet@chunk=standard:2048:fast @chunk", "pairs separated by ':'"),
    ("duet@chunk=standard:2048:standard:4096", "duet@chunk=standard:2048:standard:4096 @chunk.standard", "named twice"),
    ("duet@chunk=2048:4096", "duet@chunk=2048:4096 @chunk.2048", "not a variant's name"),
    ("duet@chunk=standard:0x2048+4096", "duet@chunk=standard:0x2048+4096 @chunk.standard", "positive whole number"),
    ("duet@chunk=standard:2048+4096", "duet@chunk=standard:2048+4096 @chunk.standard", "only the last group"),
])
def test_bad_names_are_refused_naming_the_part(name: str, path: str, message: str) -> None:
    with pytest.raises(PolicyNameError, match=message) as caught:
        parse_policy_name(name)
    assert caught.value.path == path
    assert isinstance(caught.value, ConfigError) and isinstance(caught.value, ValueError)


@pytest.mark.parametrize(("layout", "message"), [
    ("standard:5x2048", "the groups name 5 replicas; the variant has 4"),
    ("standard:3x2048", "the groups name 3 replicas; the variant has 4"),
    ("standard:4x2048+8192", "the groups name 4 replicas and the rest; the variant has 4"),
    ("medium:2048", "no variant 'medium'"),
])
def test_groups_that_do_not_fit_the_fleet_are_refused(layout: str, message: str) -> None:
    with pytest.raises(PolicyNameError, match=message):
        parse_chunk_layout(layout, "duet").budgets(COUNTS, "duet")
