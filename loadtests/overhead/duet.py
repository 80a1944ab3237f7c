"""Duet under test: its config for the run (one model, one ``full`` variant, the fast backend as
its only replica) and its ``duet serve`` command, with in-memory state or, later, a Redis store.
"""

from __future__ import annotations

import copy
import subprocess
import sys
from pathlib import Path
from typing import Any

import yaml

from loadtests.overhead.canned import LOGICAL_MODEL, SERVED_MODEL_NAME
from loadtests.overhead.launch import GatewayLaunch, Unavailable, distribution_version

REFERENCE_CONFIG = Path(__file__).resolve().parents[2] / "deploy" / "config" / "demo.yaml"


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
    run_dir: Path, backend_url: str, port: int, name: str = "duet", state_url: str | None = None
) -> GatewayLaunch | Unavailable:
    """Duet's launch for this run, or why it is unavailable.

    ``state_url`` (``redis://...``) selects the shared Redis store instead of the in-memory one;
    the option's exact spelling is to be settled with the gateway (issue #5).
    """
    duet = duet_executable()
    missing = serve_missing_reason(duet)
    if missing:
        return Unavailable(name, missing)
    config_path = run_dir / f"{name}.yaml"
    reference = yaml.safe_load(REFERENCE_CONFIG.read_text())
    config_path.write_text(yaml.safe_dump(duet_config(reference, backend_url, "127.0.0.1", port), sort_keys=False))
    command = [str(duet), "serve", "--config", str(config_path), "--host", "127.0.0.1", "--port", str(port),
               *quiet_flags(duet)]
    if state_url:
        command += ["--state", state_url]
    return GatewayLaunch(name=name, command=tuple(command), base_url=f"http://127.0.0.1:{port}",
                         version=distribution_version(Path(sys.executable), "duet"))
