"""Duet under test: its config for the run (one model, one ``full`` variant, the fast backend as
its only replica) and its ``duet serve`` command, with in-memory state or a Redis store; and the
production path (``duet-production``, issue #19): keys on with every limit set, the reference's
two variants with two replicas each (all on the one backend), the reference's rules.
"""

from __future__ import annotations

import copy
import hashlib
import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import yaml

from loadtests.benchmarks.overhead.stack.canned import API_KEY, LOGICAL_MODEL, SERVED_MODEL_NAME
from loadtests.benchmarks.overhead.stack.launch import GatewayLaunch, Unavailable, distribution_version

REFERENCE_CONFIG = Path(__file__).resolve().parents[4] / "deploy" / "config" / "demo.yaml"


def duet_config(reference: dict[str, Any], backend_url: str, host: str, port: int) -> dict[str, Any]:
    """The run's duet.yaml as a dict: the reference config's routing and state sections as they
    are (the benchmark pays for the routing production runs), and one model, ``smollm2``, with
    one ``full`` variant whose only replica is the backend.

    Derived from the repo's reference config rather than written out here, so the benchmark
    follows the config format as it evolves.
    """
    model = reference["models"][LOGICAL_MODEL]
    name, variant = next((n, v) for n, v in model["variants"].items() if v["kind"] == "full")
    variant = {**variant, "served_model_name": SERVED_MODEL_NAME, "replicas": [{"url": backend_url}]}
    config = copy.deepcopy(reference)
    config["server"] = {**config.get("server", {}), "host": host, "port": port}
    config["models"] = {LOGICAL_MODEL: {**model, "variants": {name: variant}}}
    return config


# Limits set on every request's path but never reached in a run: the point is what checking and
# charging them costs (issue #19 measured 4x fewer requests per second with tokens_per_min set).
PRODUCTION_TIER = {"requests_per_min": 100_000_000, "tokens_per_min": 10_000_000_000, "monthly_spend_limit_usd": 1_000_000.0}
REPLICAS_PER_VARIANT = 2


def production_config(reference: dict[str, Any], backend_url: str, host: str, port: int, keys: bool = True) -> dict[str, Any]:
    """The production path's duet.yaml: the reference config's model with all its variants, each
    with ``REPLICAS_PER_VARIANT`` replicas on the backend, its routing and rules as they are, and
    API keys required (``keys.json`` beside the config) for a tier with every limit set (``keys``
    False: the same without keys, to see what keys and limits cost)."""
    model = copy.deepcopy(reference["models"][LOGICAL_MODEL])
    for variant in model["variants"].values():
        if variant["kind"] == "full":  # the backend's canned answers name it; the other keeps its own
            variant["served_model_name"] = SERVED_MODEL_NAME
        variant["replicas"] = [{"url": backend_url} for _ in range(REPLICAS_PER_VARIANT)]
    config = copy.deepcopy(reference)
    config["server"] = {**config.get("server", {}), "host": host, "port": port}
    config["models"] = {LOGICAL_MODEL: model}
    if keys:
        config["access"] = {"require_keys": True, "keys_file": "keys.json", "tiers": {"bench": PRODUCTION_TIER}}
    return config


def _production_keys_off(reference: dict[str, Any], backend_url: str, host: str, port: int) -> dict[str, Any]:
    return production_config(reference, backend_url, host, port, keys=False)


def _detector_off(reference: dict[str, Any], backend_url: str, host: str, port: int) -> dict[str, Any]:
    config = duet_config(reference, backend_url, host, port)
    config["routing"] = {**config.get("routing", {}), "task_detector": {"enabled": False}}
    return config


def _detector_numpy(reference: dict[str, Any], backend_url: str, host: str, port: int) -> dict[str, Any]:
    config = duet_config(reference, backend_url, host, port)
    config["routing"] = {**config.get("routing", {}), "task_detector": {"core": "numpy"}}
    return config


# The configs Duet can be measured with, by name: the benchmark's one replica (and the same with the
# task detector off, or its arithmetic in numpy rather than compiled, to see what detection costs a
# request: detector_twin), the production path.
CONFIGS = {"bench": duet_config, "bench-detector-off": _detector_off, "bench-detector-numpy": _detector_numpy,
           "production": production_config, "production-keys-off": _production_keys_off}


def write_keys_file(path: Path) -> None:
    """The benchmark's one key (``API_KEY``, which every gateway is sent) in Duet's keys-file
    format (``gateway.access.keys.ApiKey``: only the key's SHA-256 is stored)."""
    record = {"id": "key_bench", "name": "bench", "tier": "bench", "hash": hashlib.sha256(API_KEY.encode()).hexdigest(),
              "created_at": 0.0, "revoked": False}
    path.write_text(json.dumps({"keys": [record]}))


def duet_executable() -> Path:
    """The ``duet`` entry point of the environment running this harness."""
    return Path(sys.executable).parent / "duet"


def serve_missing_reason(duet: Path) -> str | None:
    """Why ``duet serve`` cannot run yet (``None`` when it can)."""
    if not duet.exists():
        return f"{duet} not installed"
    done = subprocess.run([str(duet), "--help"], capture_output=True, text=True, timeout=60, check=False)
    if "serve" not in done.stdout:
        return "`duet serve` does not exist yet"
    return None


def quiet_flags(duet: Path) -> list[str]:
    """Flags turning off per-request logging, as the peers run (those ``duet serve`` has)."""
    done = subprocess.run([str(duet), "serve", "--help"], capture_output=True, text=True, timeout=60, check=False)
    flags = []
    if "--no-access-log" in done.stdout:
        flags.append("--no-access-log")
    if "--log-level" in done.stdout:
        flags += ["--log-level", "warning"]
    return flags


def duet_launch(
    run_dir: Path, backend_url: str, port: int, name: str = "duet", state_url: str | None = None,
    config: str = "bench",
) -> GatewayLaunch | Unavailable:
    """Duet's launch for this run, or why it is unavailable.

    ``state_url`` (``redis://...``) selects the shared Redis store instead of the in-memory one;
    ``config``: which of ``CONFIGS`` (the production path's comes with its keys file).
    """
    duet = duet_executable()
    missing = serve_missing_reason(duet)
    if missing:
        return Unavailable(name, missing)
    config_path = run_dir / f"{name}.yaml"
    reference = yaml.safe_load(REFERENCE_CONFIG.read_text())
    config_path.write_text(yaml.safe_dump(CONFIGS[config](reference, backend_url, "127.0.0.1", port), sort_keys=False))
    if config == "production":
        write_keys_file(run_dir / "keys.json")
    command = [str(duet), "serve", "--config", str(config_path), "--host", "127.0.0.1", "--port", str(port),
               *quiet_flags(duet)]
    if state_url:
        command += ["--state", state_url]
    return GatewayLaunch(name=name, command=tuple(command), base_url=f"http://127.0.0.1:{port}",
                         version=distribution_version(Path(sys.executable), "duet"))
