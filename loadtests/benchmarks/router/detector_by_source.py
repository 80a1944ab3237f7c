"""The task detector judged source by source (leave-one-source-out); writes
docs/results/task-detector-by-source.json.

    .venv/bin/python -m loadtests.benchmarks.router.detector_by_source [--recipe current] [--recipe sources] [--keep]

``--keep`` keeps the recipes already in ``--out`` that this run does not re-run, each with the command
that made it (``commands``); without it the file holds this run's recipes only.

For each public source (the three in ``../shared/prompts`` and those ``make detector-data``
fetches, ``gateway.detect.training.data.sources``), a detector trained without it is measured on all
of it, at the threshold and floor its own training chose on its validation splits
(``gateway.detect.training.by_source`` defines the measures and goals). Recipes:
- ``current``: the shipped recipe (the three public sets and the templates). A source it never
  trained on (every fetched one) is measured with the shipped model as it is; GSM8K, HumanEval and
  the Vicuna bench each with the recipe retrained without that set.
- ``sources``: the same features and fit, with the fetched sources' items split by hash like the
  public sets' (60% train, 15% validation, 25% unused) added, retrained once per held-out source.
- ``current-nested``: the shipped model, with its threshold, floor and a cut on its familiarity
  (the share of a request's words it has weights for) chosen nested on the other sources.
- ``blend``: words hashed, distilled static vectors (``make detector-vectors``) and shape, a ridge
  fit weighting every source alike, abstention by confidence and familiarity chosen nested on the
  other sources (``gateway.detect.training.blend``).
- ``blend-team-K``: ``blend``, where each held-out source's team labelled K of its requests at
  random (at most half) and trained on them (``duet detect train --data``); scored on the rest
  (``gateway.detect.training.team_labels``): what a team's own labels buy."""

from __future__ import annotations

import argparse
import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np

from gateway.detect.training import PROMPTS, corpus
from gateway.detect.training.blend import TASKS as BLEND_TASKS
from gateway.detect.training.blend import Answers, choose, leave_one_out
from gateway.detect.training.by_source import GOALS, judge, score, worst
from gateway.detect.training.corpus import Sample, public_samples, split_of
from gateway.detect.training.data.sources import SOURCES, Labelled, load_all
from gateway.detect.training.evaluate import FAST_ALLOWS
from gateway.detect.training.static_embedding import EmbeddingFeatures, WordVectors, shape_names, train_embedding
from gateway.detect.training.team_labels import leave_one_out_with_labels
from gateway.detect.training.train import train
from gateway.detect.training.train_blend import blend_corpus
from gateway.flow import TaskDetector

RESULTS = Path(__file__).resolve().parents[3] / "docs" / "results" / "task-detector-by-source.json"
SHARED = ("gsm8k", "humaneval", "vicuna")
TEAM_LABELS = (25, 100)  # labels a team might write in an afternoon, and in a few days


def _family(source: str) -> str:
    return source.split(":")[0]


def _measure(detector: TaskDetector, items: list[Any]) -> dict[str, Any]:
    threshold, floor = float(detector.meta["threshold"]), float(detector.meta["floor"])
    return {"threshold": threshold, "floor": floor, **score(judge(detector.detect_messages, items), threshold, floor)}


def _as_samples(items: list[Labelled]) -> list[Sample]:
    return [Sample(i.id, i.task, i.source, i.messages, split_of(i.id)) for i in items]


def current(prompts: Path, fetched: list[Labelled]) -> dict[str, Any]:
    samples, shipped = corpus(prompts), TaskDetector.builtin()
    out = {name: _measure(shipped, [i for i in fetched if i.source == name]) for name in SOURCES}
    for name in SHARED:
        detector, _, _ = train([s for s in samples if _family(s.source) != name])
        print(f"current without {name}: threshold {detector.meta['threshold']}", flush=True)
        out[name] = _measure(detector, [s for s in _public(prompts) if _family(s.source) == name])
    return out


