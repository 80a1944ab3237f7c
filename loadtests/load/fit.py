"""Requests that fit the model under test: its context window read from the gateway's
``/v1/models`` (vLLM's ``max_model_len``), and a tally of the trace entries scaled down to fit.

Trace prompts run to 16k tokens and more; the embedded default's model takes 2,048. A load test
that sent them as traced would measure 400s (``context_length_exceeded``), not the gateway. So
every drawn request is clipped (``traces.clip_lengths``: the answer to at most half the window,
the prompt to the rest) and counted, and the run says how many were scaled.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

import requests

from gateway.fleet.workload.traces import clip_lengths

# When the gateway does not say (a gateway without max_model_len in its model cards).
FALLBACK_CONTEXT = 32768


class ContextUnknown(RuntimeError):
    """The gateway could not be asked, or named no such model."""


def context_from_models(listing: Mapping[str, Any], model: str) -> int | None:
    """The ``max_model_len`` of ``model`` in a ``/v1/models`` answer; None when its card has none."""
    for card in listing.get("data", []):
        if card.get("id") == model:
            value = card.get("max_model_len")
            return int(value) if value else None
    known = ", ".join(str(card.get("id")) for card in listing.get("data", []))
    raise ContextUnknown(f"the gateway serves no model '{model}' (it serves: {known or 'none'})")


def fetch_context(host: str, model: str, api_key: str, timeout_s: float = 10.0) -> int | None:
    """``model``'s context window as the gateway at ``host`` reports it."""
    url = f"{host.rstrip('/')}/v1/models"
    try:
        response = requests.get(url, headers={"authorization": f"Bearer {api_key}"}, timeout=timeout_s)
        response.raise_for_status()
        listing = response.json()
    except (requests.RequestException, ValueError) as exc:
        raise ContextUnknown(f"GET {url}: {exc}") from exc
    return context_from_models(listing, model)


@dataclass
class FitTally:
    """Requests drawn per task and how many of them were scaled down to fit ``max_context``."""

    max_context: int
    drawn: Counter[str] = field(default_factory=Counter)
    scaled: Counter[str] = field(default_factory=Counter)

    def fit(self, task: str, input_tokens: int, output_tokens: int) -> tuple[int, int]:
        """The request's lengths clipped to the window, counted."""
        fitted = clip_lengths(input_tokens, output_tokens, self.max_context)
        self.drawn[task] += 1
        if fitted != (input_tokens, output_tokens):
            self.scaled[task] += 1
        return fitted

    def report(self, what: str) -> str:
        """One line: how many of the drawn requests were scaled, by task."""
        total, scaled = sum(self.drawn.values()), sum(self.scaled.values())
        by_task = ", ".join(f"{task} {self.scaled[task]}/{n}" for task, n in sorted(self.drawn.items()))
        return (f"duet: {what}: {scaled} of {total} trace entries scaled down to fit the "
                f"{self.max_context:,}-token context ({by_task or 'none drawn'}); none skipped")
