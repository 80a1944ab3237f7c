"""Tensor parallelism: a profile measured at one TP size (the h100-70b ones at TP4) derived at
another, named ``<profile>-tp<n>``, and the memory check that refuses a size that does not fit.

Memory, per GPU: the weights split evenly over the ``n`` ranks, the activations (a fixed amount per
GPU), and what is left of ``gpu_memory_gb x gpu_memory_utilization`` holds the KV cache (KV heads
split over the ranks too). A size fits when that KV holds at least one request of
``max_model_len`` tokens, vLLM's own start-up check; else ``DoesNotFit`` says by how much.

Speed, per step (``StepCost``): what each GPU computes or reads shrinks as ``1/n``; what no GPU
count shortens stays; and a tensor-parallel step all-reduces each token's hidden state twice per
layer, which costs

- a latency per all-reduce (``ALLREDUCE_LATENCY_S``, twice per layer, per step, at any n > 1), and
- bandwidth per token computed: a ring all-reduce moves ``2 (n - 1) / n`` of the message per GPU
  at ``ALLREDUCE_BUS_GB_S``.

So ``base_s(n) = (base_s(m) - fixed(m)) x m / n + fixed(n)`` with ``fixed(n) = LAUNCH_S +
latency(n)``, and each per-token cost ``c(n) = (c(m) - allreduce(m)) x m / n + allreduce(n)``,
from the profile's size ``m``. At ``n = m`` the profile is unchanged: the derivation adds nothing
to what the TP4 profiles were fitted to.
"""

from __future__ import annotations

import dataclasses
import math
import re
from dataclasses import dataclass
from pathlib import Path

from serving.sim.profile import PROFILES_DIR, Profile, ProfileError, StepCost
from serving.sim.profile import load_profile as load_file

TP_SIZES = (1, 2, 4, 8)  # GPUs of one NVLink domain (an HGX H100 board has 8)
# The all-reduce's bus bandwidth per GPU, GB/s, fitted to the one published share: vLLM FP8
# Llama-3.3-70B on 8x H100 NVSwitch spends 25.5% of its TP4 prefill time in NCCL all-reduce
# (ISC High Performance 2026 poster "FP8 Makes Prefill Collective-Bound on H100: TP vs Replication
# for Short-Output LLM Guardrails"): 10.2 us of the FP8 profile's 40 us per prompt token. A token
# all-reduces 80 layers x 2 x 8192 x 2 bytes = 2.62 MB, x 1.5 at TP4 = 3.93 MB; / 10.2 us = 385
# GB/s, against 450 GB/s of NVLink 4 per direction (H100 SXM datasheet).
ALLREDUCE_BUS_GB_S = 385.0
# Per all-reduce of a small message (a decode step's), seconds: vLLM's custom one-shot all-reduce
# over NVLink, assumed 8 us (NCCL's small-message latency on NVSwitch is ~10-20 us; vLLM's kernel
# exists to beat it). Stated, not fitted: 160 per step of a 70B model, 1.3 ms.
ALLREDUCE_LATENCY_S = 8e-6
# What a step costs on any number of GPUs: kernel launches of the captured graph, sampling, the
# scheduler. Stated from the bf16 profile's roofline: 16 ms = 14.0 ms of weight reads at TP4 (35.3
# GB at 3.35 TB/s x 75%) + 1.3 ms all-reduce latency + this.
LAUNCH_S = 0.0007
_NAME = re.compile(r"^(?P<base>.+)-tp(?P<size>\d+)$")


class DoesNotFit(ProfileError):
    """A profile at a TP size whose GPUs cannot hold it (``path`` is ``tensor_parallel_size``)."""


@dataclass(frozen=True, slots=True)
class Memory:
    """One GPU's memory for a profile at a TP size, GB: the budget (memory x utilisation) and what
    fills it; ``kv_tokens`` is the KV cache of the whole replica, in tokens."""

    budget_gb: float
    weights_gb: float
    activations_gb: float
    kv_gb: float
    kv_tokens: int
    needed_tokens: int

    @property
    def fits(self) -> bool:
        return self.kv_tokens >= self.needed_tokens


def memory(profile: Profile, size: int) -> Memory:
    """Per-GPU memory of ``profile`` split over ``size`` GPUs. Raises ProfileError for a profile
    without tensor-parallel facts (``parallel`` and ``shape``)."""
    parallel, shape = profile.parallel, profile.shape
    if parallel is None or shape is None:
        raise ProfileError("parallel", f"'{profile.name}' states no weights or KV shape: it runs at its own size only")
    budget = parallel.gpu_memory_gb * parallel.gpu_memory_utilization
    weights = parallel.weights_gb / size
    kv_gb = budget - weights - parallel.activations_gb
    kv_tokens = max(0, math.floor(size * kv_gb * 1e9 / shape.kv_bytes_per_token / 1000) * 1000)
    return Memory(budget, weights, parallel.activations_gb, kv_gb, kv_tokens, profile.engine.max_model_len)


