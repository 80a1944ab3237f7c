"""What a team's own labels buy: leave-one-source-out where the team of the held-out source has
labelled ``k`` of its requests (``duet detect train --data``), measured on the rest of them.

A source nobody trained on is the zero-label case (``blend.leave_one_out``). A team that labels
some of its traffic adds it to training as one more source, judged and fitted like the others
(``train_blend.blend_corpus``'s ``added``): here, for each held-out source, ``k`` of its requests
drawn at random (at most half of it) replace it in training and among the sources the abstention
is chosen on, and the source is scored on the requests not drawn. So the number is what the
shipped recipe makes of ``k`` labels of traffic shaped like the rest of the team's, never of the
requests it is scored on."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np

from gateway.detect.training.blend import TASKS, Group, choose_nested, groups, top1
from gateway.detect.training.by_source import score
from gateway.detect.training.evaluate import FAST_ALLOWS
from gateway.detect.training.train_blend import BlendCorpus


def drawn(n: int, k: int, seed: int) -> np.ndarray:
    """The indices of the ``k`` requests (at most half of ``n``) a team labels, at random."""
    return np.sort(np.random.default_rng(seed).choice(n, size=min(k, n // 2), replace=False))


def with_labels(judged: dict[str, np.ndarray], labels: dict[str, list[str]], training: list[Group],
                vector_slice: slice, held: str, picked: np.ndarray) -> tuple[dict[str, np.ndarray],
                                                                         dict[str, list[str]], list[Group]]:
    """The corpus as a team with ``held``'s requests ``picked`` labelled has it: those requests
    its only rows of ``held``, in training and judged, each (task, ``held``) group weighted as
    the whole source's group was."""
    rows, tasks = judged[held][picked], [labels[held][k] for k in picked]
    per_task = {t: len({(g.task, g.source) for g in training if g.task == t}) for t in TASKS}
    added = groups(rows, tasks, [held] * len(tasks), vector_slice, per_task)
    return ({**judged, held: rows}, {**labels, held: tasks},
            [g for g in training if g.source != held] + added)


def leave_one_out_with_labels(data: BlendCorpus, k: int, seed: int = 0, fast_allows: frozenset[str] = FAST_ALLOWS,
                              log: Callable[[str], None] = print) -> dict[str, dict[str, Any]]:
    """Per judged source of ``data``: ``k`` of its requests labelled and trained on
    (``with_labels``), the abstention chosen nested on every source's out-of-fold answers (its
    labelled ones too), scored on its requests not labelled."""
    judged, labels, training, vector_slice = data.judged, data.labels, data.training, data.features.vector_slice
    out: dict[str, dict[str, Any]] = {}
    for held in sorted(judged):
        n = len(labels[held])
        picked = drawn(n, k, seed)
        rest = np.setdiff1d(np.arange(n), picked)
        team_judged, team_labels, team_training = with_labels(judged, labels, training, vector_slice, held, picked)
        chosen = choose_nested(team_judged, team_labels, team_training, vector_slice, None, fast_allows)
        rule, fitted = chosen.rule, chosen.fitted
        scored = [labels[held][j] for j in rest]
        found = list(zip(scored, rule.detections(fitted, judged[held][rest]), strict=True))
        out[held] = {"labelled": len(picked), "threshold": rule.threshold, "floor": rule.floor,
                     "familiarity": round(rule.familiarity, 4), "chosen_on_others": chosen.report,
                     **score(found, rule.threshold, rule.floor, fast_allows),
                     "top1": round(top1(scored, fitted.probabilities(judged[held][rest])), 4)}
        log(f"blend with {len(picked)} labels of {held}: threshold {rule.threshold} floor {rule.floor} "
            f"(worst leak chosen on {chosen.report['worst_leak']}); on the rest leak {out[held]['confident_leak']} "
            f"top-1 {out[held]['top1']}")
    return out
