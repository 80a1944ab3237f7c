"""duet.yaml -> DuetConfig. Shape errors come from the pydantic schema, reference errors from the
checks here; both are ConfigError values naming the path (``routing.profiles.default.objective``)."""

from __future__ import annotations

import logging
from collections.abc import Mapping
from pathlib import Path

import yaml
from pydantic import ValidationError

from gateway.config import schema
from gateway.config.autoscaling_section import build_autoscaling
from gateway.config.engine_groups import check_groups, group_name
from gateway.config.online_parity import build_online_parity
from gateway.config.policy import Policy
from gateway.config.pool import InferencePoolDiscovery, pool_discovery
from gateway.config.routing_policy import routing_policy
from gateway.config.schema import config_error
from gateway.config.types import (
    AccessSettings,
    BreakerSettings,
    DuetConfig,
    KubernetesDiscovery,
    ModelSpec,
    ServerSettings,
    StateSettings,
    Tier,
    TokenizerSpec,
)
from gateway.cost import Price, ReplicaCost
from gateway.domain import (
    EngineConfig,
    EngineRole,
    Priority,
    Replica,
    Rollout,
    RolloutStage,
    Scheduling,
    Variant,
    VariantKind,
)
from gateway.errors import ConfigError
from gateway.routing.roles import ENGINE_ROLE
from gateway.routing.rollout import ROLLOUT_STAGE
from gateway.scaling import GroupShare
from gateway.speed import SpeedPrior

log = logging.getLogger(__name__)


def load_config(path: str | Path) -> DuetConfig:
    """Read, validate and build a config file. Raises ConfigError."""
    path = Path(path)
    try:
        text = path.read_text(encoding="utf-8")
    except OSError as exc:
        raise ConfigError("", f"cannot read {path}: {exc.strerror}") from exc
    except UnicodeDecodeError as exc:  # a corrupted or half-written file must be refused, not crash a reload
        raise ConfigError("", f"{path} is not UTF-8 text: {exc.reason} at byte {exc.start}") from exc
    return parse_config(text, source=str(path))


def parse_config(text: str, source: str = "<memory>") -> DuetConfig:
    try:
        raw = yaml.safe_load(text)
    except yaml.YAMLError as exc:
        raise ConfigError("", f"{source} is not valid YAML: {exc}") from exc
    if not isinstance(raw, dict):
        raise ConfigError("", f"{source} must hold a mapping at the top")
    try:
        parsed = schema.ConfigFile.model_validate(raw)
    except ValidationError as exc:
        raise config_error(exc) from exc
    return build_config(parsed, source)


def build_config(parsed: schema.ConfigFile, source: str) -> DuetConfig:
    tasks = set(parsed.routing.tasks)
    models = {name: _model(name, section, tasks, source) for name, section in parsed.models.items()}
    policy = routing_policy(parsed.routing, source)
    _require_rollout_filter(models, policy)
    discovery, pools = _discovery(parsed), _pools(parsed)
    _require_engine_role_filter(models, discovery + tuple(
        KubernetesDiscovery(p.model, variant, "", engine=engine) for p in pools
        for variant, engine in (*p.engines, *((v, e) for v, _, e in p.group_engines))), policy)
    return DuetConfig(
        server=ServerSettings(**parsed.server.model_dump()),
        state=StateSettings(
            **{k: v for k, v in parsed.state.model_dump().items() if k != "breaker"},
            breaker=BreakerSettings(**parsed.state.breaker.model_dump()),
        ),
        models=models,
        policy=policy,
        source=source,
        access=_access(parsed.access, models, source),
        discovery=discovery,
        pools=pools,
        online_parity=build_online_parity(parsed.online_parity, {v.key: v for m in models.values() for v in m.variants.values()},
                                          tasks, source),
    )


def _discovery(parsed: schema.ConfigFile) -> tuple[KubernetesDiscovery, ...]:
    found = []
    for model, m in parsed.models.items():
        for variant, v in m.variants.items():
            if v.discovery is None:
                continue
            if v.replicas:
                raise ConfigError(f"models.{model}.variants.{variant}.discovery", "give either replicas or discovery, not both")
            k = v.discovery.kubernetes
            groups = tuple((group_name(g.engine), _engine(g.engine)) for g in v.engine_groups)
            found.append(KubernetesDiscovery(model, variant, k.label_selector, k.namespace, k.port, k.refresh_s,
                                             _engine(v.engine), groups))
    return tuple(found)


