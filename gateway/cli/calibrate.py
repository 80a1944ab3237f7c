"""duet calibrate: measure one replica's speed and write it as a variant's ``speed:`` block.

The probe (serving.calibration.probe) takes well under a minute on a simulated replica and ~45 s
on one AVX2 core running SmolLM2-135M. The block it gives keeps the variant's current scheduler
limits and KV terms (the probe does not measure them) and records where it came from: the
replica, its hardware class, when, how long the probe took and how busy the machine was
(``speed.calibration``). A probe made while other processes were busy is made again (twice in
all), the quieter kept; one still busy is kept with a warning (serving.calibration.busy). A
speculative variant's probe also times a chat ask and a code edit alone, and its block's
``tokens_per_step`` for those tasks follows what they measured (serving.calibration.by_task).

``duet up`` calls ``calibrate_variants`` once its replicas are ready, so the embedded default's
priors are this machine's whatever its CPU.

Exit codes: 0 calibrated; 1 the replica could not be calibrated (unreachable, not an
OpenAI-compatible server, or timings that do not fit); 2 bad usage or config.
"""

from __future__ import annotations

import argparse
import asyncio
import dataclasses
import json
import os
import sys
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

import yaml

from gateway.config import parse_config
from gateway.errors import ConfigError
from serving.calibration.busy import LoadedProbe, probe_when_quiet
from serving.calibration.by_task import TASK_PROMPTS, is_drafting, with_task_speeds
from serving.calibration.fit import Measured, ProbeSamples, block_notes, measure, predicted_step_s, speed_block
from serving.calibration.load import CpuGauge, Quiet
from serving.calibration.probe import ProbePlan, probe
from serving.errors import CalibrationError
from serving.hardware import cpu_class, cpu_flags

LOOPBACK = frozenset({"127.0.0.1", "localhost", "::1"})


@dataclass(frozen=True, slots=True)
class Calibration:
    """A replica's measured ``speed:`` block (with its ``calibration`` record) and the terms it
    was built from."""

    speed: dict[str, Any]
    measured: Measured
    samples: ProbeSamples
    notes: tuple[str, ...] = ()

    def load_warning(self) -> str | None:
        """What to tell the operator when the block was measured on a busy machine, else None."""
        load = self.speed["calibration"].get("machine_load")
        if not load or not load["busy"]:
            return None
        return (f"measured under load: other processes used {load['others_cores']:.1f} of {load['cores']} cores"
                f" (steal {load['steal_share']:.0%}) after {load['probes']} probes; the speed may be"
                f" theirs, not the replica's: calibrate again on a quiet machine (duet calibrate)")

    def summary(self) -> str:
        """What the gateway will predict from the block on an idle replica (prefill rate, time
        per token alone and what each further stream adds to a step; per task where the probe
        measured tasks), hardware class, probe time."""
        speed, record = self.speed, self.speed["calibration"]
        per_token = dict(speed.get("tokens_per_step") or {})
        alone_s = predicted_step_s(speed, 1) / per_token.get("default", 1.0)
        by_task = "".join(f", {task} {predicted_step_s(speed, 1) / per_token[task] * 1e3:.1f}"
                          for task in record.get("tokens_per_step_measured", ()) if task != "default")
        return (f"prefill {speed['prefill_tokens_per_s']:.0f} tok/s, decode {alone_s * 1e3:.1f} ms/token alone"
                f" (+{(predicted_step_s(speed, 2) - predicted_step_s(speed, 1)) * 1e3:.2f} ms per stream)"
                + (f", measured by task (ms/token alone){by_task}" if by_task else "")
                + f", hardware {record['hardware_class']}, probe {record['probe_s']:.0f} s")


