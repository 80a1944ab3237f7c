"""Every generated section of the docs, registered once: its name, its document, the committed
results it is rendered from and its renderer (and, for an area of the benchmarks summary, its
headline). ``python -m loadtests.sections`` writes them all; one test checks them all.

A new benchmark registers its section with one line in ``SECTIONS``."""

from __future__ import annotations

import json
from pathlib import Path

from gateway.fleet.capacity import layout_render as capacity_layouts
from gateway.fleet.capacity import render as capacity
from gateway.fleet.capacity import results as capacity_plans
from gateway.fleet.capacity.days import day_curve_render as capacity_day_curve
from gateway.fleet.capacity.days import day_render as capacity_day
from gateway.fleet.replay import results as replay
from gateway.fleet.sweep import chunk_render, pd_render
from gateway.fleet.sweep import diagnose as knee_diagnosis
from gateway.fleet.sweep import render as knee_sweep
from loadtests.benchmarks.escalation import bench as escalation
from loadtests.benchmarks.length_quantile import render as length_quantile
from loadtests.benchmarks.loadgens import document as loadgens
from loadtests.benchmarks.overhead import detector_twin
from loadtests.benchmarks.overhead.report import document as overhead
from loadtests.benchmarks.overhead.report import picker as picker_hop
from loadtests.benchmarks.overhead.report.results import read as read_overhead
from loadtests.benchmarks.prompt_cache import render as prompt_cache
from loadtests.benchmarks.router import cost as router_cost
from loadtests.benchmarks.router import detector as task_detector
from loadtests.benchmarks.router import detector_ceiling, detector_latency, shadow
from loadtests.benchmarks.sim import bench as sim_bench
from loadtests.benchmarks.sim import h100_fidelity
from loadtests.benchmarks.slo import render as slo
from loadtests.benchmarks.soak import render as soak
from loadtests.benchmarks.unnamed import render as unnamed_tasks
from loadtests.benchmarks.variants import bench as variants
from loadtests.benchmarks.vllm_cpu import benchmarks_section as vllm_cpu
from loadtests.real import calibration_render as calibration
from loadtests.sections import headlines, summary
from loadtests.sections.section import Section
from quantize.parity import real_docs as parity_real

BENCHMARKS, ROUTING, PARITY, RELIABILITY = "docs/benchmarks.md", "docs/routing.md", "docs/parity.md", "docs/reliability.md"
DEPLOY = "docs/deploy.md"


def _json(path: Path) -> dict:  # type: ignore[type-arg]
    return json.loads(path.read_text())