def _pools(parsed: schema.ConfigFile) -> tuple[InferencePoolDiscovery, ...]:
    """The models read from an InferencePool; their variants list no replicas of their own."""
    found = []
    for model, m in parsed.models.items():
        if m.inference_pool is None:
            continue
        for variant, v in m.variants.items():
            for key in ("replicas", "discovery"):
                if getattr(v, key):
                    raise ConfigError(f"models.{model}.variants.{variant}.{key}",
                                      f"models.{model}.inference_pool lists this model's replicas: remove {key}")
        found.append(pool_discovery(model, m.inference_pool, {name: _engine(v.engine) for name, v in m.variants.items()},
                                    {(name, group_name(g.engine)): _engine(g.engine)
                                     for name, v in m.variants.items() for g in v.engine_groups}))
    return tuple(found)


def _access(section: schema.AccessSection | None, models: Mapping[str, ModelSpec], source: str) -> AccessSettings:
    if section is None:
        return AccessSettings()
    keys_file = Path(section.keys_file)
    if not keys_file.is_absolute() and source != "<memory>":
        keys_file = Path(source).parent / keys_file
    tiers = {name: _tier(name, t, models, f"access.tiers.{name}") for name, t in section.tiers.items()}
    if section.require_keys and not tiers:
        raise ConfigError("access.tiers", "require_keys needs at least one tier for keys to belong to")
    return AccessSettings(section.require_keys, str(keys_file), section.admin_key_env, tiers, explicit=True,
                          failed_auth_per_min=section.failed_auth_per_min, metrics_key_names=section.metrics_key_names)


def _spend_limit(t: schema.TierSection, path: str) -> float | None:
    """The tier's monthly spend limit, from ``monthly_spend_limit_usd`` or its deprecated alias."""
    if t.monthly_budget_usd is None:
        return t.monthly_spend_limit_usd
    if t.monthly_spend_limit_usd is not None:
        raise ConfigError(f"{path}.monthly_budget_usd", "set monthly_spend_limit_usd only (monthly_budget_usd is its "
                          "deprecated alias)")
    log.warning("%s.monthly_budget_usd is deprecated: rename it monthly_spend_limit_usd", path)
    return t.monthly_budget_usd


def _tier(name: str, t: schema.TierSection, models: Mapping[str, ModelSpec], path: str) -> Tier:
    allowed_models = None if t.models == "all" else frozenset(t.models)
    for i, model in enumerate(t.models if t.models != "all" else ()):
        if model not in models:
            raise ConfigError(f"{path}.models.{i}", f"unknown model '{model}' (models defines {sorted(models)})")
    variants = {v for m in models.values() for v in m.variants}
    for i, variant in enumerate(t.variants if t.variants != "all" else ()):
        if variant not in variants:
            raise ConfigError(f"{path}.variants.{i}", f"unknown variant '{variant}' (known: {sorted(variants)})")
    return Tier(
        name=name, requests_per_min=t.requests_per_min, tokens_per_min=t.tokens_per_min,
        monthly_spend_limit_usd=_spend_limit(t, path), models=allowed_models,
        variants=None if t.variants == "all" else frozenset(t.variants),
        priority=None if t.priority is None else Priority(t.priority),
        max_concurrent_requests=t.max_concurrent_requests,
    )


def _model(name: str, section: schema.ModelSection, tasks: set[str], source: str) -> ModelSpec:
    variants: dict[str, Variant] = {}
    replicas: list[Replica] = []
    served_names: dict[str, str] = {}
    ca_bundles: dict[str, str] = {}
    engines_of: dict[str, list[tuple[str, EngineConfig]]] = {}  # (the path of its role, engine)
    for variant_name, v in section.variants.items():
        path = f"models.{name}.variants.{variant_name}"
        variants[variant_name] = _variant(name, variant_name, v, tasks, path)
        if v.ca_bundle is not None:
            ca_bundles[variant_name] = _ca_bundle(v.ca_bundle, source, f"{path}.ca_bundle")
        if v.served_model_name in served_names:
            raise ConfigError(f"{path}.served_model_name", f"also used by variant '{served_names[v.served_model_name]}'")
        served_names[v.served_model_name] = variant_name
        check_groups(v, [g.count for g in v.engine_groups], [g.engine for g in v.engine_groups], path)
        engines = [_engine(replica.engine or v.engine) for replica in v.replicas]
        engines_of[variant_name] = [(f"{path}.replicas.{i}.engine.role", e) for i, e in enumerate(engines)] + [
            (f"{path}.engine_groups.{i}.engine.role", _engine(g.engine)) for i, g in enumerate(v.engine_groups)]
        for i, (replica, engine) in enumerate(zip(v.replicas, engines, strict=True)):
            url = _base_url(str(replica.url))
            replicas.append(Replica(id=f"{name}/{variant_name}/{i}", model=name, variant=variant_name, url=url,
                                    engine=engine))
    _check_shared_weights(variants, f"models.{name}.variants")
    for variant_name, engines_at in engines_of.items():
        kin = [n for n, v in variants.items() if variant_name in (v.shares_weights_with, n)
               or n == variants[variant_name].shares_weights_with]
        _check_roles(engines_at, [e for n in kin for _, e in engines_of[n]])
    tokenizer = (
        TokenizerSpec("approx")
        if section.tokenizer == "approx"
        else TokenizerSpec("hf_tokenizer_json", section.tokenizer.hf_tokenizer_json)
    )
    for i, variant_name in enumerate(section.embedding_variants):
        if variant_name not in variants:
            raise ConfigError(f"models.{name}.embedding_variants.{i}",
                              f"unknown variant '{variant_name}' (known: {sorted(variants)})")
    groups = {variant_name: tuple((group_name(g.engine), GroupShare(g.count, EngineRole(g.engine.role)))
                                  for g in v.engine_groups)
              for variant_name, v in section.variants.items() if v.engine_groups}
    return ModelSpec(name, variants, tuple(replicas), tokenizer, _pins(name, variants), ca_bundles,
                     frozenset(section.embedding_variants), build_autoscaling(section.autoscaling, variants, tasks,
                                                                         f"models.{name}.autoscaling"), groups)