def register(subparsers: argparse._SubParsersAction) -> None:  # type: ignore[type-arg]
    parser = subparsers.add_parser("calibrate", help="measure a replica's speed and write a variant's speed block",
                                   description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--replica", required=True, help="the replica's base URL, e.g. http://127.0.0.1:8001")
    parser.add_argument("--model", help="the served model name to ask for (default: --variant's served_model_name, "
                                         "else the first the replica lists)")
    parser.add_argument("--config", type=Path, help="a duet.yaml whose --variant gets the measured block "
                                                    "(rewritten in place after a full check; its comments are not kept)")
    parser.add_argument("--variant", help="the variant in --config: NAME, or MODEL:NAME when several models have it")
    parser.add_argument("--out", type=Path, help="also write the speed block (YAML) to this file")
    parser.add_argument("--samples", type=Path, help="also write what the probe measured (JSON: every prompt's "
                                                     "TTFT, the step at each concurrency)")
    parser.add_argument("--replica-pid", type=int, action="append", default=[],
                        help="a local replica's process id (repeatable; its children count too): the machine's "
                             "load during the probe then leaves the replica's own work out (without it, a "
                             "loopback replica's load is read only before each probe)")
    parser.add_argument("--hardware-class", help="the replica's hardware class (default: this machine's CPU class "
                                                 "for a loopback replica, else 'unknown')")
    parser.set_defaults(run=run)


def calibrate(url: str, model: str | None, prior: Mapping[str, Any] | None, hardware_class: str,
              plan: ProbePlan | None = None, *, replica_pids: tuple[int, ...] = ()) -> Calibration:
    """Probe the replica at ``url`` (again while the machine is busy: ``probe_when_quiet``) and
    build its speed block over ``prior`` (see serving.calibration.fit.speed_block).
    ``replica_pids``: the replica's processes when local, so the load during the probe leaves
    its work out. Raises CalibrationError."""
    gauge = CpuGauge(lambda: (os.getpid(), *replica_pids))
    read_during = bool(replica_pids) or urlsplit(url).hostname not in LOOPBACK
    plan = plan or ProbePlan()
    if is_drafting(prior) and not plan.tasks:
        plan = dataclasses.replace(plan, tasks=TASK_PROMPTS)
    loaded = asyncio.run(probe_when_quiet(lambda: probe(url, model, plan), gauge.read, Quiet(),
                                          read_during=read_during))
    samples = loaded.samples
    measured = measure(samples)
    block, by_task = with_task_speeds(speed_block(measured, samples, prior), samples.tasks)
    block["calibration"] = {
        "hardware_class": hardware_class,
        "measured_at": datetime.now(UTC).isoformat(timespec="seconds"),
        "replica": url,
        "probe_s": round(samples.elapsed_s, 1),
        "decode_tokens_per_step": round(max(1.0, measured.tokens_per_chunk), 3),
        **by_task,
        **({"machine_load": record} if (record := load_record(loaded)) is not None else {}),
    }
    return Calibration(block, measured, samples, block_notes(measured, samples, prior))


def load_record(loaded: LoadedProbe) -> dict[str, Any] | None:
    """The ``calibration.machine_load`` mapping of ``loaded`` (None when its load was not read)."""
    load = loaded.load
    if load is None:
        return None
    return {"others_cores": round(load.others_cores, 2), "steal_share": round(load.steal_share, 3),
            "cores": load.cores, "probes": loaded.probes, "busy": not loaded.quiet}


def calibrate_variants(config: dict[str, Any], model: str, hardware_class: str, say: Callable[[str], None],
                       plan: ProbePlan | None = None, replica_pids: tuple[int, ...] = ()) -> None:
    """Replace the speed block of each of ``model``'s variants in ``config`` by one measured on
    its first replica, one replica at a time (so they do not disturb each other). A replica that
    cannot be calibrated keeps its prior, said so. ``say`` gets one line per variant, and a
    warning when it was measured under load. ``replica_pids``: the local replicas' processes
    (all of them: an idle one is not someone else's load)."""
    for name, variant in config["models"][model]["variants"].items():
        if not variant.get("replicas"):
            say(f"{name}: no replica listed (discovered ones are not probed), keeping its prior")
            continue
        url = variant["replicas"][0]["url"]
        try:
            result = calibrate(url, variant["served_model_name"], variant["speed"], hardware_class, plan,
                               replica_pids=replica_pids)
        except CalibrationError as exc:
            say(f"{name}: calibration failed, keeping the profile's prior: {exc}")
            continue
        variant["speed"] = result.speed
        say(f"{name}: calibrated: {result.summary()}")
        for note in result.notes:
            say(f"  note: {note}")
        if (warning := result.load_warning()) is not None:
            say(f"  warning: {warning}")


def hardware_class_of(url: str, given: str | None) -> str:
    """``given``, else this machine's CPU class when ``url`` is on loopback, else ``unknown``."""
    if given:
        return given
    return cpu_class(cpu_flags()) if urlsplit(url).hostname in LOOPBACK else "unknown"


def variant_path(raw: Mapping[str, Any], wanted: str) -> tuple[str, str]:
    """(model, variant) named by ``wanted`` (``NAME`` or ``MODEL:NAME``) in a parsed config.
    Raises ConfigError naming what exists."""
    model_name, _, name = wanted.rpartition(":")
    models = raw.get("models") or {}
    found = [(m, name) for m, section in models.items()
             if (not model_name or m == model_name) and name in (section.get("variants") or {})]
    if not found:
        known = sorted(f"{m}:{v}" for m, section in models.items() for v in (section.get("variants") or {}))
        raise ConfigError("models", f"no variant '{wanted}' (the config has {', '.join(known) or 'none'})")
    if len(found) > 1:
        raise ConfigError("models", f"variant '{name}' is in models {', '.join(m for m, _ in found)}: say MODEL:{name}")
    return found[0]


def with_speed(text: str, source: str, model: str, name: str, speed: Mapping[str, Any]) -> str:
    """The config ``text`` with ``model``'s variant ``name`` given ``speed``, checked as the
    gateway checks it. Raises ConfigError."""
    raw = yaml.safe_load(text)
    raw["models"][model]["variants"][name]["speed"] = dict(speed)
    rewritten: str = yaml.safe_dump(raw, sort_keys=False)
    parse_config(rewritten, source=f"{source} (with the measured speed of {model}:{name})")
    return rewritten


@dataclass(frozen=True, slots=True)
class ConfigTarget:
    """The variant ``--config`` / ``--variant`` name: where, its current speed and served name."""

    path: Path
    text: str
    model: str
    variant: str
    speed: dict[str, Any]
    served_model_name: str


def run(args: argparse.Namespace) -> int:
    try:
        target = config_target(args.config, args.variant)
    except ConfigError as exc:
        print(f"duet calibrate: {exc}", file=sys.stderr)
        return 2
    model = args.model or (target.served_model_name if target else None)
    try:
        result = calibrate(args.replica, model, target.speed if target else None,
                           hardware_class_of(args.replica, args.hardware_class), replica_pids=tuple(args.replica_pid))
    except CalibrationError as exc:
        print(f"duet calibrate: {exc}", file=sys.stderr)
        return 1
    block = yaml.safe_dump({"speed": result.speed}, sort_keys=False)
    print(block, end="")
    print(f"# {result.summary()}", file=sys.stderr)
    for note in result.notes:
        print(f"# note: {note}", file=sys.stderr)
    if (warning := result.load_warning()) is not None:
        print(f"# warning: {warning}", file=sys.stderr)
    if args.out:
        args.out.write_text(block)
    if args.samples:
        args.samples.write_text(json.dumps(dataclasses.asdict(result.samples), indent=1) + "\n")
    if target is not None:
        try:
            target.path.write_text(with_speed(target.text, str(target.path), target.model, target.variant, result.speed))
        except ConfigError as exc:
            print(f"duet calibrate: {target.path} not rewritten: {exc}", file=sys.stderr)
            return 2
        print(f"# wrote the speed block of {target.model}:{target.variant} into {target.path}", file=sys.stderr)
    return 0


def config_target(path: Path | None, wanted: str | None) -> ConfigTarget | None:
    """The variant ``wanted`` in the config at ``path`` (both or neither). Raises ConfigError."""
    if path is None and wanted is None:
        return None
    if path is None or wanted is None:
        raise ConfigError("", "--config and --variant go together")
    try:
        text = path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        raise ConfigError("", f"cannot read the config {path}: {exc}") from exc
    parse_config(text, source=str(path))
    raw = yaml.safe_load(text)
    model, name = variant_path(raw, wanted)
    variant = raw["models"][model]["variants"][name]
    return ConfigTarget(path, text, model, name, dict(variant["speed"]), str(variant["served_model_name"]))
