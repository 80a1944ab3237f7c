"""A simulated replica's profile: what vLLM would be launched with, and how fast it runs.

Profiles are YAML files under ``serving/sim/profiles/`` (each number carries its source in a
comment). Loading is strict: an unknown or missing key is an error naming its path
(``step.base_s: missing``), as everywhere in Duet's config.
"""

from __future__ import annotations

import dataclasses
import types
import typing
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml

PROFILES_DIR = Path(__file__).parent / "profiles"


class ProfileError(ValueError):
    """A profile file is invalid; ``path`` names where (``speculation.tasks.chat.acceptance``)."""

    def __init__(self, path: str, message: str) -> None:
        super().__init__(f"{path}: {message}" if path else message)
        self.path = path


@dataclass(frozen=True, slots=True)
class EngineLimits:
    """vLLM's scheduler limits (``--max-model-len``, ``--max-num-seqs``, ...) and KV capacity."""

    max_model_len: int
    max_num_seqs: int
    max_num_batched_tokens: int
    kv_cache_tokens: int
    block_size: int = 16
    # vLLM has no bound of its own; a full waiting queue answers 503 here (a replica under
    # overload that sheds, rather than one whose queue time grows without bound).
    max_waiting: int = 1024
    # The replica's part in disaggregated serving (``ROLES``): ``both`` prefills and decodes
    # (vLLM without a KV connector, or ``kv_both``); ``prefill`` computes prompts and hands their
    # KV off (``kv_producer``); ``decode`` answers only from KV transferred in (``kv_consumer``).
    role: str = "both"


ROLES = ("both", "prefill", "decode")


@dataclass(frozen=True, slots=True)
class ModelShape:
    """What sizes a token's KV cache: layers x KV heads x head dimension x 2 (K and V) x bytes
    per element (2 for bf16/fp16 KV, 1 for fp8 KV), from the model's ``config.json``."""

    layers: int
    kv_heads: int
    head_dim: int
    kv_dtype_bytes: int = 2

    @property
    def kv_bytes_per_token(self) -> int:
        return self.layers * self.kv_heads * self.head_dim * 2 * self.kv_dtype_bytes


@dataclass(frozen=True, slots=True)
class KVLink:
    """How a replica's KV reaches another replica (a KV connector's transfer): the effective
    bandwidth of the whole replica's links in GB/s (10**9 bytes; every tensor-parallel rank
    sends its shard over its own link, so TP4 over one 400G NIC per GPU is 4 x ~45 GB/s), and
    the fixed cost per transfer (handshake, block-descriptor exchange, completion notice)."""

    gb_per_s: float
    latency_s: float = 0.0


@dataclass(frozen=True, slots=True)
class StepCost:
    """Duration of one engine step (one forward pass over the batch), in seconds:

    ``base_s + prefill_s_per_token * prefill_tokens + decode_s_per_token * decode_tokens
    + kv_read_s_per_token * context_tokens_of_decoding_seqs``, times a lognormal jitter.
    ``decode_tokens`` counts one token per decoding sequence plus its speculative drafts.
    ``frontend_s`` is the API server's per-request work before the engine sees the request.
    """

    base_s: float
    prefill_s_per_token: float
    decode_s_per_token: float
    kv_read_s_per_token: float = 0.0
    jitter: float = 0.0
    frontend_s: float = 0.0


@dataclass(frozen=True, slots=True)
class Parallelism:
    """How the profile's replica is split over GPUs (tensor parallelism) and what fills their
    memory, so that ``serving.sim.parallel`` can derive the replica at another TP size: the
    checkpoint's weights (GB, 10**9 bytes, all of them: split evenly over the ranks), the
    activations, CUDA graphs and communication buffers each GPU keeps besides (GB per GPU), the
    hidden size (what a token all-reduces per layer), and the GPU's memory and vLLM's
    ``--gpu-memory-utilization``."""

    tensor_parallel_size: int
    weights_gb: float
    activations_gb: float
    hidden_size: int
    gpu_memory_gb: float = 80.0
    gpu_memory_utilization: float = 0.9


@dataclass(frozen=True, slots=True)
class TaskAcceptance:
    """Speculation on one task type: how often a draft is proposed, and how often a draft
    token is accepted (each token independently, so accepted length is geometric)."""

    acceptance: float
    proposal_rate: float = 1.0


@dataclass(frozen=True, slots=True)
class Speculation:
    """A speculative-decoding method: ``k`` draft tokens per step, their cost, acceptance by task."""

    method: str
    num_speculative_tokens: int
    tasks: dict[str, TaskAcceptance]
    # Cost of producing drafts: fixed per step that drafts anything, and per drafting sequence.
    draft_s_per_step: float = 0.0
    draft_s_per_seq: float = 0.0

    def for_task(self, task: str) -> TaskAcceptance:
        """Acceptance for ``task``, falling back to the ``default`` entry."""
        return self.tasks.get(task) or self.tasks["default"]


@dataclass(frozen=True, slots=True)
class OutputShape:
    """How long answers are when the model stops on its own (no ``ignore_eos``)."""

    natural_tokens_median: int = 200
    # Lognormal spread (sigma of log length): 0 makes every answer the median length.
    natural_tokens_sigma: float = 0.6


@dataclass(frozen=True, slots=True)
class ChatTemplate:
    """Tokens the chat template adds around the messages (vLLM counts them as prompt tokens)."""

    per_message_tokens: int = 5
    generation_prompt_tokens: int = 3
    default_system_tokens: int = 0