def _engine(section: schema.EngineSection) -> EngineConfig:
    return EngineConfig(EngineRole(section.role), section.max_num_batched_tokens, section.max_num_seqs,
                        section.kv_connector)


def _check_shared_weights(variants: Mapping[str, Variant], path: str) -> None:
    """Only a speculative variant verifies with another variant's weights, so only its decode
    may read KV another variant prefilled, and only a full-precision one's: a quantized variant's
    KV comes from other weights and would decode into wrong text."""
    for name, variant in variants.items():
        source = variant.shares_weights_with
        if source is None:
            continue
        where = f"{path}.{name}.shares_weights_with"
        if variant.kind is not VariantKind.SPECULATIVE:
            raise ConfigError(where, f"a {variant.kind.value} variant has weights of its own: only a speculative "
                                     "variant verifies with another's and may decode its KV")
        if source not in variants or source == name:
            raise ConfigError(where, f"unknown variant '{source}' (known: {sorted(set(variants) - {name})})")
        if variants[source].kind is not VariantKind.FULL:
            raise ConfigError(where, f"'{source}' is {variants[source].kind.value}: a speculative variant verifies "
                                     "with full-precision weights")


def _check_roles(engines: list[tuple[str, EngineConfig]], partners: list[EngineConfig]) -> None:
    """A variant's replicas can serve a request end to end: a prefill replica needs one that
    decodes from its KV, a decode replica one that prefills for it (its partner role, or ``both``
    with a connector: vLLM's kv_both), through the same KV connector. ``engines``: (the path of
    its role, engine) per listed replica or engine group; ``partners``: the engines of the
    variant and of those sharing its weights (``shares_weights_with``)."""
    for path, engine in engines:
        if engine.role is EngineRole.BOTH:
            continue
        partner = EngineRole.DECODE if engine.role is EngineRole.PREFILL else EngineRole.PREFILL
        if not any(other.role in (partner, EngineRole.BOTH) and other.kv_connector == engine.kv_connector
                   for other in partners):
            raise ConfigError(path, f"a {engine.role.value} replica needs a {partner.value} (or both) replica of the "
                              f"variant (or one sharing its weights) with the same kv_connector ({engine.kv_connector})")


def _ca_bundle(written: str, source: str, path: str) -> str:
    """The CA bundle's path (relative to the config file), which must be a readable file."""
    bundle = Path(written)
    if not bundle.is_absolute() and source != "<memory>":
        bundle = Path(source).parent / bundle
    if not bundle.is_file():
        raise ConfigError(path, f"no such file: {bundle}")
    return str(bundle)


def _variant(model: str, name: str, v: schema.VariantSection, tasks: set[str], path: str) -> Variant:
    allowed = None if v.allowed_tasks == "all" else frozenset(v.allowed_tasks)
    for task in sorted(allowed or ()):
        if task not in tasks:
            raise ConfigError(f"{path}.allowed_tasks", f"unknown task type '{task}' (routing.tasks defines {sorted(tasks)})")
    speed = SpeedPrior(**{**v.speed.model_dump(exclude={"calibration"}),  # provenance, not a term of the model
                          "tokens_per_step": tuple(sorted(v.speed.tokens_per_step.items()))})
    return Variant(
        model=model, name=name, kind=VariantKind(v.kind), served_model_name=v.served_model_name,
        max_model_len=v.max_model_len, supports_tools=v.tools, price=_price(v, speed, path), speed=speed,
        allowed_tasks=allowed,
        rollout=_rollout(v.rollout, tasks, f"{path}.rollout"),
        scheduling=Scheduling(v.scheduling),
        replica_cost=None if v.replica_cost is None else ReplicaCost(v.replica_cost.gpus, v.replica_cost.usd_per_gpu_hour),
        shares_weights_with=v.shares_weights_with,
    )