def with_sources(prompts: Path, fetched: list[Labelled]) -> dict[str, Any]:
    samples = [*corpus(prompts), *_as_samples(fetched)]
    out = {}
    for name in (*SHARED, *SOURCES):
        detector, _, _ = train([s for s in samples if _family(s.source) != name])
        print(f"sources without {name}: threshold {detector.meta['threshold']}", flush=True)
        held = [s for s in _public(prompts) if _family(s.source) == name] if name in SHARED else \
            [i for i in fetched if i.source == name]
        out[name] = _measure(detector, held)
    return out


def embedding(prompts: Path, fetched: list[Labelled]) -> dict[str, Any]:
    """As ``sources``, with the static-embedding features (``gateway.detect.training.static_embedding``)."""
    samples = [*corpus(prompts), *_as_samples(fetched)]
    public = _public(prompts)
    features = EmbeddingFeatures(WordVectors(), shape_names(samples))
    rows = {s.id: features.of(s.messages) for s in [*samples, *public]}
    out = {}
    for name in (*SHARED, *SOURCES):
        detector = train_embedding([s for s in samples if _family(s.source) != name], features, rows)
        print(f"embedding without {name}: threshold {detector.meta['threshold']}", flush=True)
        held = [s for s in public if _family(s.source) == name] if name in SHARED else \
            [i for i in fetched if i.source == name]
        out[name] = _measure(detector, held)  # type: ignore[arg-type]
    return out


def blend(prompts: Path, fetched: list[Labelled]) -> dict[str, Any]:
    """Dense features, words hashed and distilled vectors, fitted per held-out source by ridge with
    every source weighted alike; abstention chosen nested on the other sources
    (``gateway.detect.training.blend``). Trained on the templates and every other source whole: the
    shipped blend detector's recipe (``gateway.detect.training.train_blend``) with its source held out."""
    del fetched  # blend_corpus loads the fetched sources itself
    data = blend_corpus(prompts)
    return leave_one_out(data.judged, data.labels, data.training, data.features.vector_slice,
                         log=lambda line: print(line, flush=True))


def blend_team(k: int) -> Callable[[Path, list[Labelled]], dict[str, Any]]:
    """``blend`` where the team of each held-out source labelled ``k`` of its requests
    (``gateway.detect.training.team_labels``): scored on the requests not labelled."""
    def recipe(prompts: Path, fetched: list[Labelled]) -> dict[str, Any]:
        del fetched  # blend_corpus loads the fetched sources itself
        return leave_one_out_with_labels(blend_corpus(prompts), k, log=lambda line: print(line, flush=True))
    return recipe


def current_nested(prompts: Path, fetched: list[Labelled]) -> dict[str, Any]:
    """The shipped words model (GSM8K, HumanEval and Vicuna each retrained without that set, as in
    ``current``), with its threshold, floor and a familiarity cut (``TaskDetector.familiarity``:
    the share of the user turn's words it has weights for) chosen nested on the other sources'
    answers (``gateway.detect.training.blend.choose``). Every fetched source is out of fold for the
    shipped model already: it never trained on any."""
    samples, shipped, public = corpus(prompts), TaskDetector.builtin(), _public(prompts)
    held_items: dict[str, list[Any]] = {name: [i for i in fetched if i.source == name] for name in SOURCES}
    models = {name: shipped for name in SOURCES}
    for name in SHARED:
        models[name], _, _ = train([s for s in samples if _family(s.source) != name])
        held_items[name] = [s for s in public if _family(s.source) == name]
    answers = {}
    for name, items in held_items.items():
        model = models[name]
        found = judge(model.detect_messages, items)
        probabilities = np.array([[d.probabilities[t] for t in BLEND_TASKS] for _, d in found])
        familiar = np.array([model.familiarity(i.messages) for i in items])
        answers[name] = ([label for label, _ in found], probabilities, familiar)
    trained = np.array([shipped.familiarity(s.messages) for s in samples if s.split == "train"])
    out = {}
    for held, (labels, probabilities, familiar) in answers.items():
        others = [Answers.of(*answers[name], FAST_ALLOWS) for name in answers if name != held]
        rule, chosen = choose(others, trained)
        found = list(zip(labels, rule.detections_of(probabilities, familiar), strict=True))
        out[held] = {"threshold": rule.threshold, "floor": rule.floor, "familiarity": round(rule.familiarity, 4),
                     "chosen_on_others": chosen, **score(found, rule.threshold, rule.floor)}
        print(f"current-nested without {held}: {rule} leak {out[held]['confident_leak']}", flush=True)
    return out


