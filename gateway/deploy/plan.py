"""What a deployment holds, read from a duet.yaml: per variant, its launch profile and how many
replicas, checked against the target (a GPU profile cannot go to a CPU target). Errors name the
config path, as the gateway's own config errors do."""

from __future__ import annotations

import dataclasses
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

import yaml

from gateway.autoscaling.gauge import sizing_for
from gateway.config import parse_config
from gateway.config.engine_groups import group_name
from gateway.config.policy import Policy
from gateway.config.schema import ConfigFile
from gateway.config.types import ModelSpec
from gateway.deploy.profiles import PROFILES, Device, LaunchProfile
from gateway.domain import EngineRole
from gateway.errors import ConfigError
from gateway.scaling import Autoscaling, GroupShare, desired_replicas, split_replicas
from gateway.scaling.group_split import first_total_for_every_group
from gateway.scaling.policy import AUTOSCALERS
from serving.launch.roles import EngineSettings, with_engine
from serving.sim.parallel import at_size, load_profile
from serving.sim.profile import ProfileError

Platform = Literal["k8s", "compose", "gie"]
# gie: Duet as the endpoint picker of a Gateway API Inference Extension gateway (gie.py); plain
# ``gie`` takes the device of the config's launch profiles.
TARGETS = ("k8s-gpu", "k8s-cpu", "compose-gpu", "compose-cpu", "gie-gpu", "gie-cpu")
CHOICES = (*TARGETS, "gie")
LABEL_MODEL = "duet.dev/model"
LABEL_VARIANT = "duet.dev/variant"


@dataclass(frozen=True, slots=True)
class Target:
    platform: Platform
    device: Device

    @classmethod
    def parse(cls, name: str) -> Target:
        if name not in TARGETS:
            raise ValueError(f"unknown target '{name}' (known: {', '.join(TARGETS)})")
        platform, device = name.split("-")
        return cls(platform, device)  # type: ignore[arg-type]

    @property
    def name(self) -> str:
        return f"{self.platform}-{self.device}"

    @property
    def kubernetes(self) -> bool:
        """One Deployment per variant (per engine group of a variant of several engines), found by
        its labels (k8s and gie alike)."""
        return self.platform != "compose"


@dataclass(frozen=True, slots=True)
class EngineGroup:
    """``count`` replicas of a variant running ``engine``; ``name`` is ``group_name(engine)``."""

    name: str
    engine: EngineSettings
    count: int


@dataclass(frozen=True, slots=True)
class VariantDeployment:
    """One variant's replicas: ``replicas`` is the config's ``replica_count`` (``duet plan``'s), else
    its ``engine_groups``' sum, else how many the config lists (at least one). ``autoscaling``: the model's (None: the count stays
    ``replicas``); ``floor``: the fewest replicas its gauge ever asks for, with no demand at all
    (``min_replicas``, or one where parity makes the variant the only home of a task type)."""

    model: str
    variant: str
    served_model_name: str
    max_model_len: int
    profile: LaunchProfile
    replicas: int
    autoscaling: Autoscaling | None = None
    floor: int = 0
    # Replica i's engine (role, chunk budget, max batch, KV connector); past the listed ones, the
    # variant's own (``engine``).
    engine: EngineSettings = EngineSettings()
    replica_engines: tuple[EngineSettings, ...] = ()

    def engine_at(self, index: int) -> EngineSettings:
        """Replica ``index``'s engine: its own if listed (or its group's), else the variant's."""
        return self.replica_engines[index] if index < len(self.replica_engines) else self.engine

    def launched(self, index: int) -> LaunchProfile:
        """The launch profile replica ``index`` starts with: the variant's, its engine applied."""
        return with_engine(self.profile, self.engine_at(index))

    @property
    def groups(self) -> tuple[EngineGroup, ...]:
        """The variant's replicas by engine, in order of first appearance: one Kubernetes
        Deployment each. No replicas (scaled to zero): one empty group of replica 0's engine."""
        counts: dict[EngineSettings, int] = {}
        for i in range(self.replicas):
            counts[self.engine_at(i)] = counts.get(self.engine_at(i), 0) + 1
        if not counts:
            counts[self.engine_at(0)] = 0
        return tuple(EngineGroup(group_name(engine), engine, count) for engine, count in counts.items())

    @property
    def shares(self) -> tuple[GroupShare, ...]:
        """The groups as ``gateway.scaling.group_split`` splits an autoscaled count over them
        (the same counts and order the deployed config's ``engine_groups`` give the gauge)."""
        return tuple(GroupShare(group.count, EngineRole(group.engine.role)) for group in self.groups)

    @property
    def name(self) -> str:
        """A DNS-1123 name for the variant's Deployment/Service: ``vllm-<model>-<variant>``."""
        return "vllm-" + re.sub(r"[^a-z0-9-]", "-", f"{self.model}-{self.variant}")

    def group_deployment(self, group: EngineGroup) -> str:
        """The Deployment (and headless Service) of one of several groups: ``<name>-<group>``."""
        return f"{self.name}-{group.name}"

    @property
    def selector(self) -> dict[str, str]:
        return {"app.kubernetes.io/name": "vllm", LABEL_MODEL: self.model, LABEL_VARIANT: self.variant}

    @property
    def label_selector(self) -> str:
        return ",".join(f"{key}={value}" for key, value in self.selector.items())


