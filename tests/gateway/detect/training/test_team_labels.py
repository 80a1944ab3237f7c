"""A team's own labels in the leave-one-source-out: which requests it labels, that they replace
their source in training weighted as it was, and that the source is scored on the rest only."""

from __future__ import annotations

import numpy as np

from gateway.detect.training.blend import Group, groups
from gateway.detect.training.team_labels import drawn, leave_one_out_with_labels, with_labels
from gateway.detect.training.train_blend import BlendCorpus

from .test_blend import _toy


def test_a_team_labels_at_most_half_of_its_requests_drawn_at_random_and_reproducibly() -> None:
    picked = drawn(100, 25, seed=0)
    assert len(picked) == len(set(picked.tolist())) == 25 and list(picked) == sorted(picked)
    assert np.array_equal(picked, drawn(100, 25, seed=0)) and not np.array_equal(picked, drawn(100, 25, seed=1))
    assert len(drawn(30, 100, seed=0)) == 15  # never more than half: the rest is what is scored


def _corpus() -> tuple[dict[str, np.ndarray], dict[str, list[str]], list[Group], slice]:
    rows, tasks, sources, features = _toy()
    trained = groups(rows, tasks, sources, features.vector_slice)
    judged = {name: rows[[k for k, s in enumerate(sources) if s == name]] for name in ("a", "b", "c")}
    labels = {name: [t for t, s in zip(tasks, sources, strict=True) if s == name] for name in judged}
    return judged, labels, trained, features.vector_slice


def test_the_labelled_requests_replace_their_source_weighted_as_the_whole_source_was() -> None:
    judged, labels, trained, vector_slice = _corpus()
    picked = drawn(len(labels["a"]), 20, seed=3)
    team_judged, team_labels, team_training = with_labels(judged, labels, trained, vector_slice, "a", picked)
    assert len(team_judged["a"]) == len(team_labels["a"]) == 20 and team_judged["b"] is judged["b"]
    added = [g for g in team_training if g.source == "a"]
    assert sum(len(g.rows) for g in added) == 20
    before = {(g.task, g.source): float(g.target[-1].sum()) for g in trained}  # the constant column: weight x n
    for g in added:
        assert abs(float(g.target[-1].sum()) - before[(g.task, "a")]) < 1e-9
    assert [g for g in team_training if g.source != "a"] == [g for g in trained if g.source != "a"]


def test_each_source_is_scored_on_its_requests_not_labelled() -> None:
    rows, tasks, sources, features = _toy()
    judged, labels, trained, _ = _corpus()
    data = BlendCorpus(features, [], trained, judged, labels)
    out = leave_one_out_with_labels(data, k=6, log=lambda _: None)
    for name, report in out.items():
        assert report["labelled"] == min(6, len(labels[name]) // 2)
        assert sum(report["n"].values()) == len(labels[name]) - report["labelled"]
