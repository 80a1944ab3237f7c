"""Task detection: which task type a request is, from its messages, with a confidence
(``TaskDetector.detect_messages`` -> ``Detection``) and the tasks it may be when unsure
(``Detection.plausible``). Pure and synchronous; the model is package data
(``task_detector.json``), trained by ``python -m gateway.detect.training.train``
(``gateway.detect.training``, which nothing here imports)."""

from gateway.detect.model import Detection, Detector, TaskDetector

__all__ = ["Detection", "Detector", "TaskDetector"]
