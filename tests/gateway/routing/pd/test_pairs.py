"""Which prefill and decode replicas may serve a request together."""

from __future__ import annotations

import pytest

from gateway.domain import Candidate
from gateway.routing.pd.pairs import may_decode_from, pairs_for

from ..factories import FAST, STANDARD, request
from .fleet import DOWN, FAST_ON_STANDARD, PROFILE, both, decode, prefill, replica

KV_CASES = [
    ("same variant, same connector", decode(2), prefill(1), True),
    ("another connector", decode(2), replica(STANDARD, 1, prefill(1).replica.engine.role, "LMCacheConnectorV1"), False),
    ("speculative declared on the standard weights", decode(2, FAST_ON_STANDARD), prefill(1), True),
    ("speculative not declared", decode(2, FAST), prefill(1), False),
    ("standard from a speculative variant's prefill", decode(2), prefill(1, FAST_ON_STANDARD), False),
]


@pytest.mark.parametrize(("case", "dec", "pre", "may"), KV_CASES, ids=[c[0] for c in KV_CASES])
def test_who_may_decode_whose_kv(case: str, dec: Candidate, pre: Candidate, may: bool) -> None:
    assert may_decode_from(dec, pre) is may


def test_pairs_rank_prefills_by_ttft_and_rotate_them_over_the_decodes() -> None:
    fleet = [both(0), prefill(1, running=30), prefill(2), decode(3), decode(4, running=20), prefill(5, **DOWN)]
    pairs = pairs_for(request(input_tokens=2000), fleet, PROFILE, "standard")
    assert [(p.prefill.candidate.replica.id, p.decode.candidate.replica.id) for p in pairs] == [
        ("m/standard/2", "m/standard/3"), ("m/standard/1", "m/standard/4")]


def test_pairs_only_of_the_chosen_variant_and_never_an_unhealthy_replica() -> None:
    fleet = [prefill(1), decode(2, **DOWN), decode(3, FAST_ON_STANDARD)]
    assert pairs_for(request(), fleet, PROFILE, "standard") == ()
    (only,) = pairs_for(request(), fleet, PROFILE, "fast")
    assert only.decode.candidate.replica.id == "m/fast/3" and only.prefill.candidate.replica.id == "m/standard/1"


def test_no_pair_without_a_compatible_prefill() -> None:
    assert pairs_for(request(), [decode(2, FAST), prefill(1)], PROFILE, None) == ()
