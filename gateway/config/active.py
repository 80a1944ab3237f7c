"""The config a running gateway (or a replay) routes with, and what is built from it once: the
token counter of each model. Swapped as a whole on reload, so a request never sees half of an
old config and half of a new one."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

from gateway.config.types import DuetConfig, ModelSpec
from gateway.tokens import ApproxTokenCounter, HfTokenCounter, TokenCounter


@dataclass(frozen=True, slots=True)
class ActiveConfig:
    config: DuetConfig
    counters: Mapping[str, TokenCounter]

    @classmethod
    def of(cls, config: DuetConfig) -> ActiveConfig:
        return cls(config, build_counters(config))


def build_counters(config: DuetConfig) -> dict[str, TokenCounter]:
    return {name: _counter(model) for name, model in config.models.items()}


def _counter(model: ModelSpec) -> TokenCounter:
    if model.tokenizer.kind == "hf_tokenizer_json" and model.tokenizer.path:
        return HfTokenCounter(model.tokenizer.path)
    return ApproxTokenCounter()