@dataclass(frozen=True, slots=True)
class Profile:
    """Everything a simulated replica needs: identity, limits, speed, speculation."""

    name: str
    served_model_name: str
    model_path: str
    kind: str
    engine: EngineLimits
    step: StepCost
    speculation: Speculation | None = None
    output: OutputShape = field(default_factory=OutputShape)
    chat_template: ChatTemplate = field(default_factory=ChatTemplate)
    description: str = ""
    # For disaggregated prefill: the KV a prompt token leaves behind, and the link it crosses.
    # Either absent: the profile cannot hand KV off (a ``prefill`` or ``decode`` role is refused).
    shape: ModelShape | None = None
    kv_link: KVLink | None = None
    # For tensor parallelism at other sizes (``serving.sim.parallel``): absent, the profile is its
    # own size only.
    parallel: Parallelism | None = None

    def with_engine(self, role: str | None = None, max_num_batched_tokens: int | None = None,
                    max_num_seqs: int | None = None) -> Profile:
        """This profile launched with another engine configuration (None: keep the profile's);
        checked as a loaded profile is."""
        limits = self.engine
        changed = dataclasses.replace(
            limits, role=limits.role if role is None else role,
            max_num_batched_tokens=limits.max_num_batched_tokens if max_num_batched_tokens is None else max_num_batched_tokens,
            max_num_seqs=limits.max_num_seqs if max_num_seqs is None else max_num_seqs)
        profile: Profile = dataclasses.replace(self, engine=changed)
        _check(profile)
        return profile


def available_profiles() -> list[str]:
    """Names of the profiles shipped with the simulator."""
    return sorted(p.stem for p in PROFILES_DIR.glob("*.yaml"))


def load_profile(name_or_path: str) -> Profile:
    """Load a shipped profile by name, or any profile YAML by path."""
    path = Path(name_or_path)
    if not path.suffix:
        path = PROFILES_DIR / f"{name_or_path}.yaml"
    if not path.exists():
        raise ProfileError("", f"no profile {name_or_path!r}; shipped: {', '.join(available_profiles())}")
    data = yaml.safe_load(path.read_text())
    profile: Profile = build(Profile, data, "")
    _check(profile)
    return profile


def _check(profile: Profile) -> None:
    if profile.kind not in ("full", "quantized", "speculative"):
        raise ProfileError("kind", f"must be full, quantized or speculative, not {profile.kind!r}")
    if (profile.kind == "speculative") != (profile.speculation is not None):
        raise ProfileError("speculation", "present exactly when kind is speculative")
    if profile.speculation is not None and "default" not in profile.speculation.tasks:
        raise ProfileError("speculation.tasks", "needs a 'default' entry")
    limits = profile.engine
    if limits.kv_cache_tokens < limits.max_model_len:
        raise ProfileError("engine.kv_cache_tokens", "smaller than max_model_len")
    if limits.role not in ROLES:
        raise ProfileError("engine.role", f"must be one of {', '.join(ROLES)}, not {limits.role!r}")
    if limits.role != "both" and (profile.shape is None or profile.kv_link is None):
        raise ProfileError("engine.role", f"'{limits.role}' hands KV across replicas: the profile needs shape "
                                          "and kv_link (the KV bytes per token and the link they cross)")
    for name in ("max_num_batched_tokens", "max_num_seqs"):
        if getattr(limits, name) < 1:
            raise ProfileError(f"engine.{name}", "must be at least 1")
    if profile.parallel is not None and profile.shape is None:
        raise ProfileError("parallel", "needs shape (the KV bytes per token the GPUs' memory holds)")


def build(cls: Any, data: Any, path: str) -> Any:
    """Build ``cls`` (a dataclass, dict or scalar type) from plain YAML data, strictly."""
    origin = typing.get_origin(cls)
    if origin in (types.UnionType, typing.Union):
        options = [a for a in typing.get_args(cls) if a is not type(None)]
        return None if data is None else build(options[0], data, path)
    if origin is dict:
        key_type, value_type = typing.get_args(cls)
        if not isinstance(data, dict):
            raise ProfileError(path, "must be a mapping")
        return {build(key_type, k, f"{path}.{k}"): build(value_type, v, _join(path, str(k))) for k, v in data.items()}
    if dataclasses.is_dataclass(cls):
        return _build_dataclass(cls, data, path)
    return _build_scalar(cls, data, path)


def _build_dataclass(cls: Any, data: Any, path: str) -> Any:
    if not isinstance(data, dict):
        raise ProfileError(path, "must be a mapping")
    hints = typing.get_type_hints(cls)
    fields = {f.name: f for f in dataclasses.fields(cls)}
    unknown = sorted(set(data) - set(fields))
    if unknown:
        raise ProfileError(_join(path, unknown[0]), f"unknown key (allowed: {', '.join(fields)})")
    values = {}
    for name, spec in fields.items():
        if name in data:
            values[name] = build(hints[name], data[name], _join(path, name))
        elif spec.default is dataclasses.MISSING and spec.default_factory is dataclasses.MISSING:
            raise ProfileError(_join(path, name), "missing")
    return cls(**values)


def _build_scalar(cls: Any, data: Any, path: str) -> Any:
    if cls is float and isinstance(data, int | float) and not isinstance(data, bool):
        if data < 0:
            raise ProfileError(path, "must not be negative")
        return float(data)
    if cls is int and isinstance(data, int) and not isinstance(data, bool):
        if data < 0:
            raise ProfileError(path, "must not be negative")
        return data
    if isinstance(data, cls):
        return data
    raise ProfileError(path, f"must be {cls.__name__}, not {type(data).__name__}")


def _join(path: str, name: str) -> str:
    return f"{path}.{name}" if path else name
