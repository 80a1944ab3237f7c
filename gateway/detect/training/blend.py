"""A detector over what a request's words mean as well as which words it uses, judged with its
abstention chosen on sources it was not fitted on (leave-one-source-out's ``blend`` recipe).

Features: one dense row per request (``gateway.detect.blend_features``: shape, hashed words, the
static vectors of four spans, a constant), the same row the served detector reads
(``gateway.detect.blend_model``, written by ``gateway.detect.training.train_blend``).

The fit is ridge regression onto one-hot tasks (its penalty chosen nested, ``RIDGES``), closed
form, every source of a task weighted alike (GSM8K's 8,792 questions count as much as BBH's 63)
and every task alike: a per-source Gram matrix is summed, so leaving a source out costs a solve
per penalty, not a pass over the data. Scores become probabilities by a softmax at a temperature
chosen nested with the abstention (``TEMPERATURES``): ridge scores are not calibrated, and how
sharp the probabilities are decides what a threshold and a floor can tell apart.

Abstention has two triggers: low confidence (``threshold``), and an *unfamiliar* request
(``familiarity``: cosine of its vectors to the nearest centroid of a (task, source) group it
was trained on). Both, with the floor, are chosen **nested**: for a held-out source, on the other
judged sources' out-of-fold answers (``FOLDS`` groups of sources, each answered by a model fitted
without it and without the held-out source), the pair that keeps every one of those sources'
confident leak within ``LEAK_GOAL`` and sends the most chat fast; never on the source scored."""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace
from typing import Any

import numpy as np

from gateway.detect.features import message_parts
from gateway.detect.model import Detection
from gateway.detect.training.by_source import score
from gateway.detect.training.evaluate import FAST_ALLOWS

TASKS = ("chat", "coding", "reasoning", "extraction", "long-context", "agent")
TEMPERATURE = 6.0  # the first recipe's fixed value, and the default
TEMPERATURES = (3.0, 6.0, 12.0, 24.0)
# The ridge penalties tried, relative to the mean diagonal of the summed Gram matrix (so they mean
# the same whatever the rows' scale); one is chosen per held-out source, nested like the abstention:
# the best mean top-1 accuracy over the other sources' out-of-fold answers.
RIDGES = (0.01, 0.03, 0.1, 0.3)
FOLDS = 4
LEAK_GOAL = 0.02
THRESHOLDS = tuple(np.round(np.arange(0.2, 1.0, 0.05), 2))
FLOORS = (0.01, 0.02, 0.05, 0.1, 0.2, 0.3)
# Familiarity cut-offs as quantiles of the training requests' own familiarity: 0 never abstains.
FAMILIARITY_QUANTILES = (0.0, 0.01, 0.05, 0.1, 0.2)


# A shape feature is a column when this many requests have it: the first word of the user turn is
# one, and thousands of first words seen once would each cost a column of every Gram matrix.
MIN_SHAPE_REQUESTS = 10


def shape_names(requests: Sequence[list[dict[str, Any]]]) -> list[str]:
    seen = Counter(name for messages in requests for name in set(message_parts(messages).shape))
    return sorted(name for name, n in seen.items() if n >= MIN_SHAPE_REQUESTS)


@dataclass(frozen=True)
class Group:
    """One (task, source) group of training requests: its rows, their Gram matrix and targets
    (each row weighted so that every group of a task, and every task, weighs alike), its centroid."""

    task: str
    source: str
    rows: np.ndarray
    gram: np.ndarray
    target: np.ndarray
    centroid: np.ndarray


def groups(rows: np.ndarray, tasks: Sequence[str], sources: Sequence[str], vector_slice: slice,
           per_task: dict[str, int] | None = None) -> list[Group]:
    """The (task, source) groups of ``rows``; ``per_task``: how many groups each task has in the
    whole training set, when these rows are only part of it (a group replacing another is then
    weighted as the one it replaces); default: the groups here."""
    keys = sorted(set(zip(tasks, sources, strict=True)))
    per_task = per_task or {t: sum(1 for task, _ in keys if task == t) for t in TASKS}
    out = []
    for task, source in keys:
        mask = np.array([t == task and s == source for t, s in zip(tasks, sources, strict=True)])
        x = rows[mask].astype(np.float64)
        weight = 1.0 / (len(TASKS) * per_task[task] * len(x))
        y = np.zeros((len(x), len(TASKS)))
        y[:, TASKS.index(task)] = 1.0
        centroid = x[:, vector_slice].mean(axis=0)
        out.append(Group(task, source, rows[mask], (weight * (x.T @ x)).astype(np.float32), weight * (x.T @ y),
                         centroid / max(float(np.linalg.norm(centroid)), 1e-9)))
    return out