def mt_bench_turns(fetched: list[Labelled]) -> dict[str, Any]:
    """The shipped model on MT-bench's first turns and, apart, its second turns (each after its
    first): what reading a follow-up with its context does."""
    items = [i for i in fetched if i.source == "mt-bench"]
    return {f"turn {turn}": _measure(TaskDetector.builtin(), [i for i in items if i.id.endswith(f"/{turn}")])
            for turn in ("1", "2")}


def _public(prompts: Path) -> list[Sample]:
    return list(public_samples(prompts))


RECIPES = {"current": current, "current-nested": current_nested, "sources": with_sources, "embedding": embedding,
           "blend": blend, **{f"blend-team-{k}": blend_team(k) for k in TEAM_LABELS}}


def run(prompts: Path, recipes: list[str]) -> dict[str, Any]:
    fetched = load_all()
    out: dict[str, Any] = {"command": "python -m loadtests.benchmarks.router.detector_by_source "
                                      + " ".join(f"--recipe {r}" for r in recipes),
                           "goals": {g: f"{d} {b}" for g, (d, b) in GOALS.items()}, "recipes": {}}
    if "current" in recipes:
        out["mt_bench_turns"] = mt_bench_turns(fetched)
    for recipe in recipes:
        by_source = RECIPES[recipe](prompts, fetched)
        out["recipes"][recipe] = {"by_source": by_source, "worst": worst(by_source)}
    return out


def kept(results: dict[str, Any], previous: dict[str, Any]) -> dict[str, Any]:
    """``results`` with the recipes of ``previous`` it did not re-run, as they were and in their order,
    and which command made each recipe (``commands``); MT-bench's turns kept unless ``current`` re-ran."""
    commands = {r: previous.get("commands", {}).get(r, previous["command"]) for r in previous["recipes"]}
    commands |= {r: results["command"] for r in results["recipes"]}
    # Spread in this order, the previous file's MT-bench turns stay unless this run has its own.
    return {**previous, **results, "recipes": previous["recipes"] | results["recipes"], "commands": commands}


def _cell(value: float | None) -> str:
    return "–" if value is None else f"{value:.3f}"


def render(results: dict[str, Any]) -> str:
    """Per recipe: one row per held-out source, then the worst source per goal."""
    lines: list[str] = []
    for recipe, report in results["recipes"].items():
        labelled = {r["labelled"] for r in report["by_source"].values() if "labelled" in r}
        how = (f"each source measured on its requests not labelled, by a detector trained with "
               f"{max(labelled)} of them labelled (at most half)" if labelled else
               "each source measured by a detector trained without it")
        lines += [f"**{recipe}** ({how}):", "",
                  "| held-out source | n by task | confident leak | reasoning kept | coding recall | extraction recall "
                  "| agent recall | chat to fast | abstained |", "|---|---|---|---|---|---|---|---|---|"]
        for name, r in report["by_source"].items():
            n = ", ".join(f"{task} {count}" for task, count in sorted(r["n"].items()))
            lines.append(f"| {name} | {n} | " + " | ".join(_cell(r[k]) for k in (
                "confident_leak", "reasoning_kept", "coding_recall", "extraction_recall", "agent_recall", "chat_fast",
                "abstained")) + " |")
        lines += ["", "| goal (worst source) | value | source | met |", "|---|---|---|---|"]
        lines += [f"| {goal} {w['goal']} | {w['value']:.3f} | {w['source']} | {'yes' if w['met'] else 'no'} |"
                  for goal, w in report["worst"].items()]
        lines.append("")
    return "\n".join(lines).rstrip()


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--prompts", type=Path, default=PROMPTS)
    parser.add_argument("--recipe", action="append", choices=sorted(RECIPES))
    parser.add_argument("--out", type=Path, default=RESULTS)
    parser.add_argument("--keep", action="store_true", help="keep the recipes in --out this run does not re-run")
    args = parser.parse_args(argv)
    results = run(args.prompts, args.recipe or ["current"])
    if args.keep and args.out.exists():
        results = kept(results, json.loads(args.out.read_text()))
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(results, indent=2) + "\n")
    print(render(results))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
