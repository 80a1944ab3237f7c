"""The validated configuration, as frozen values. Built from the YAML by ``gateway.config.load``."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field

from gateway.config.engine_groups import GROUP_LABEL
from gateway.config.online_parity import OFF, OnlineParitySettings
from gateway.config.policy import Policy
from gateway.config.pool import InferencePoolDiscovery
from gateway.domain import EngineConfig, Priority, Replica, RolloutStage, Variant
from gateway.scaling import Autoscaling, GroupShare


@dataclass(frozen=True, slots=True)
class ServerSettings:
    host: str = "127.0.0.1"
    port: int = 8000
    max_body_bytes: int = 4 * 1024 * 1024
    max_header_bytes: int = 32 * 1024
    upstream_connect_timeout_s: float = 2.0
    # No byte from a replica for this long (before the first byte or between chunks) ends the
    # attempt: a hanging replica must not hang the client.
    upstream_idle_timeout_s: float = 60.0
    drain_timeout_s: float = 30.0
    max_attempts: int = 3
    max_queued: int = 1024
    max_queue_wait_s: float = 30.0
    # Who may read /metrics: anyone who reaches the port (open) or the admin key's holder (admin).
    metrics: str = "open"
    # OpenTelemetry spans to a collector's OTLP/HTTP traces URL (None: tracing off).
    otlp_traces_endpoint: str | None = None
    otlp_service_name: str = "duet"


@dataclass(frozen=True, slots=True)
class BreakerSettings:
    failure_threshold: int = 3
    cooldown_s: float = 5.0


@dataclass(frozen=True, slots=True)
class StateSettings:
    health_interval_s: float = 1.0
    scrape_interval_s: float = 1.0
    stale_after_s: float = 5.0
    timeout_s: float = 1.0
    breaker: BreakerSettings = BreakerSettings()
    store: str = "memory"  # memory | redis
    redis_url: str = "redis://127.0.0.1:6379/0"
    redis_prefix: str = "duet:"
    redis_timeout_s: float = 0.25
    refresh_s: float = 0.1
    quota_failure: str = "open"  # open | closed


@dataclass(frozen=True, slots=True)
class Tier:
    """What a key of this tier may do. ``None``: no limit (models/variants: all allowed)."""

    name: str
    requests_per_min: int | None = None
    tokens_per_min: int | None = None
    monthly_spend_limit_usd: float | None = None
    models: frozenset[str] | None = None
    variants: frozenset[str] | None = None
    priority: Priority | None = None
    # Open requests per key on one gateway (each gateway counts its own).
    max_concurrent_requests: int | None = None


@dataclass(frozen=True, slots=True)
class AccessSettings:
    """API keys and their tiers; ``require_keys=False`` is an open gateway."""

    require_keys: bool = False
    keys_file: str = "duet-keys.json"
    admin_key_env: str = "DUET_ADMIN_KEY"
    tiers: Mapping[str, Tier] = field(default_factory=dict)
    # False when the config has no access section (an open gateway that nobody asked for: logged).
    explicit: bool = False
    # Failed authentications one client address may make in a minute before its unknown keys
    # (and any admin attempt) are refused with 429 without a look-up; 0: no limit.
    failed_auth_per_min: int = 30
    # Label per-key metrics with the key's name (chosen by people: may say who a customer is)
    # instead of its opaque id.
    metrics_key_names: bool = False


@dataclass(frozen=True, slots=True)
class TokenizerSpec:
    """``approx`` counts ~4 characters per token; ``hf_tokenizer_json`` loads the model's own."""

    kind: str = "approx"
    path: str | None = None


@dataclass(frozen=True, slots=True)
class ModelSpec:
    name: str
    variants: Mapping[str, Variant]
    replicas: tuple[Replica, ...]
    tokenizer: TokenizerSpec
    # Pinned names ("smollm2:fast") -> variant name.
    pins: Mapping[str, str]
    # Variant name -> the CA bundle (PEM path) its https:// replicas' certificates are checked
    # against; a variant not named uses the system's CAs.
    ca_bundles: Mapping[str, str] = field(default_factory=dict)
    # The variants kept for /v1/embeddings (empty: every variant serves every endpoint).
    embedding_variants: frozenset[str] = frozenset()
    # None: fixed replica counts, no desired-replicas gauge.
    autoscaling: Autoscaling | None = None
    # Variant name -> its ``engine_groups`` as (group name, configured share), in config order;
    # a variant without them is not here. The gauge splits an autoscaled variant's count over them.
    engine_groups: Mapping[str, tuple[tuple[str, GroupShare], ...]] = field(default_factory=dict)

    def variant_of(self, replica: Replica) -> Variant:
        return self.variants[replica.variant]

    @property
    def has_canary(self) -> bool:
        """Whether a variant takes a share of live traffic (routing then reads the request's draw)."""
        return any(v.rollout.stage is RolloutStage.CANARY for v in self.variants.values())


@dataclass(frozen=True, slots=True)
class KubernetesDiscovery:
    """Where one variant's replicas are found in Kubernetes (``namespace`` None: the pod's own)."""

    model: str
    variant: str
    label_selector: str
    namespace: str | None = None
    port: int = 8000
    refresh_s: float = 5.0
    # The variant's engine: every replica found has it (one Deployment, one configuration).
    engine: EngineConfig = EngineConfig()
    # A variant with engine groups (one Deployment and one headless Service per group): (group
    # name, engine) per group. Each group's replicas are the endpoints of the Services matching
    # ``label_selector`` and ``duet.dev/engine-group=<name>``, and run that group's engine.
    groups: tuple[tuple[str, EngineConfig], ...] = ()

    @property
    def selections(self) -> tuple[tuple[str, EngineConfig], ...]:
        """(label selector, the engine of the replicas it finds), one per group, else one."""
        if not self.groups:
            return ((self.label_selector, self.engine),)
        return tuple((f"{self.label_selector},{GROUP_LABEL}={name}", engine) for name, engine in self.groups)


@dataclass(frozen=True, slots=True)
class DuetConfig:
    server: ServerSettings
    state: StateSettings
    models: Mapping[str, ModelSpec]
    policy: Policy
    source: str = "<memory>"
    access: AccessSettings = field(default_factory=AccessSettings)
    # Variants whose replicas come from the Kubernetes API rather than the file.
    discovery: tuple[KubernetesDiscovery, ...] = ()
    # Models whose replicas are the pods of an InferencePool (gateway/config/pool.py).
    pools: tuple[InferencePoolDiscovery, ...] = ()
    # Shadow checks and the sequential verdicts of online parity (off: OFF).
    online_parity: OnlineParitySettings = OFF

    @property
    def replicas(self) -> tuple[Replica, ...]:
        return tuple(r for m in self.models.values() for r in m.replicas)
