"""Layouts: which TP sizes and chunk budgets each policy may try, and a replica set deployed so."""

from __future__ import annotations

import pytest

from gateway.fleet.capacity.layout import (
    Deployment,
    Layout,
    LayoutSpace,
    laid_out,
    layouts_for,
    own_layout,
    parse_options,
    space,
)
from gateway.fleet.capacity.roles import PD_SPLIT, SPLIT
from gateway.fleet.world.replica_sets import REPLICA_SETS

W4A16 = REPLICA_SETS["h100-70b-w4a16"]
SPACE = LayoutSpace({"standard": (4, 8), "fast": (1, 2, 4)}, {"standard": (None,), "fast": (None, 2048)})


def test_options_parse_per_variant_and_errors_name_the_flag():
    assert parse_options("fast=1,2,4 standard=4", "--tp") == {"fast": (1, 2, 4), "standard": (4,)}
    assert parse_options("fast=1;standard=4,8", "--tp") == {"fast": (1,), "standard": (4, 8)}
    assert parse_options(None, "--tp") == {}
    with pytest.raises(ValueError, match="--tp quick=1: the variant is one of standard, fast"):
        parse_options("quick=1", "--tp")
    with pytest.raises(ValueError, match="--chunk 2048: write VARIANT=N"):
        parse_options("2048", "--chunk")


def test_a_size_the_variant_does_not_fit_is_refused_naming_it():
    with pytest.raises(ValueError, match="--tp standard=2: 'h100-70b-bf16' fits at TP 4, 8 only"):
        space(W4A16, {"standard": (2, 4)}, {})
    chosen = space(W4A16, {"fast": (1, 2)}, {"fast": (2048,)})
    # the profile's own budget (vLLM's default) stays an option beside those named
    assert chosen.tp == {"standard": (4,), "fast": (1, 2)} and chosen.chunk == {"standard": (None,), "fast": (None, 2048)}


def test_duet_tries_every_combination_a_baseline_one_configuration_for_all_its_replicas():
    duet = SPACE.for_duet()
    assert len(duet) == 2 * 3 * 2 and any(not layout.uniform for layout in duet)
    assert SPACE.uniform() == [Layout(Deployment(4), Deployment(4))]
    assert [str(layout) for layout in SPACE.standard_only()] == ["standard TP4", "standard TP8"]
    first = own_layout(W4A16)
    assert layouts_for("duet", SPACE, first)[0] == first == Layout(Deployment(4), Deployment(4))
    assert all(layout.uniform for layout in layouts_for("baseline", SPACE, first))


def test_role_mixes_are_duets_alone_at_each_tp_combination():
    roles = LayoutSpace(SPACE.tp, SPACE.chunk, (SPLIT, PD_SPLIT))
    duet = roles.for_duet()
    with_roles = [layout for layout in duet if layout.roles is not None]
    assert len(duet) == 2 * 3 * 2 + 2 * 3 * 2 and len(with_roles) == 2 * 3 * 2
    assert all(layout.fast is not None and layout.fast.chunk is None and not layout.uniform for layout in with_roles)
    assert roles.uniform() == SPACE.uniform() and roles.standard_only() == SPACE.standard_only()
    first = own_layout(W4A16)
    ordered = layouts_for("duet", roles, first)
    assert ordered[0] == first and ordered[0].roles is None
    assert str(Layout(Deployment(4), Deployment(4), SPLIT)) == "standard TP4, fast TP4, roles split"
    assert Layout(Deployment(4), Deployment(4), SPLIT).suffix({"standard": 0, "fast": 2}) == "@chunk=fast:1x8192+2048"
    assert first.suffix({"standard": 2, "fast": 2}) == ""


def test_a_layout_deploys_each_variant_on_its_gpus_at_their_price():
    layout = Layout(Deployment(4), Deployment(1, 2048))
    deployed = {v.name: v for v in laid_out(W4A16, layout).variants}
    fast = deployed["fast"]
    assert fast.profile == "h100-70b-w4a16-tp1" and fast.max_num_batched_tokens == 2048
    assert fast.cost is not None and fast.cost.usd_per_hour == 3.0  # one H100
    assert deployed["standard"].cost is not None and deployed["standard"].cost.usd_per_hour == 12.0
    assert fast.sim_profile().engine.max_num_batched_tokens == 2048
    # cheaper per token on one GPU than the TP4 replica it came from
    assert fast.price.output_per_mtok < {v.name: v for v in W4A16.variants}["fast"].price.output_per_mtok


def test_the_profiles_own_layout_leaves_the_set_as_committed():
    assert laid_out(W4A16, own_layout(W4A16)) is W4A16
    assert laid_out(W4A16, Layout(Deployment(4), None)) is W4A16
