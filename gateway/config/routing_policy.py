"""duet.yaml's ``routing`` section -> the routing Policy: task types, rules, the task detector
(the shipped model or a team's file), plugins and profiles; reference errors are ConfigError
values naming the path (``routing.task_detector.model``)."""

from __future__ import annotations

import binascii
import dataclasses
import json
import struct
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from pydantic import TypeAdapter, ValidationError

from gateway.config import schema
from gateway.config.policy import (
    DetectorSettings,
    DisaggregationSettings,
    Policy,
    PrefixCacheSettings,
    SessionSettings,
    Signal,
    TaskDefaults,
    TaskRule,
)
from gateway.config.schema import config_error
from gateway.detect import TaskDetector
from gateway.detect.blend_model import BlendDetector, VectorsMissing
from gateway.detect.native import NativeUnavailable
from gateway.detect.vectors import VECTORS
from gateway.domain import (
    Priority,
)
from gateway.errors import ConfigError
from gateway.routing.registry import PLUGIN_TYPES, PluginKind
from gateway.routing.router import RoutingProfile, WeightedScorer


def routing_policy(routing: schema.RoutingSection, source: str) -> Policy:
    tasks = {
        name: TaskDefaults(t.ttft_ms, t.latency_ms, t.tpot_ms, t.expected_output_tokens, Priority(t.priority))
        for name, t in routing.tasks.items()
    }
    _require_task(routing.default_task, tasks, "routing.default_task")
    rules = tuple(_rule(rule, tasks, f"routing.rules.{i}") for i, rule in enumerate(routing.rules))
    plugins = _plugins(routing.plugins)
    profiles = {name: _profile(name, p, plugins) for name, p in routing.profiles.items()}
    if routing.default_profile not in profiles:
        raise ConfigError("routing.default_profile", f"references undefined profile '{routing.default_profile}'")
    for task, profile in routing.task_profiles.items():
        _require_task(task, tasks, f"routing.task_profiles.{task}")
        if profile not in profiles:
            raise ConfigError(f"routing.task_profiles.{task}", f"references undefined profile '{profile}'")
    return Policy(tasks, rules, routing.default_task, profiles, routing.default_profile, dict(routing.task_profiles),
                  PrefixCacheSettings(**routing.prefix_cache.model_dump()), SessionSettings(**routing.sessions.model_dump()),
                  _detection(routing.task_detector, tasks, source),
                  DisaggregationSettings(**routing.disaggregation.model_dump()))


def _detection(section: schema.TaskDetectorSection, tasks: Mapping[str, TaskDefaults],
               source: str) -> DetectorSettings | None:
    """The shipped detector, or the section's model file, with the section's threshold and floor
    (else the model's own); None when the section turns it off or the config names none of the
    tasks it detects."""
    if not section.enabled:
        return None
    detector = _blend(section, source) if section.kind == "blend" else \
        TaskDetector.builtin() if section.model is None else _detector_file(section.model, source)
    if not set(detector.tasks) & set(tasks):
        return None
    meta = detector.meta
    return DetectorSettings(detector, section.threshold or float(meta["threshold"]), section.floor or float(meta["floor"]))


def _blend(section: schema.TaskDetectorSection, source: str) -> BlendDetector:
    """The shipped blend model, or the section's model file (``duet detect train``), over the
    section's vectors (else ``make detector-vectors``' table)."""
    vectors = VECTORS if section.vectors is None else _relative(section.vectors, source)
    try:
        if section.model is None:
            return BlendDetector.builtin(vectors, section.core)
        return BlendDetector.from_file(_document(section.model, source), vectors, section.core)
    except VectorsMissing as exc:
        raise ConfigError("routing.task_detector.vectors", str(exc)) from exc
    except NativeUnavailable as exc:
        raise ConfigError("routing.task_detector.core", str(exc)) from exc
    except (KeyError, TypeError, ValueError, binascii.Error) as exc:
        raise ConfigError("routing.task_detector.model", f"not a blend model written by `duet detect train`: {exc!r}") from exc


