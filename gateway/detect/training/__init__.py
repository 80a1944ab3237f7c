"""The task detector's training room: the labelled requests (public sets and synthesised ones), the
fit and the evaluation (``python -m gateway.detect.training.train``). The serving path
(``gateway.detect``'s model and features, and everything the gateway imports) never imports this
package; benchmarks and the command shell do."""

from gateway.detect.training.corpus import PROMPTS, SPLIT_USES, Sample, corpus
from gateway.detect.training.evaluate import Judged, confusions, evaluate, judge_all

__all__ = ["PROMPTS", "SPLIT_USES", "Judged", "Sample", "confusions", "corpus", "evaluate", "judge_all"]