@dataclass(frozen=True, slots=True)
class DeployPlan:
    """The config as written (``raw``, kept to derive the deployed configs), and its variants.
    ``autoscaler``: what every autoscaled model was switched to at render time (None: each
    model's own choice)."""

    raw: dict[str, Any]
    target: Target
    variants: tuple[VariantDeployment, ...]
    autoscaler: str | None = None


def target_for(name: str, config_path: str | Path) -> Target:
    """``name`` as a Target; plain ``gie`` takes the device of the config's first known launch
    profile (``load_plan`` then holds every other variant to it, naming the path that differs)."""
    if name != "gie":
        return Target.parse(name)
    try:
        raw = yaml.safe_load(Path(config_path).read_text(encoding="utf-8"))
        named = [v.get("launch_profile") for m in raw["models"].values() for v in m["variants"].values()]
    except (yaml.YAMLError, KeyError, TypeError, AttributeError, UnicodeDecodeError):
        named = []  # load_plan reports what is wrong with the file
    devices = [PROFILES[p].device for p in named if isinstance(p, str) and p in PROFILES]
    return Target("gie", devices[0] if devices else "gpu")


def pool_name(plan: DeployPlan, model: str) -> str:
    """The model's InferencePool: the name its ``inference_pool`` gives, else the model's name as
    a DNS-1123 name."""
    written = (plan.raw["models"][model].get("inference_pool") or {}).get("name")
    return str(written) if written else re.sub(r"[^a-z0-9-]", "-", model.lower()).strip("-")


def load_plan(path: str | Path, target: Target, autoscaler: str | None = None) -> DeployPlan:
    """Read and validate ``path`` as the gateway would, then plan ``target``; ``autoscaler``
    (hpa | keda) replaces the choice of every model that autoscales. Raises ConfigError."""
    if autoscaler is not None and autoscaler not in AUTOSCALERS:
        raise ValueError(f"autoscaler '{autoscaler}': one of {', '.join(AUTOSCALERS)}")
    text = Path(path).read_text(encoding="utf-8")
    config = parse_config(text, source=str(path))  # every check the gateway makes, first
    raw = yaml.safe_load(text)
    parsed = ConfigFile.model_validate(raw)
    variants: list[VariantDeployment] = []
    for model, section in parsed.models.items():
        settings = config.models[model].autoscaling
        if settings is not None and autoscaler is not None:
            settings = dataclasses.replace(settings, autoscaler=autoscaler)
            raw["models"][model]["autoscaling"]["autoscaler"] = autoscaler
        floors = {} if settings is None else _floors(config.models[model], settings, config.policy)
        variants += [dataclasses.replace(_variant(model, name, variant, target), autoscaling=settings,
                                         floor=floors.get(name, 0))
                     for name, variant in section.variants.items()]
    for model in parsed.models:
        if not any(d.replicas for d in variants if d.model == model):
            raise ConfigError(f"models.{model}.variants", "every variant has replica_count 0: nothing would serve")
    _one_autoscaler(variants)
    if target.kubernetes:
        _every_group_scaled(variants)
    if target.platform == "gie":
        _pools_label_variants(parsed)
    return DeployPlan(raw, target, tuple(variants), autoscaler)


def _one_autoscaler(variants: list[VariantDeployment]) -> None:
    """One cluster serves external metrics from prometheus-adapter or from KEDA, not both (each
    registers the APIService v1beta1.external.metrics.k8s.io), so every model must pick the same."""
    chosen = {d.model: d.autoscaling.autoscaler for d in variants if d.autoscaling is not None}
    first, first_autoscaler = next(iter(chosen.items()), ("", ""))
    for model, autoscaler in chosen.items():
        if autoscaler != first_autoscaler:
            raise ConfigError(f"models.{model}.autoscaling.autoscaler",
                              f"'{autoscaler}', but models.{first} uses '{first_autoscaler}': prometheus-adapter "
                              "(hpa) and KEDA both serve the external metrics API, so a deployment uses one of them")


