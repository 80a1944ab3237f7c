"""``make soak``: a long run of mixed load through a real gateway while simulated replicas are killed
and restarted, checking that nothing is lost and nothing leaks.

    python -m loadtests.benchmarks.soak.bench --duration 600 --out runs/soak

1. Four simulated replicas (two per variant of the demo model) and one gateway, real processes.
2. Capacity: a closed loop of ``--calibrate-clients`` clients for ``--calibrate-s`` seconds.
3. Load: open-loop (Poisson) arrivals at ``--load`` x capacity, a mix of streamed and plain chat,
   completions, pinned variants, tight budgets and deliberately invalid requests.
4. Chaos: every ``--kill-every-s`` one replica is SIGKILLed, and restarted on its port
   ``--down-s`` later.
5. Every request ends as ``ok``, ``clear_error`` (a 4xx with an OpenAI error body, such as a 429
   with Retry-After, or a stream that ends with an error event and ``[DONE]``) or ``lost``
   (anything else: any 5xx from the gateway, a reset connection, a stream cut without [DONE], a
   client timeout). The gateway's RSS, open file descriptors and the requests in flight are
   sampled every ``--sample-s``.
6. Leaks: the gateway's descriptors are counted idle (no request in flight, the clients' and the
   replicas' keep-alive connections closed) once after the capacity run and once after the soak;
   the idle count must come back to where it was. Under load the count swings with the requests
   in flight (about two descriptors each), so medians under load only describe, they do not judge.
The summary (JSON) goes to ``<out>/summary.json`` (and ``--results``) and is printed; the Soak
section of docs/reliability.md is rendered from the committed results (``loadtests.benchmarks.soak.render``).
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import random
import statistics
import sys
import time
from collections import Counter
from collections.abc import Callable
from contextlib import ExitStack
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import aiohttp
import yaml

from loadtests.launch.gateway_process import GatewayProcess
from serving.hardware import this_machine
from serving.sim.server.testing import SimProcess

DEMO = Path(__file__).resolve().parents[3] / "deploy" / "config" / "demo.yaml"
PROFILE = ("cpu-smollm2-bf16", "--time-scale", "4")
REQUEST_TIMEOUT_S = 120.0
# An idle count may exceed the one before by this much and still be no leak: a health probe to a
# replica (every 0.5 s) can be open through a whole counting window.
IDLE_FD_SLACK = 2
# Idle is reached once the replicas have closed the gateway's keep-alive connections (uvicorn closes
# them after 5 s): the count's minimum over one window equals the one before it.
IDLE_WINDOW_S = 5.0
IDLE_MAX_WAIT_S = 45.0


@dataclass
class Tally:
    """What happened to every request, and the gateway's resources over time."""

    outcomes: Counter[str] = field(default_factory=Counter)
    by_kind: Counter[str] = field(default_factory=Counter)
    lost_examples: list[str] = field(default_factory=list)
    samples: list[tuple[float, int, int, int]] = field(default_factory=list)  # (t, rss_kb, fds, in flight)
    kills: int = 0
    restarts: int = 0

    def record(self, kind: str, outcome: str, detail: str = "") -> None:
        self.outcomes[outcome] += 1
        self.by_kind[f"{kind}:{outcome}"] += 1
        if outcome == "lost" and len(self.lost_examples) < 20:
            self.lost_examples.append(f"{kind}: {detail}")


def request_mix(rng: random.Random) -> tuple[str, str, dict[str, Any], dict[str, str]]:
    """(kind, path, body, headers) of one request drawn from the soak's mix."""
    messages = [{"role": "user", "content": rng.choice(["Say hello.", "Write a haiku about rivers.",
                                                        "def add(a, b):\n    return a + b\nExplain this code."])}]
    tokens = rng.choice([8, 16, 32, 64])
    draw = rng.random()
    chat = "/v1/chat/completions"
    if draw < 0.40:
        return "stream", chat, {"model": "smollm2", "messages": messages, "max_tokens": tokens, "stream": True}, {}
    if draw < 0.70:
        return "chat", chat, {"model": "smollm2", "messages": messages, "max_tokens": tokens}, {}
    if draw < 0.80:
        return "completion", "/v1/completions", {"model": "smollm2", "prompt": "Once upon a time", "max_tokens": tokens}, {}
    if draw < 0.88:
        return "pinned", chat, {"model": "smollm2:fast", "messages": messages, "max_tokens": tokens, "stream": True}, {}
    if draw < 0.95:
        budget = {"x-duet-latency-budget-ms": "800"}
        return "budget", chat, {"model": "smollm2", "messages": messages, "max_tokens": tokens}, budget
    return "invalid", chat, {"model": "smollm2", "messages": messages, "max_tokens": -1}, {}


