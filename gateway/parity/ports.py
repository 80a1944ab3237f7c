"""What online parity needs from outside the gateway, as protocols the command shell fills in
(gateway.cli.parity): scoring a pair of answers with the task's verifier (quantize.evals), and
recording a verdict in the config file (as ``duet parity --write-policy`` does). The gateway's
runtime never imports quantize (tests/test_layers.py)."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Protocol


@dataclass(frozen=True, slots=True)
class PairScore:
    """Each side's score in [0, 1], how it was measured (``agreement``, ``tool-call``, ``sandbox``,
    ``number (first)``...) and a detail that holds no prompt or answer text."""

    standard: float
    candidate: float
    measure: str
    detail: str = ""

    @property
    def loss(self) -> float:
        """The candidate's loss on this pair, in [-1, 1]."""
        return self.standard - self.candidate


class PairJudge(Protocol):
    """Scores the standard's and the candidate's chat completions to one request (an OpenAI chat
    body) of task type ``task``. Synchronous and possibly slow (a sandbox run): called off the
    event loop."""

    def __call__(self, task: str, request: Mapping[str, Any], standard: Mapping[str, Any],
                 candidate: Mapping[str, Any]) -> PairScore: ...


@dataclass(frozen=True, slots=True)
class Revision:
    """A verdict to record: ``variant`` (``model:variant``) loses (``allowed`` False) or gains
    ``task``; ``evidence`` is the test's record (parameters, pairs, wealths, recent pair hashes)."""

    variant: str
    task: str
    allowed: bool
    evidence: Mapping[str, Any]


class PolicyRecorder(Protocol):
    """Writes ``revision`` into the config file at ``config_path`` (atomically, only the variant's
    policy lines) and returns the ``allowed_tasks_source`` it wrote. Raises on failure."""

    def __call__(self, config_path: str, revision: Revision) -> str: ...


@dataclass(frozen=True, slots=True)
class ParityTools:
    judge: PairJudge
    record: PolicyRecorder
