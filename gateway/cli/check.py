"""duet check: validate a config file; errors name their path. A config that loads is still
refused when a high-speed variant's allowed task types have no parity report or operator's
override behind them (gateway/config/evidence.py)."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

import yaml

from gateway.config import load_config
from gateway.config.evidence import unproven
from gateway.config.schema import ConfigFile
from gateway.detect.blend_model import BlendDetector
from gateway.errors import ConfigError


def register(subparsers: argparse._SubParsersAction) -> None:  # type: ignore[type-arg]
    parser = subparsers.add_parser("check", help="validate a duet.yaml")
    parser.add_argument("file")
    parser.set_defaults(run=run)


def run(args: argparse.Namespace) -> int:
    try:
        config = load_config(args.file)
        unbacked = unproven(ConfigFile.model_validate(yaml.safe_load(Path(args.file).read_text(encoding="utf-8"))))
    except ConfigError as exc:
        print(f"{args.file}: invalid\n{exc}", file=sys.stderr)
        return 1
    if unbacked:
        print(f"{args.file}: refused (no evidence, no traffic: docs/parity.md)\n" + "\n".join(map(str, unbacked)),
              file=sys.stderr)
        return 1
    replicas = len(config.replicas)
    variants = sum(len(m.variants) for m in config.models.values())
    detection = config.policy.detection
    # Which detector serves, and for the blend one whether it is compiled here (`core: auto` falls
    # back to Python and numpy silently where `duet detect native` has not run: same answers, slower).
    if detection is None:
        detector = "task detector off"
    elif isinstance(detection.detector, BlendDetector):
        compiled = detection.detector.core_name == "native"
        detector = f"task detector blend, {'compiled' if compiled else 'Python and numpy'}"
    else:
        detector = "task detector words"
    print(f"{args.file}: ok ({len(config.models)} model(s), {variants} variant(s), {replicas} replica(s), "
          f"{len(config.policy.profiles)} routing profile(s), {detector})")
    return 0