def error_verdict(kind: str, status: int, error: object) -> str:
    """How a non-200 answer counts: the invalid request's 400 is ``ok``; a 4xx with an OpenAI
    error body (message and type) a ``clear_error``; a 5xx, the gateway failing the request
    however clearly it says so, or a body without an error, is ``lost``."""
    if kind == "invalid" and status == 400:
        return "ok"
    clear = isinstance(error, dict) and bool(error.get("message")) and bool(error.get("type"))
    return "clear_error" if clear and status < 500 else "lost"


async def one_request(session: aiohttp.ClientSession, url: str, rng: random.Random, tally: Tally) -> None:
    kind, path, body, headers = request_mix(rng)
    try:
        async with session.post(url + path, json=body, headers=headers) as response:
            if response.status != 200:
                error = (await response.json(content_type=None)).get("error", {})
                tally.record(kind, error_verdict(kind, response.status, error), f"HTTP {response.status}")
                return
            if not body.get("stream"):
                answer = await response.json(content_type=None)
                tally.record(kind, "ok" if answer.get("choices") else "lost", "200 without choices")
                return
            events = [line for line in (await response.text()).split("\n\n") if line.startswith("data: ")]
            if not events or events[-1] != "data: [DONE]":
                tally.record(kind, "lost", f"stream ended without [DONE] after {len(events)} events")
            elif any(e.startswith('data: {"error"') for e in events):
                tally.record(kind, "clear_error")
            else:
                tally.record(kind, "ok")
    except (aiohttp.ClientError, TimeoutError, ValueError) as exc:
        tally.record(kind, "lost", f"{type(exc).__name__}: {exc}")


async def calibrate(url: str, clients: int, seconds: float) -> float:
    """Requests per second a closed loop of ``clients`` gets through the gateway (the capacity)."""
    done = 0
    rng = random.Random(1)
    scratch = Tally()
    deadline = time.monotonic() + seconds

    async def client(session: aiohttp.ClientSession) -> None:
        nonlocal done
        while time.monotonic() < deadline:
            await one_request(session, url, rng, scratch)
            done += 1

    timeout = aiohttp.ClientTimeout(total=REQUEST_TIMEOUT_S)
    async with aiohttp.ClientSession(timeout=timeout, connector=aiohttp.TCPConnector(limit=0)) as session:
        started = time.monotonic()
        await asyncio.gather(*(client(session) for _ in range(clients)))
        return done / (time.monotonic() - started)


def resources(pid: int) -> tuple[int, int]:
    """(RSS in kB, open file descriptors) of a process."""
    rss = 0
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            rss = int(line.split()[1])
    return rss, len(os.listdir(f"/proc/{pid}/fd"))


async def sample_forever(pid: int, every_s: float, started: float, tally: Tally,
                         in_flight: Callable[[], int]) -> None:
    while True:
        rss, fds = resources(pid)
        tally.samples.append((time.monotonic() - started, rss, fds, in_flight()))
        await asyncio.sleep(every_s)


def idle_descriptors(pid: int, every_s: float = 0.5) -> int:
    """The gateway's open descriptors with nothing in flight: the minimum over an
    ``IDLE_WINDOW_S`` window, once it equals the previous window's (or after ``IDLE_MAX_WAIT_S``)."""
    per_window = int(IDLE_WINDOW_S / every_s)
    counts: list[int] = []
    started = time.monotonic()
    while True:
        counts.append(resources(pid)[1])
        settled = len(counts) >= 2 * per_window and \
            min(counts[-per_window:]) == min(counts[-2 * per_window:-per_window])
        if settled or time.monotonic() - started > IDLE_MAX_WAIT_S:
            return min(counts[-per_window:])
        time.sleep(every_s)