SECTIONS: tuple[Section, ...] = (
    Section("bench-overhead", BENCHMARKS, "docs/results/overhead.json",
            lambda: overhead.section(read_overhead()).strip(), headlines.overhead),
    Section("bench-overhead-envoy", DEPLOY, "docs/results/overhead-envoy.json",
            lambda: picker_hop.section(read_overhead(picker_hop.RESULTS))),
    Section("shadow-sampling", BENCHMARKS, "docs/results/shadow-sampling.json",
            lambda: shadow.docs_section(_json(shadow.RESULTS))),
    Section("bench-sim", BENCHMARKS, "docs/results/bench-sim.json", lambda: sim_bench.render(_json(sim_bench.RESULTS))),
    Section("h100-fidelity", BENCHMARKS, "docs/results/h100-fidelity.json",
            lambda: h100_fidelity.docs_section(_json(h100_fidelity.RESULTS)).rstrip(), headlines.fidelity),
    Section("bench-slo", BENCHMARKS, "docs/results/bench-slo/*.json", lambda: slo.render(slo.load())),
    Section("vllm-cpu-measured", BENCHMARKS, "serving/sim/vllm_cpu_measurements.json",
            lambda: vllm_cpu.section(_json(vllm_cpu.MEASUREMENTS))),
    Section("replay-heldout", BENCHMARKS, "docs/results/replay/*.json",
            lambda: replay.render(replay.load())),
    Section("knee-sweep", BENCHMARKS, "docs/results/knee/*.json", lambda: knee_sweep.render(knee_sweep.load()),
            headlines.knee_sweep),
    Section("pd-sweep", ROUTING, "docs/results/pd/*.json", lambda: pd_render.render(pd_render.load())),
    Section("chunk-sweep", ROUTING, "docs/results/chunk/*.json and docs/results/pd/*.json",
            lambda: chunk_render.render(chunk_render.load(), chunk_render.diagnoses(), chunk_render.tuning())),
    Section("knee-diagnosis", ROUTING, "docs/results/knee/diagnosis-*.json",
            lambda: knee_diagnosis.render(knee_diagnosis.load())),
    Section("capacity", BENCHMARKS, "docs/results/capacity/*.json", lambda: capacity.render(capacity_plans.load()),
            lambda: headlines.capacity(capacity_plans.load())),
    Section("capacity-layouts", BENCHMARKS, "docs/results/capacity/layouts/*.json",
            lambda: capacity_layouts.render(capacity_layouts.load()),
            lambda: headlines.capacity_layouts(capacity_layouts.load())),
    Section("capacity-day", BENCHMARKS, "docs/results/capacity/day/*.json",
            lambda: capacity_day.render(capacity_day.load()), lambda: headlines.capacity_day(capacity_day.load())),
    Section("capacity-day-curve", BENCHMARKS, "docs/results/capacity/day-curve/*.json and its tuning/*.json",
            lambda: capacity_day_curve.render(capacity_day_curve.load(), capacity_day_curve.load_tuning()),
            lambda: headlines.capacity_day_curve(capacity_day_curve.load())),
    Section("bench-variants", BENCHMARKS, "docs/results/bench-variants.json",
            lambda: variants.docs_section(_json(variants.RESULTS)), headlines.variants),
    Section("bench-variants-classes", BENCHMARKS, f"docs/results/{variants.CLASS_RESULTS}", variants.classes_section),
    Section("bench-router", BENCHMARKS, "docs/results/router-bench.json",
            lambda: router_cost.docs_section(_json(router_cost.RESULTS))),
    Section("bench-escalation", BENCHMARKS, "docs/results/escalation/",
            lambda: escalation.render(_json(escalation.RESULTS))),
    Section("prompt-cache", BENCHMARKS, "docs/results", prompt_cache.current,
            headlines.prompt_cache),
    Section("loadgens", BENCHMARKS, "docs/results/loadgens.json", lambda: loadgens.section(_json(loadgens.RESULTS)).strip()),
    Section("length-quantile", ROUTING, "docs/results/length-quantile",
            lambda: length_quantile.render(length_quantile.load())),
    Section("unnamed-tasks", ROUTING, "docs/results/unnamed/*.json",
            lambda: unnamed_tasks.render(unnamed_tasks.load())),
    Section("task-detector", ROUTING, "docs/results/task-detector.json",
            lambda: task_detector.render(_json(task_detector.RESULTS))),
    Section("task-detector-latency", ROUTING, "docs/results/task-detector-latency.json",
            lambda: detector_latency.render(_json(detector_latency.RESULTS))),
    Section("detector-cpu-cost", ROUTING, "docs/results/detector-cpu-cost.json",
            lambda: detector_twin.render(_json(detector_twin.RESULTS))),
    Section("task-detector-by-source", ROUTING, "docs/results/task-detector-by-source.json", lambda: task_detector.render_by_source(_json(task_detector.BY_SOURCE_RESULTS))),  # noqa: E501
    Section("task-detector-ceiling", ROUTING, "docs/results/task-detector-ceiling.json",
            lambda: detector_ceiling.render(_json(detector_ceiling.RESULTS))),
    Section("calibration-real", ROUTING, "docs/results/calibration-*.json",
            lambda: calibration.render(calibration.load())),
    Section("soak", RELIABILITY, "docs/results/soak-*.json", lambda: soak.render(soak.load()).strip()),
    Section("parity-real-offline", PARITY, "docs/parity-real",
            lambda: parity_real.render_offline(parity_real.offline_reports())),
    Section("parity-real-online", PARITY, "docs/parity-real",
            lambda: parity_real.render_online(parity_real.online_runs())),
)

# The first screen of docs/benchmarks.md: each area's headline, from the sections above.
SUMMARY = Section("summary", BENCHMARKS, "the headlines of the sections below", lambda: summary.render(SECTIONS))
ALL: tuple[Section, ...] = (SUMMARY, *SECTIONS)


def section(name: str) -> Section:
    """The registered section called ``name``."""
    return next(s for s in ALL if s.name == name)
