"""Tensor parallelism derived from the TP4 profiles: the memory check refuses what does not fit,
and the step cost scales the way splitting work over more GPUs must."""

from __future__ import annotations

import dataclasses

import pytest

from serving.sim.engine.stepcost import BatchShape, step_duration
from serving.sim.parallel import (
    LAUNCH_S,
    TP_SIZES,
    DoesNotFit,
    allreduce_s_per_token,
    at_size,
    fixed_step_s,
    load_profile,
    memory,
    sizes_that_fit,
    split_name,
)
from serving.sim.profile import ProfileError
from serving.sim.profile import load_profile as load_file

H100 = ("bf16", "fp8", "w4a16", "ngram", "eagle3", "fp8-ngram")


@pytest.mark.parametrize(("profile", "fits"), [
    ("h100-70b-bf16", (4, 8)), ("h100-70b-ngram", (4, 8)), ("h100-70b-eagle3", (4, 8)),
    ("h100-70b-fp8", (2, 4, 8)), ("h100-70b-fp8-ngram", (2, 4, 8)), ("h100-70b-w4a16", (1, 2, 4, 8)),
])
def test_a_70b_fits_where_its_weights_and_one_context_of_kv_do(profile, fits):
    assert sizes_that_fit(load_file(profile)) == fits


@pytest.mark.parametrize(("name", "size"), [("h100-70b-bf16", 1), ("h100-70b-bf16", 2), ("h100-70b-fp8", 1)])
def test_the_memory_check_refuses_a_size_that_does_not_fit_and_says_why(name, size):
    with pytest.raises(DoesNotFit, match=rf"tensor_parallel_size: '{name}' does not fit at TP{size}: per GPU"):
        load_profile(f"{name}-tp{size}")


def test_a_size_fits_only_when_the_kv_left_holds_one_request_of_max_model_len():
    w4a16 = load_file("h100-70b-w4a16")
    room = memory(w4a16, 1)
    assert room.weights_gb + room.activations_gb + room.kv_gb == pytest.approx(80 * 0.9)
    longer = dataclasses.replace(w4a16, engine=dataclasses.replace(w4a16.engine, max_model_len=room.kv_tokens + 1000))
    with pytest.raises(DoesNotFit):
        at_size(longer, 1)


@pytest.mark.parametrize("variant", H100)
def test_the_kv_the_memory_model_gives_at_tp4_is_the_profiles_own(variant):
    profile = load_file(f"h100-70b-{variant}")
    assert memory(profile, 4).kv_tokens == pytest.approx(profile.engine.kv_cache_tokens, rel=0.01)


@pytest.mark.parametrize("variant", H100)
def test_at_its_own_size_a_profile_is_unchanged_but_for_its_name(variant):
    profile = load_file(f"h100-70b-{variant}")
    derived = load_profile(f"h100-70b-{variant}-tp4")
    assert derived.name == f"h100-70b-{variant}-tp4"
    assert dataclasses.replace(derived, name=profile.name) == profile


def _step(profile, batch: int, prefill: int = 0) -> float:
    return step_duration(profile.step, None, BatchShape(prefill, batch, batch * 1000, 0))


def test_more_gpus_make_a_step_faster_and_hold_more_kv_but_each_gpu_does_less():
    sizes = sizes_that_fit(load_file("h100-70b-w4a16"))
    profiles = [load_profile(f"h100-70b-w4a16-tp{n}") for n in sizes]
    for batch, prefill in ((1, 0), (64, 0), (0, 8192)):
        steps = [_step(p, batch, prefill) for p in profiles]
        assert steps == sorted(steps, reverse=True), (batch, prefill)  # faster with every doubling
        gpu_seconds = [n * s for n, s in zip(sizes, steps, strict=True)]
        assert gpu_seconds == sorted(gpu_seconds)  # the same step costs more GPU-seconds: never a free doubling
    kv = [p.engine.kv_cache_tokens for p in profiles]
    assert kv == sorted(kv) and len(set(kv)) == len(kv)


def test_one_gpu_pays_no_all_reduce_and_more_gpus_pay_more_per_token():
    w4a16 = load_file("h100-70b-w4a16")
    per_token = [allreduce_s_per_token(w4a16, n) for n in TP_SIZES]
    assert per_token[0] == 0 and per_token == sorted(per_token) and len(set(per_token)) == 4
    assert fixed_step_s(w4a16, 1) == LAUNCH_S < fixed_step_s(w4a16, 2) == fixed_step_s(w4a16, 8)
    # TP1's token is TP2's compute doubled, without TP2's all-reduce
    one, two = at_size(w4a16, 1), at_size(w4a16, 2)
    assert one.step.decode_s_per_token == pytest.approx(2 * (two.step.decode_s_per_token - per_token[1]))


def test_the_all_reduce_bandwidth_is_the_published_tp4_share_of_fp8_prefill():
    fp8 = load_file("h100-70b-fp8")
    assert allreduce_s_per_token(fp8, 4) / fp8.step.prefill_s_per_token == pytest.approx(0.255, abs=0.005)


def test_a_size_outside_one_nvlink_domain_is_refused():
    with pytest.raises(ProfileError, match="tensor_parallel_size: 3: one of 1, 2, 4, 8"):
        load_profile("h100-70b-w4a16-tp3")
    assert TP_SIZES == (1, 2, 4, 8)


def test_a_profile_without_tensor_parallel_facts_runs_at_its_own_size_only():
    with pytest.raises(ProfileError, match="parallel: 'cpu-smollm2-bf16' states no weights"):
        load_profile("cpu-smollm2-bf16-tp2")
    assert sizes_that_fit(load_file("cpu-smollm2-bf16")) == ()


def test_names_split_into_the_shipped_profile_and_its_size():
    assert split_name("h100-70b-fp8-tp2") == ("h100-70b-fp8", 2)
    assert split_name("h100-70b-fp8") == ("h100-70b-fp8", None)
    assert load_profile("h100-70b-fp8").name == "h100-70b-fp8"