async def chaos(sims: list[SimProcess], every_s: float, down_s: float, tally: Tally) -> None:
    """Kill one replica every ``every_s`` (round robin), restart it ``down_s`` later on its port."""
    turn = 0
    while True:
        await asyncio.sleep(every_s)
        sim = sims[turn % len(sims)]
        turn += 1
        sim.kill()
        tally.kills += 1
        await asyncio.sleep(down_s)
        sim.spawn()  # from the loop's thread: the replica dies with the thread that started it
        await asyncio.to_thread(sim.wait_healthy)
        tally.restarts += 1


async def soak(url: str, pid: int, sims: list[SimProcess], rate: float, args: argparse.Namespace) -> Tally:
    tally = Tally()
    rng = random.Random(args.seed)
    started = time.monotonic()
    in_flight: set[asyncio.Task[None]] = set()
    background = [asyncio.create_task(sample_forever(pid, args.sample_s, started, tally, in_flight.__len__)),
                  asyncio.create_task(chaos(sims, args.kill_every_s, args.down_s, tally))]
    timeout = aiohttp.ClientTimeout(total=REQUEST_TIMEOUT_S)
    async with aiohttp.ClientSession(timeout=timeout, connector=aiohttp.TCPConnector(limit=0)) as session:
        while time.monotonic() - started < args.duration:
            task = asyncio.create_task(one_request(session, url, rng, tally))
            in_flight.add(task)
            task.add_done_callback(in_flight.discard)
            await asyncio.sleep(rng.expovariate(rate))
        await asyncio.gather(*in_flight)  # each ends by itself: answered, failed, or timed out
    for task in background:
        task.cancel()
    await asyncio.gather(*background, return_exceptions=True)
    return tally


def summarise(tally: Tally, capacity: float, rate: float, args: argparse.Namespace) -> dict[str, Any]:
    after = [sample for sample in tally.samples if sample[0] >= args.warmup_s]
    window = max(1, len(after) // 6)
    rss_start = statistics.median(s[1] for s in after[:window])
    rss_end = statistics.median(s[1] for s in after[-window:])
    fds_start = statistics.median(s[2] for s in after[:window])
    fds_end = statistics.median(s[2] for s in after[-window:])
    total = sum(tally.outcomes.values())
    return {
        "duration_s": args.duration, "capacity_rps": round(capacity, 2), "target_rps": round(rate, 2),
        "requests": total, "achieved_rps": round(total / args.duration, 2),
        "outcomes": dict(tally.outcomes), "by_kind": dict(sorted(tally.by_kind.items())),
        "lost": tally.outcomes.get("lost", 0), "lost_examples": tally.lost_examples,
        "replica_kills": tally.kills, "replica_restarts": tally.restarts,
        "rss_mb_after_warmup": round(rss_start / 1024, 1), "rss_mb_at_end": round(rss_end / 1024, 1),
        "rss_growth_pct": round((rss_end / rss_start - 1) * 100, 2),
        "rss_mb_max": round(max(s[1] for s in tally.samples) / 1024, 1),
        "fds_after_warmup": fds_start, "fds_at_end": fds_end, "fds_max": max(s[2] for s in tally.samples),
        "load_average_at_end": os.getloadavg(),
        # every sample, so a trend (a leak grows with time; requests in flight only swing) can be read
        "samples": [[round(t, 1), rss, fds, flying] for t, rss, fds, flying in tally.samples],
    }


def verdict(summary: dict[str, Any]) -> list[str]:
    """The rules the soak failed (empty: it passed): nothing lost, RSS grew < 10% after the
    warm-up, the idle descriptor count came back, and the gateway was alive and drained cleanly."""
    failed = []
    if summary["lost"]:
        failed.append(f"{summary['lost']} requests lost")
    if summary["rss_growth_pct"] >= 10:
        failed.append(f"RSS grew {summary['rss_growth_pct']}%")
    if summary["fds_idle_after"] > summary["fds_idle_before"] + IDLE_FD_SLACK:
        failed.append(f"idle descriptors {summary['fds_idle_before']} -> {summary['fds_idle_after']}")
    if not summary["gateway_alive_at_end"]:
        failed.append("gateway died")
    if summary["gateway_exit_code_on_sigterm"] != 0:
        failed.append(f"SIGTERM exit code {summary['gateway_exit_code_on_sigterm']}")
    return failed


def host_facts() -> dict[str, Any]:
    """When and where the soak ran: a leak or a loss is judged on any machine, but the capacity
    (and so the offered rate) is this machine's, under whatever else ran beside it."""
    return {"date": time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime()),
            "hardware_class": this_machine().hardware_class, "cpus": os.cpu_count()}