def allreduce_s_per_token(profile: Profile, size: int) -> float:
    """Seconds of all-reduce bandwidth per token a step computes, at ``size`` GPUs (0 at one)."""
    assert profile.parallel is not None and profile.shape is not None
    message = 2 * profile.shape.layers * profile.parallel.hidden_size * 2  # bytes: two per layer, bf16
    return message * 2 * (size - 1) / size / (ALLREDUCE_BUS_GB_S * 1e9)


def fixed_step_s(profile: Profile, size: int) -> float:
    """The part of a step no GPU count shortens: launches, sampling and, past one GPU, the
    all-reduces' latency (two per layer)."""
    assert profile.shape is not None
    return LAUNCH_S + (2 * profile.shape.layers * ALLREDUCE_LATENCY_S if size > 1 else 0.0)


def at_size(profile: Profile, size: int) -> Profile:
    """``profile`` (measured at its ``parallel.tensor_parallel_size``) on ``size`` GPUs, named
    ``<name>-tp<size>``. Raises DoesNotFit when the GPUs cannot hold it, ProfileError when the
    size is not one of ``TP_SIZES`` or the profile has no tensor-parallel facts."""
    if size not in TP_SIZES:
        raise ProfileError("tensor_parallel_size", f"{size}: one of {', '.join(map(str, TP_SIZES))}")
    fit = memory(profile, size)
    if not fit.fits:
        raise DoesNotFit("tensor_parallel_size", refusal(profile, size, fit))
    assert profile.parallel is not None
    own = profile.parallel.tensor_parallel_size
    name = f"{profile.name}-tp{size}"
    if size == own:
        return dataclasses.replace(profile, name=name)
    engine = dataclasses.replace(profile.engine, kv_cache_tokens=fit.kv_tokens)
    link = None if profile.kv_link is None else dataclasses.replace(profile.kv_link,
                                                                    gb_per_s=profile.kv_link.gb_per_s * size / own)
    return dataclasses.replace(
        profile, name=name, engine=engine, step=_step(profile, own, size), kv_link=link,
        parallel=dataclasses.replace(profile.parallel, tensor_parallel_size=size),
        description=f"{profile.description}, derived at TP{size}")


def _step(profile: Profile, own: int, size: int) -> StepCost:
    cost, scale = profile.step, own / size
    split = cost.base_s - fixed_step_s(profile, own)
    ours, theirs = allreduce_s_per_token(profile, own), allreduce_s_per_token(profile, size)
    if split <= 0 or min(cost.prefill_s_per_token, cost.decode_s_per_token) <= ours:
        raise ProfileError("step", f"'{profile.name}': a step or token costs less than its stated fixed part and "
                                   "all-reduce: it cannot be split over GPUs")
    return dataclasses.replace(
        cost, base_s=split * scale + fixed_step_s(profile, size),
        prefill_s_per_token=(cost.prefill_s_per_token - ours) * scale + theirs,
        decode_s_per_token=(cost.decode_s_per_token - ours) * scale + theirs,
        kv_read_s_per_token=cost.kv_read_s_per_token * scale)


def refusal(profile: Profile, size: int, fit: Memory) -> str:
    """Why ``profile`` does not fit on ``size`` GPUs, in GB per GPU."""
    assert profile.parallel is not None
    parallel = profile.parallel
    return (f"'{profile.name}' does not fit at TP{size}: per GPU {fit.weights_gb:.1f} GB of weights + "
            f"{fit.activations_gb:.1f} GB of activations leave {fit.kv_gb:.1f} GB of "
            f"{parallel.gpu_memory_gb:g} GB x {parallel.gpu_memory_utilization:g} for KV, "
            f"{fit.kv_tokens:,} tokens in all; one request of max_model_len needs {fit.needed_tokens:,}")


def sizes_that_fit(profile: Profile) -> tuple[int, ...]:
    """The TP sizes at which ``profile`` fits (its own only, without tensor-parallel facts)."""
    if profile.parallel is None:
        return ()
    return tuple(n for n in TP_SIZES if memory(profile, n).fits)


def split_name(name: str) -> tuple[str, int | None]:
    """``h100-70b-fp8-tp2`` -> (``h100-70b-fp8``, 2); a name without a size -> (name, None)."""
    match = _NAME.match(name)
    if match is None or (PROFILES_DIR / f"{name}.yaml").exists():
        return name, None
    return match["base"], int(match["size"])


def load_profile(name_or_path: str) -> Profile:
    """A shipped profile by name or any profile YAML by path, as ``serving.sim.profile.load_profile``;
    and ``<profile>-tp<n>``: the shipped profile derived at ``n`` GPUs (``at_size``)."""
    if Path(name_or_path).suffix:
        return load_file(name_or_path)
    base, size = split_name(name_or_path)
    return load_file(base) if size is None else at_size(load_file(base), size)