@dataclass(frozen=True)
class Fitted:
    weights: np.ndarray
    centroids: np.ndarray
    vector_slice: slice
    temperature: float = TEMPERATURE

    def probabilities(self, rows: np.ndarray) -> np.ndarray:
        scores = self.temperature * (rows.astype(np.float64) @ self.weights)
        p = np.exp(scores - scores.max(axis=1, keepdims=True))
        out: np.ndarray = p / p.sum(axis=1, keepdims=True)
        return out

    def familiarity(self, rows: np.ndarray) -> np.ndarray:
        v = rows[:, self.vector_slice].astype(np.float64)
        v /= np.maximum(np.linalg.norm(v, axis=1, keepdims=True), 1e-9)
        out: np.ndarray = (v @ self.centroids.T).max(axis=1)
        return out


def fit(kept: Sequence[Group], vector_slice: slice, ridges: Sequence[float] = RIDGES[:1]) -> list[Fitted]:
    """One model per ridge penalty in ``ridges``, on the groups ``kept``."""
    gram = np.zeros(kept[0].gram.shape)
    for g in kept:
        gram += g.gram
    target = np.sum([g.target for g in kept], axis=0)
    centroids = np.stack([g.centroid for g in kept])
    scale, diagonal = float(np.trace(gram)) / len(gram), np.diag_indices_from(gram)
    out = []
    for ridge in ridges:
        penalised = gram.copy()
        penalised[diagonal] += ridge * scale
        out.append(Fitted(np.linalg.solve(penalised, target), centroids, vector_slice))
    return out


@dataclass(frozen=True)
class Abstention:
    threshold: float
    floor: float
    familiarity: float

    def detections(self, fitted: Fitted, rows: np.ndarray) -> list[Detection]:
        return self.detections_of(fitted.probabilities(rows), fitted.familiarity(rows))

    def detections_of(self, probabilities: np.ndarray, familiarity: np.ndarray) -> list[Detection]:
        """Per request, the detection; an unfamiliar one's is uniform, so it abstains at any threshold above 1/6."""
        uniform = {t: 1.0 / len(TASKS) for t in TASKS}
        return [Detection(dict(zip(TASKS, map(float, p), strict=True)) if f >= self.familiarity else uniform)
                for p, f in zip(probabilities, familiarity, strict=True)]


@dataclass(frozen=True)
class Answers:
    """One source's out-of-fold answers, reduced to what a rule's measures need."""

    refused: np.ndarray  # per request: its label is a task fast refuses
    chat: np.ndarray  # per request: its label is chat
    confidence: np.ndarray
    refused_top: np.ndarray  # the highest probability among the refused tasks
    familiarity: np.ndarray

    @classmethod
    def of(cls, labels: Sequence[str], probabilities: np.ndarray, familiarity: np.ndarray,
           fast_allows: frozenset[str]) -> Answers:
        refused_columns = [k for k, t in enumerate(TASKS) if t not in fast_allows]
        return cls(np.array([label not in fast_allows for label in labels]), np.array([label == "chat" for label in labels]),
                   probabilities.max(axis=1), probabilities[:, refused_columns].max(axis=1), familiarity)

    def fast(self, rule: Abstention) -> np.ndarray:
        """Per request: no refused task plausible, and not abstained on (``Detection.plausible``)."""
        out: np.ndarray = ((self.confidence >= rule.threshold) & (self.familiarity >= rule.familiarity)
                           & (self.refused_top < rule.floor))
        return out


def choose(answers: Sequence[Answers], training_familiarity: np.ndarray) -> tuple[Abstention, dict[str, Any]]:
    """The abstention keeping every source's confident leak (``answers``: each answered out of
    fold) within ``LEAK_GOAL`` that sends the most chat fast (mean over sources); where none
    does, the one with the lowest worst leak."""
    best: tuple[tuple[float, float], Abstention, dict[str, Any]] | None = None
    for quantile in FAMILIARITY_QUANTILES:
        cut = float(np.quantile(training_familiarity, quantile)) if quantile else -2.0
        for threshold in THRESHOLDS:
            for floor in FLOORS:
                rule = Abstention(float(threshold), floor, cut)
                fast = [a.fast(rule) for a in answers]
                leaks = [float(f[a.refused].mean()) for f, a in zip(fast, answers, strict=True) if a.refused.any()]
                chat = [float(f[a.chat].mean()) for f, a in zip(fast, answers, strict=True) if a.chat.any()]
                worst_leak = max(leaks, default=0.0)
                key = (-max(worst_leak, LEAK_GOAL), float(np.mean(chat)) if chat else 0.0)
                if best is None or key > best[0]:
                    best = (key, rule, {"worst_leak": round(worst_leak, 4), "mean_chat_fast": round(key[1], 4),
                                        "familiarity_quantile": quantile})
    assert best is not None
    return best[1], best[2]


