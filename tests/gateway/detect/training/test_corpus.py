"""The corpus's splits: what trains, what tunes and what is held out stay apart, and the held-out
templates are the ones the detector has always been judged on."""

from __future__ import annotations

import hashlib
import json

from gateway.detect.training.corpus import HELD_OUT_TEMPLATES, VALIDATION_TEMPLATES, synthetic_samples, templates

SAMPLES = list(synthetic_samples())


def test_pinned_templates_exist_and_each_is_kept_for_one_use_only():
    names = {task: {t.__name__ for t in chosen} for task, chosen in templates().items()}
    for task, held_out in HELD_OUT_TEMPLATES.items():
        assert held_out in names[task] and held_out not in VALIDATION_TEMPLATES[task]
        assert set(VALIDATION_TEMPLATES[task]) <= names[task]
        assert names[task] - {held_out, *VALIDATION_TEMPLATES[task]}  # something is left to train on


def test_a_kept_template_never_reaches_training_and_other_templates_split_by_seed():
    splits: dict[str, set[str]] = {}
    for sample in SAMPLES:
        splits.setdefault(sample.source.removeprefix("synth:"), set()).add(sample.split)
    for name in HELD_OUT_TEMPLATES.values():
        assert splits[name] == {"test-template"}
    for name in (n for names in VALIDATION_TEMPLATES.values() for n in names):
        assert splits[name] == {"validation-template"}
    trained = [name for name, seen in splits.items() if "train" in seen]
    assert trained and all(splits[name] == {"train", "validation", "test"} for name in trained)


def test_the_held_out_templates_requests_are_those_the_detector_was_first_judged_on():
    """Their samples, byte for byte, as when the first model was measured (docs/results/task-detector.json
    since): editing a held-out template, or its seeds, changes what 'held out' means and fails here."""
    held = sorted((s.id, s.task, json.dumps(s.messages)) for s in SAMPLES if s.split == "test-template")
    assert len(held) == 830
    assert hashlib.sha256(json.dumps(held).encode()).hexdigest()[:16] == "80464ad8d0c4c239"


def test_the_templates_written_after_the_first_held_out_reading_train_or_tune_but_are_never_held_out():
    splits: dict[str, set[str]] = {}
    for sample in SAMPLES:
        splits.setdefault(sample.source.removeprefix("synth:"), set()).add(sample.split)
    for name in ("chat_estimate", "chat_what_if", "chat_common_sense", "reason_everyday", "extract_instructed",
                 "extract_pipeline"):
        assert splits[name] == {"train", "validation", "test"}
    for name in ("chat_ballpark", "chat_wonder", "reason_household", "extract_form_fill"):
        assert splits[name] == {"validation-template"}


def test_the_validation_templates_own_documents_never_reach_training():
    """Receipts, shipping notices and job adverts (``documents.receipt``, ``shipping``, ``job_post``)
    are read by ``extract_form_fill`` only."""
    marks = ("\nCARD ****", " is on its way.\nCarrier: ", "Apply by ")
    trained = [m["content"] for s in SAMPLES if s.split == "train" for m in s.messages if isinstance(m.get("content"), str)]
    assert not [text for text in trained if any(mark in text for mark in marks)]