def write_config(path: Path, urls: dict[str, list[str]]) -> None:
    raw = yaml.safe_load(DEMO.read_text())
    for variant, spec in raw["models"]["smollm2"]["variants"].items():
        spec["replicas"] = [{"url": u} for u in urls[variant]]
    raw["state"].update(health_interval_s=0.5, stale_after_s=2.0)
    path.write_text(yaml.safe_dump(raw, sort_keys=False))


def run(args: argparse.Namespace) -> dict[str, Any]:
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    with ExitStack() as stack:
        sims: dict[str, list[SimProcess]] = {}
        for variant in ("standard", "fast"):
            served = f"smollm2-{variant}"
            sims[variant] = [stack.enter_context(SimProcess(PROFILE[0], "--served-model-name", served, *PROFILE[1:]))
                             for _ in range(2)]
        config = out / "duet.yaml"
        write_config(config, {v: [s.url for s in group] for v, group in sims.items()})
        gateway = stack.enter_context(GatewayProcess(config, log_path=out / "gateway.log"))
        assert gateway.process is not None
        pid = gateway.process.pid
        load_at_start = os.getloadavg()
        capacity = asyncio.run(calibrate(gateway.url, args.calibrate_clients, args.calibrate_s))
        idle_before = idle_descriptors(pid)
        rate = capacity * args.load
        print(f"soak: capacity {capacity:.1f} req/s, {idle_before} descriptors idle; "
              f"running {args.duration:.0f} s at {rate:.1f} req/s", flush=True)
        tally = asyncio.run(soak(gateway.url, pid, [s for g in sims.values() for s in g], rate, args))
        summary = summarise(tally, capacity, rate, args)
        summary.update(fds_idle_before=idle_before, fds_idle_after=idle_descriptors(pid),
                       load_average_at_start=load_at_start)
        alive = gateway.process.poll() is None
        summary["gateway_alive_at_end"] = alive
        summary["gateway_exit_code_on_sigterm"] = gateway.stop(timeout_s=60)
    summary.update(command=" ".join(["python -m loadtests.benchmarks.soak.bench", *args.argv]), **host_facts())
    summary["failed_rules"] = verdict(summary)
    text = json.dumps(summary, indent=1) + "\n"
    (out / "summary.json").write_text(text)
    if args.results:
        Path(args.results).write_text(text)
    print(text, flush=True)
    return summary


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m loadtests.benchmarks.soak.bench", description=__doc__.split("\n\n")[0])
    parser.add_argument("--duration", type=float, default=600.0)
    parser.add_argument("--warmup-s", type=float, default=60.0)
    parser.add_argument("--load", type=float, default=0.7, help="share of the measured capacity to offer")
    parser.add_argument("--calibrate-clients", type=int, default=32)
    parser.add_argument("--calibrate-s", type=float, default=20.0)
    parser.add_argument("--kill-every-s", type=float, default=45.0)
    parser.add_argument("--down-s", type=float, default=10.0)
    parser.add_argument("--sample-s", type=float, default=5.0)
    parser.add_argument("--seed", type=int, default=7)
    parser.add_argument("--out", default="runs/soak")
    parser.add_argument("--results", help="also write the summary here (e.g. docs/results/soak-DATE.json)")
    args = parser.parse_args(argv)
    args.argv = list(sys.argv[1:] if argv is None else argv)
    failed = run(args)["failed_rules"]
    print("soak: PASS" if not failed else "soak: FAIL: " + "; ".join(failed), flush=True)
    return 0 if not failed else 1


if __name__ == "__main__":
    sys.exit(main())