def top1(labels: Sequence[str], probabilities: np.ndarray) -> float:
    """The share of requests whose most probable task is their label, abstention aside."""
    return float(np.mean([TASKS[k] == label for k, label in zip(probabilities.argmax(axis=1), labels, strict=True)]))


@dataclass(frozen=True)
class Chosen:
    """A recipe's choices made on sources' out-of-fold answers: the ridge penalty, the model fitted
    with it on every group kept, and the abstention."""

    ridge: float
    fitted: Fitted
    rule: Abstention
    report: dict[str, Any]


def choose_nested(judged: dict[str, np.ndarray], labels: dict[str, list[str]], training: list[Group],
                  vector_slice: slice, held: str | None = None,
                  fast_allows: frozenset[str] = FAST_ALLOWS) -> Chosen:
    """The ridge, the temperature and the abstention chosen on the judged sources other than ``held`` (every one
    when None), each answered out of fold (``FOLDS`` groups of sources, each by a model fitted
    without it and without ``held``); the model then fitted on every group but ``held``'s."""
    others = [n for n in sorted(judged) if n != held]
    folds = [others[k::FOLDS] for k in range(FOLDS) if others[k::FOLDS]]
    by_ridge: list[list[tuple[str, Fitted]]] = [[] for _ in RIDGES]
    for fold in folds:
        models = fit([g for g in training if g.source != held and g.source not in fold], vector_slice, RIDGES)
        for k, model in enumerate(models):
            by_ridge[k] += [(name, model) for name in fold]
    accuracy = [float(np.mean([top1(labels[name], model.probabilities(judged[name])) for name, model in pairs]))
                for pairs in by_ridge]
    best = int(np.argmax(accuracy))
    fitted = fit([g for g in training if g.source != held], vector_slice, RIDGES[best:best + 1])[0]
    own = np.concatenate([g.rows for g in training if g.source != held])
    familiarity = {name: model.familiarity(judged[name]) for name, model in by_ridge[best]}
    own_familiarity = fitted.familiarity(own)
    chosen: tuple[tuple[float, float], float, Abstention, dict[str, Any]] | None = None
    for temperature in TEMPERATURES:  # the sharpness, chosen with the rule on the same answers
        answers = [Answers.of(labels[name], replace(model, temperature=temperature).probabilities(judged[name]),
                              familiarity[name], fast_allows) for name, model in by_ridge[best]]
        rule, report = choose(answers, own_familiarity)
        key = (-max(report["worst_leak"], LEAK_GOAL), report["mean_chat_fast"])
        if chosen is None or key > chosen[0]:
            chosen = (key, temperature, rule, report)
    assert chosen is not None
    _, temperature, rule, report = chosen
    fitted = replace(fitted, temperature=temperature)
    report["ridge"], report["others_top1"], report["temperature"] = RIDGES[best], round(accuracy[best], 4), temperature
    return Chosen(RIDGES[best], fitted, rule, report)


def leave_one_out(judged: dict[str, np.ndarray], labels: dict[str, list[str]], training: list[Group],
                  vector_slice: slice, fast_allows: frozenset[str] = FAST_ALLOWS,
                  log: Callable[[str], None] = print) -> dict[str, dict[str, Any]]:
    """Per judged source: the model fitted without it, at the abstention chosen nested on the others."""
    out: dict[str, dict[str, Any]] = {}
    for held in sorted(judged):
        chosen = choose_nested(judged, labels, training, vector_slice, held, fast_allows)
        rule, fitted = chosen.rule, chosen.fitted
        found = list(zip(labels[held], rule.detections(fitted, judged[held]), strict=True))
        out[held] = {"threshold": rule.threshold, "floor": rule.floor, "familiarity": round(rule.familiarity, 4),
                     "chosen_on_others": chosen.report, **score(found, rule.threshold, rule.floor, fast_allows),
                     "top1": round(top1(labels[held], fitted.probabilities(judged[held])), 4)}
        log(f"blend without {held}: threshold {rule.threshold} floor {rule.floor} familiarity "
            f"{rule.familiarity:.3f} (others' worst leak {chosen.report['worst_leak']}); here leak "
            f"{out[held]['confident_leak']} top-1 {out[held]['top1']} (ridge {chosen.ridge})")
    return out