def _every_group_scaled(variants: list[VariantDeployment]) -> None:
    """An autoscaled variant of several engine groups gets one autoscaler per group, each between
    the split of the variant's floor and of its most replicas (``group_split``). A group that the
    split gives no replica even at the most would be a Deployment that never runs (and a plain
    HPA, which cannot go below one, would hold it at one whatever the gauge says): refused,
    naming the fewest replicas at which every group has one."""
    for d in variants:
        if d.autoscaling is None or len(groups := d.groups) < 2:
            continue
        most = max(d.autoscaling.max_replicas, d.floor)
        if not all(counts := split_replicas(d.shares, most)):
            empty = ", ".join(g.name for g, n in zip(groups, counts, strict=True) if not n)
            raise ConfigError(f"models.{d.model}.autoscaling.max_replicas",
                              f"{d.autoscaling.max_replicas}: variant '{d.variant}' has {len(groups)} engine groups, and "
                              f"{most} replicas split in their configured proportions give none to {empty}, whose "
                              f"Deployment would never run: raise it to at least "
                              f"{first_total_for_every_group(d.shares)}, or merge the groups")
        _one_replica_serves(d)


def _one_replica_serves(d: VariantDeployment) -> None:
    """A variant of prefill and decode groups and no ``both`` one answers only with a replica of
    each, so at a count of one (its decoder alone) it answers nothing. A plain HPA keeps every
    group at one at least; KEDA follows the gauge down to one, so under KEDA its floor must be two."""
    roles = {share.role for share in d.shares}
    if (d.autoscaling is not None and d.autoscaling.autoscaler == "keda" and EngineRole.BOTH not in roles
            and {EngineRole.PREFILL, EngineRole.DECODE} <= roles and d.floor < 2):
        raise ConfigError(f"models.{d.model}.autoscaling.min_replicas",
                          f"variant '{d.variant}' has prefill and decode groups and no 'both' one: a count of one (a "
                          f"decode replica alone) answers nothing, and KEDA scales its groups to the gauge's count, "
                          f"one included: set min_replicas.{d.variant} to 2, add a 'both' group, or use the hpa "
                          "autoscaler (one replica per group at least)")


def _pools_label_variants(parsed: ConfigFile) -> None:
    """The rendered vLLM pods say their variant in ``duet.dev/variant``: a pool must read that label."""
    for model, section in parsed.models.items():
        if section.inference_pool is not None and section.inference_pool.variant_label != LABEL_VARIANT:
            raise ConfigError(f"models.{model}.inference_pool.variant_label",
                              f"'{section.inference_pool.variant_label}', but the rendered vLLM pods carry their variant in "
                              f"'{LABEL_VARIANT}'")


def _floors(model: ModelSpec, settings: Autoscaling, policy: Policy) -> dict[str, int]:
    """Variant name -> the replicas the gauge asks for with no demand at all: its own arithmetic,
    so the rendered minimum and the gateway's never disagree."""
    needs = desired_replicas(list(model.variants.values()), {}, sizing_for(policy, model.name), settings)
    return {name: need.floor for name, need in needs.items()}