def _relative(written: str, source: str) -> Path:
    path = Path(written)
    return path if path.is_absolute() or source == "<memory>" else Path(source).parent / path


def _document(written: str, source: str) -> dict[str, Any]:
    """A team's model file (``duet detect train``), relative to the config file, as JSON."""
    path = _relative(written, source)
    where = "routing.task_detector.model"
    try:
        document = json.loads(path.read_text(encoding="utf-8"))
    except OSError as exc:
        raise ConfigError(where, f"cannot read {path}: {exc.strerror}") from exc
    except (UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise ConfigError(where, f"{path} is not a model file (JSON): {exc}") from exc
    if not isinstance(document, dict):
        raise ConfigError(where, f"{path} is not a model file (a JSON object)")
    return document


def _detector_file(written: str, source: str) -> TaskDetector:
    """A team's words model (``duet detect train --kind words``)."""
    document = _document(written, source)
    try:
        return TaskDetector.from_document(document)
    except (KeyError, TypeError, ValueError, struct.error, binascii.Error) as exc:
        raise ConfigError("routing.task_detector.model",
                          f"not a words task detector model written by `duet detect train --kind words`: {exc!r}") from exc


def _require_task(task: str, tasks: Mapping[str, TaskDefaults], path: str) -> None:
    if task not in tasks:
        raise ConfigError(path, f"unknown task type '{task}' (routing.tasks defines {sorted(tasks)})")


def _rule(rule: schema.RuleSection, tasks: Mapping[str, TaskDefaults], path: str) -> TaskRule:
    _require_task(rule.task, tasks, f"{path}.task")
    if isinstance(rule.if_, schema.InputTokensOver):
        return TaskRule(Signal.INPUT_TOKENS_OVER, rule.task, rule.if_.input_tokens_over)
    return TaskRule(Signal(rule.if_), rule.task)


def _plugins(sections: list[schema.PluginSection]) -> dict[str, tuple[PluginKind, Any]]:
    built: dict[str, tuple[PluginKind, Any]] = {}
    for i, section in enumerate(sections):
        path = f"routing.plugins.{i}"
        if section.name in built:
            raise ConfigError(f"{path}.name", f"duplicate plugin name '{section.name}'")
        plugin_type = PLUGIN_TYPES.get(section.type)
        if plugin_type is None:
            raise ConfigError(f"{path}.type", f"unknown plugin type '{section.type}' (known: {', '.join(sorted(PLUGIN_TYPES))})")
        built[section.name] = (plugin_type.kind, _instantiate(plugin_type.cls, section, f"{path}.params"))
    return built


def _instantiate(cls: type, section: schema.PluginSection, path: str) -> Any:
    fields = {f.name for f in dataclasses.fields(cls)} - {"name"}
    for key in section.params:
        if key not in fields:
            takes = sorted(fields) or "none"
            raise ConfigError(f"{path}.{key}", f"unknown parameter (plugin type '{section.type}' takes {takes})")
    try:
        return TypeAdapter(cls).validate_python({**section.params, "name": section.name})
    except ValidationError as exc:
        raise config_error(exc, prefix=path) from exc


def _profile(name: str, p: schema.ProfileSection, plugins: Mapping[str, tuple[PluginKind, Any]]) -> RoutingProfile:
    path = f"routing.profiles.{name}"

    def ref(plugin: str, kind: PluginKind, where: str) -> Any:
        if plugin not in plugins:
            raise ConfigError(where, f"references undefined plugin '{plugin}'")
        actual, instance = plugins[plugin]
        if actual != kind:
            raise ConfigError(where, f"plugin '{plugin}' is a {actual}, not a {kind}")
        return instance

    return RoutingProfile(
        name=name,
        filters=tuple(ref(f, "filter", f"{path}.filters.{i}") for i, f in enumerate(p.filters)),
        predictor=ref(p.predictor, "predictor", f"{path}.predictor"),
        scorers=tuple(
            WeightedScorer(ref(s.plugin, "scorer", f"{path}.scorers.{i}.plugin"), s.weight) for i, s in enumerate(p.scorers)
        ),
        objective=ref(p.objective, "objective", f"{path}.objective"),
    )