def _price(v: schema.VariantSection, speed: SpeedPrior, path: str) -> Price:
    """The variant's per-token price: as listed, or charged back from its replica's hourly cost."""
    if (v.price is None) == (v.replica_cost is None):
        raise ConfigError(path, "give either price (per-token) or replica_cost (gpus, usd_per_gpu_hour), not both "
                                "and not neither")
    if v.price is not None:
        return Price(v.price.input_per_mtok, v.price.output_per_mtok)
    assert v.replica_cost is not None
    return ReplicaCost(v.replica_cost.gpus, v.replica_cost.usd_per_gpu_hour).chargeback(speed)


def _rollout(section: schema.RolloutSection, tasks: set[str], path: str) -> Rollout:
    stage = RolloutStage(section.stage)
    if stage is RolloutStage.CANARY and not section.canary_shares:
        raise ConfigError(f"{path}.canary_shares", "a canary needs the share of at least one task type")
    if stage is not RolloutStage.CANARY and section.canary_shares:
        raise ConfigError(f"{path}.canary_shares", f"only a canary takes shares (the stage is {stage.value})")
    for task in sorted(section.canary_shares):
        if task not in tasks:
            raise ConfigError(f"{path}.canary_shares.{task}",
                              f"unknown task type '{task}' (routing.tasks defines {sorted(tasks)})")
    return Rollout(stage, tuple(sorted(section.canary_shares.items())))


def _require_engine_role_filter(models: Mapping[str, ModelSpec], discovery: tuple[KubernetesDiscovery, ...],
                                policy: Policy) -> None:
    """A prefill or decode replica must never take a client's request whole; only the
    ``engine-role`` filter keeps them out, so every routing profile needs it when one exists
    (listed, or found through discovery with its variant's engine)."""
    split = [f"models.{r.model}.variants.{r.variant}.replicas.{r.id.rsplit('/', 1)[1]}.engine.role"
             for m in models.values() for r in m.replicas if r.engine.role is not EngineRole.BOTH]
    split += [f"models.{d.model}.variants.{d.variant}.engine.role" for d in discovery if d.engine.role is not EngineRole.BOTH]
    split += [f"models.{d.model}.variants.{d.variant}.engine_groups" for d in discovery
              if any(engine.role is not EngineRole.BOTH for _, engine in d.groups)]
    if not split:
        return
    lacking = sorted(name for name, p in policy.profiles.items() if not any(f.type == ENGINE_ROLE for f in p.filters))
    if lacking:
        raise ConfigError(split[0], f"needs an '{ENGINE_ROLE}' filter in every routing profile "
                                    f"(lacking: {', '.join(lacking)})")


def _require_rollout_filter(models: Mapping[str, ModelSpec], policy: Policy) -> None:
    """A variant staged short of full is held back only by the ``rollout-stage`` filter: without
    it in every routing profile the stage would be silently ignored, so refuse such a config."""
    staged = [(m.name, v.name) for m in models.values() for v in m.variants.values() if v.rollout.stage is not RolloutStage.FULL]
    if not staged:
        return
    lacking = sorted(name for name, p in policy.profiles.items() if not any(f.type == ROLLOUT_STAGE for f in p.filters))
    if lacking:
        model, variant = staged[0]
        raise ConfigError(f"models.{model}.variants.{variant}.rollout.stage",
                          f"needs a '{ROLLOUT_STAGE}' filter in every routing profile (lacking: {', '.join(lacking)})")


def _base_url(url: str) -> str:
    url = url.rstrip("/")
    return url[: -len("/v1")] if url.endswith("/v1") else url


def _pins(model: str, variants: Mapping[str, Variant]) -> dict[str, str]:
    """``model:<variant>`` for every variant, plus ``model:standard`` (the first full variant) and
    ``model:fast`` (the cheapest other one) when no variant already has those names."""
    pins = {f"{model}:{name}": name for name in variants}
    full = [v for v in variants.values() if v.kind is VariantKind.FULL]
    fast = sorted((v for v in variants.values() if v.kind is not VariantKind.FULL), key=lambda v: v.price.output_per_mtok)
    if full:
        pins.setdefault(f"{model}:standard", full[0].name)
    if fast:
        pins.setdefault(f"{model}:fast", fast[0].name)
    return pins