def _variant(model: str, name: str, section: Any, target: Target) -> VariantDeployment:
    path = f"models.{model}.variants.{name}.launch_profile"
    if section.launch_profile is None:
        raise ConfigError(path, f"needed to deploy (a {target.device} profile: {_known(target.device)})")
    profile = PROFILES.get(section.launch_profile)
    if profile is None:
        raise ConfigError(path, f"unknown profile '{section.launch_profile}' (known: {', '.join(sorted(PROFILES))})")
    if profile.known_wrong is not None:
        raise ConfigError(path, f"'{profile.name}' is known to be wrong ({profile.known_wrong}); it is not deployable")
    if profile.device != target.device:
        raise ConfigError(path, f"'{profile.name}' is a {profile.device} profile; target {target.name} needs one of: "
                                f"{_known(target.device)}")
    if section.scheduling != profile.scheduling:  # else priorities are sent to a replica that ignores them, or not sent
        raise ConfigError(f"models.{model}.variants.{name}.scheduling",
                          f"'{section.scheduling}', but launch profile '{profile.name}' schedules "
                          f"{profile.scheduling} (--scheduling-policy): they must agree")
    draft = _draft_model(profile)
    if section.shares_weights_with is not None and draft is not None:
        raise ConfigError(f"models.{model}.variants.{name}.shares_weights_with",
                          f"'{profile.name}' drafts with a model ({draft}), whose own KV vLLM's NIXL "
                          "transfer carries too: its decode replicas take KV only from prefill replicas running the "
                          "same draft (vLLM checks this at the handshake since PR #49230), not the standard ones. "
                          "Pair a pattern-based variant (n-gram) instead, or leave shares_weights_with unset")
    replicas = max(1, len(section.replicas)) if section.replica_count is None else section.replica_count
    engine = _settings(section.engine)
    prefix = f"models.{model}.variants.{name}"
    # (path, engine) for each engine written: the variant's, each listed replica's, each group's
    written = [(f"{prefix}.replicas.{i}.engine", _settings(r.engine)) for i, r in enumerate(section.replicas) if r.engine]
    written += [(f"{prefix}.engine_groups.{i}.engine", _settings(g.engine)) for i, g in enumerate(section.engine_groups)]
    replica_engines = tuple(engine if r.engine is None else _settings(r.engine) for r in section.replicas)
    if section.engine_groups:  # parse_config checked they stand alone and sum to replica_count
        replica_engines = tuple(_settings(g.engine) for g in section.engine_groups for _ in range(g.count))
        replicas = len(replica_engines)
    else:
        written.insert(0, (f"{prefix}.engine", engine))
    for path, settings in written:
        _check_tp(profile, settings, section.max_model_len, f"{path}.tensor_parallel_size")
        gpus = with_engine(profile, settings).gpus
        if section.replica_cost is not None and section.replica_cost.gpus != gpus:  # else its chargeback is wrong
            raise ConfigError(f"{prefix}.replica_cost.gpus", f"{section.replica_cost.gpus}, but each replica runs on "
                              f"{gpus} GPUs ({path}: its tensor_parallel_size, else the profile's)")
    deployment = VariantDeployment(model, name, section.served_model_name, section.max_model_len, profile, replicas,
                                   engine=engine, replica_engines=replica_engines)
    if target.kubernetes:
        _check_group_names(deployment, prefix)
    return deployment


# A Service's name is a DNS-1035 label: each group's headless Service is named as its Deployment.
MAX_SERVICE_NAME = 63


def _check_group_names(d: VariantDeployment, prefix: str) -> None:
    """Each group's Deployment and Service, ``vllm-<model>-<variant>-<group>``, must be a valid name."""
    if len(groups := d.groups) < 2:
        return
    for group in groups:
        if len(full := d.group_deployment(group)) > MAX_SERVICE_NAME:
            raise ConfigError(f"{prefix}.engine_groups", f"the group '{group.name}' would be named '{full}', "
                              f"{len(full)} characters: Kubernetes allows {MAX_SERVICE_NAME} (shorten the model's or "
                              "the variant's name)")


# Speculative methods that propose from the tokens alone (vLLM's pattern-based ones): they add no
# KV of their own. Every other method proposes with a model (a draft, EAGLE heads, MTP layers),
# whose KV cache group prefill and decode must agree on.
PATTERN_METHODS = frozenset({"ngram", "ngram_gpu", "suffix"})


def _draft_model(profile: LaunchProfile) -> str | None:
    """The method of the profile's speculative config if it proposes with a model, else None."""
    config = dict(profile.engine_args).get("speculative-config")
    if not isinstance(config, dict):
        return None
    method = str(config.get("method") or "draft_model")
    return None if method in PATTERN_METHODS else method


def _settings(section: Any) -> EngineSettings:
    return EngineSettings(section.role, section.max_num_batched_tokens, section.max_num_seqs, section.kv_connector,
                          section.tensor_parallel_size)


def _check_tp(profile: LaunchProfile, engine: EngineSettings, max_model_len: int, path: str) -> None:
    """A TP size other than the profile's must be a GPU profile's, and its weights, activations and
    one context of the variant's ``max_model_len`` of KV must fit that many GPUs (the simulator
    twin's memory check). Raises ConfigError."""
    size = engine.tensor_parallel_size
    if size is None:
        return
    if profile.device != "gpu" and size != 1:
        raise ConfigError(path, f"{size}: '{profile.name}' is a {profile.device} profile, one process per replica")
    if profile.sim_profile is None:
        raise ConfigError(path, f"{size}: '{profile.name}' names no simulator twin whose memory says what fits")
    twin = load_profile(profile.sim_profile)
    twin = dataclasses.replace(twin, engine=dataclasses.replace(twin.engine, max_model_len=max_model_len))
    try:
        at_size(twin, size)
    except ProfileError as exc:  # DoesNotFit, or a twin without tensor-parallel facts
        raise ConfigError(path, f"{size}: {str(exc).removeprefix(f'{exc.path}: ')}") from exc


def _known(device: Device) -> str:
    return ", ".join(sorted(name for name, p in PROFILES.items() if p.device == device and p.known_wrong is None))
