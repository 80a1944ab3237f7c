"""The shape of duet.yaml, as pydantic models. Every model forbids unknown keys, so a typo is an
error naming its path rather than a silently ignored setting."""

from __future__ import annotations

from typing import Annotated, Any, Literal

from pydantic import BaseModel, ConfigDict, Field, HttpUrl


class Strict(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


PositiveFloat = Annotated[float, Field(gt=0)]
PositiveInt = Annotated[int, Field(gt=0)]
Name = Annotated[str, Field(pattern=r"^[a-z0-9][a-z0-9._-]*$", max_length=64)]


class ServerSection(Strict):
    host: str = "127.0.0.1"
    port: Annotated[int, Field(ge=0, le=65535)] = 8000
    max_body_bytes: PositiveInt = 4 * 1024 * 1024
    # The request line and headers together (uvicorn's httptools parser has no limit of its own).
    max_header_bytes: PositiveInt = 32 * 1024
    upstream_connect_timeout_s: PositiveFloat = 2.0
    upstream_idle_timeout_s: PositiveFloat = 60.0
    drain_timeout_s: PositiveFloat = 30.0
    max_attempts: Annotated[int, Field(ge=1, le=10)] = 3
    # Admission control: requests held in the gateway when every replica is full, and how long
    # one without a budget may wait there before a 429.
    max_queued: Annotated[int, Field(ge=0)] = 1024
    max_queue_wait_s: PositiveFloat = 30.0


class BreakerSection(Strict):
    failure_threshold: PositiveInt = 3
    cooldown_s: PositiveFloat = 5.0


class StateSection(Strict):
    health_interval_s: PositiveFloat = 1.0
    scrape_interval_s: PositiveFloat = 1.0
    stale_after_s: PositiveFloat = 5.0
    timeout_s: PositiveFloat = 1.0
    breaker: BreakerSection = BreakerSection()
    # Where replica state, quotas and the usage ledger live: this process, or Redis shared by
    # every gateway (see gateway/state/redis_store.py).
    store: Literal["memory", "redis"] = "memory"
    redis_url: str = "redis://127.0.0.1:6379/0"
    redis_prefix: str = "duet:"
    redis_timeout_s: PositiveFloat = 0.25
    refresh_s: PositiveFloat = 0.1
    # What quotas do while Redis cannot answer: admit (open) or refuse with 429 (closed).
    quota_failure: Literal["open", "closed"] = "open"


class TierSection(Strict):
    requests_per_min: Annotated[int, Field(ge=0)] | None = None
    tokens_per_min: Annotated[int, Field(ge=0)] | None = None
    monthly_budget_usd: Annotated[float, Field(ge=0)] | None = None
    models: Literal["all"] | list[str] = "all"
    variants: Literal["all"] | list[Name] = "all"
    # The highest priority class the key may claim (x-duet-priority above it is lowered to it).
    priority: Literal["interactive", "batch", "sheddable"] | None = None
    # Requests (streams or not) one key may have open at once on one gateway.
    max_concurrent_requests: PositiveInt | None = None


class AccessSection(Strict):
    # False is an open gateway; it must be said here, as the section's absence also means it.
    require_keys: bool
    # Key records for the memory store (relative to the config file); Redis keeps its own.
    keys_file: str = "duet-keys.json"
    # The environment variable holding the admin key; admin routes are off while it is unset.
    admin_key_env: str = "DUET_ADMIN_KEY"
    tiers: dict[Name, TierSection] = Field(default_factory=dict)


class PriceSection(Strict):
    input_per_mtok: Annotated[float, Field(ge=0)]
    output_per_mtok: Annotated[float, Field(ge=0)]


NonNegative = Annotated[float, Field(ge=0)]


class SpeedSection(Strict):
    """The variant's step model (see gateway.domain.SpeedPrior); only the first two are required."""

    prefill_tokens_per_s: PositiveFloat
    decode_s_per_token: PositiveFloat
    decode_slowdown_per_seq: NonNegative = 0.02
    step_s_per_seq: NonNegative | None = None
    kv_read_s_per_token: NonNegative = 0.0
    frontend_s: NonNegative = 0.0
    max_num_batched_tokens: PositiveInt = 8192
    max_num_seqs: PositiveInt = 256
    kv_cache_tokens: Annotated[int, Field(ge=0)] = 0
    draft_tokens: Annotated[float, Field(ge=0, le=64)] = 0.0
    draft_s_per_step: NonNegative = 0.0
    draft_s_per_seq: NonNegative = 0.0
    tokens_per_step: dict[str, Annotated[float, Field(ge=1.0)]] = Field(default_factory=dict)


class ReplicaSection(Strict):
    url: HttpUrl


class KubernetesDiscoverySection(Strict):
    """Replicas found through the Kubernetes API: the ready endpoints of the Services whose
    labels match ``label_selector`` (gateway/discovery/kubernetes.py)."""

    label_selector: Annotated[str, Field(min_length=1)]
    # None: the namespace the gateway's own pod runs in.
    namespace: str | None = None
    port: Annotated[int, Field(gt=0, le=65535)] = 8000
    refresh_s: PositiveFloat = 5.0


class DiscoverySection(Strict):
    kubernetes: KubernetesDiscoverySection


class VariantSection(Strict):
    kind: Literal["full", "quantized", "speculative"]
    served_model_name: str
    max_model_len: PositiveInt
    tools: bool = True
    price: PriceSection
    speed: SpeedSection
    allowed_tasks: Literal["all"] | list[Name] = "all"
    # Where the allowed tasks came from (a parity report's date and hash), for humans.
    allowed_tasks_source: str | None = None
    launch_profile: str | None = None
    replicas: list[ReplicaSection] = Field(default_factory=list)
    # Instead of static ``replicas``: find them at run time (Kubernetes).
    discovery: DiscoverySection | None = None


class HfTokenizer(Strict):
    hf_tokenizer_json: str


class ModelSection(Strict):
    tokenizer: Literal["approx"] | HfTokenizer = "approx"
    variants: dict[Name, VariantSection] = Field(min_length=1)


class TaskSection(Strict):
    ttft_ms: PositiveFloat | None = None
    latency_ms: PositiveFloat | None = None
    tpot_ms: PositiveFloat | None = None
    expected_output_tokens: PositiveInt = 256
    priority: Literal["interactive", "batch", "sheddable"] = "interactive"


class InputTokensOver(Strict):
    input_tokens_over: PositiveInt


class RuleSection(Strict):
    if_: Literal["has_tools", "has_code"] | InputTokensOver = Field(alias="if")
    task: Name


class PluginSection(Strict):
    type: str
    name: Name
    params: dict[str, Any] = Field(default_factory=dict)


class WeightedRef(Strict):
    plugin: Name
    weight: Annotated[float, Field(ge=0)] = 1.0


class ProfileSection(Strict):
    filters: list[Name] = Field(default_factory=list)
    predictor: Name
    scorers: list[WeightedRef] = Field(default_factory=list)
    objective: Name


class RoutingSection(Strict):
    tasks: dict[Name, TaskSection] = Field(min_length=1)
    rules: list[RuleSection] = Field(default_factory=list)
    default_task: Name
    plugins: list[PluginSection] = Field(min_length=1)
    profiles: dict[Name, ProfileSection] = Field(min_length=1)
    default_profile: Name = "default"
    task_profiles: dict[Name, Name] = Field(default_factory=dict)


class ConfigFile(Strict):
    server: ServerSection = ServerSection()
    state: StateSection = StateSection()
    models: dict[Name, ModelSection] = Field(min_length=1)
    routing: RoutingSection
    access: AccessSection | None = None
