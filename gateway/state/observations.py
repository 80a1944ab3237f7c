"""The gateway's own view of each replica from the requests it finished: time to first token,
time per output token and error rate, as exponentially time-decayed means.

Decay is by elapsed time, not by sample count: a sample's weight halves every ``half_life_s``
seconds, so a replica that was slow a minute ago and fast now reads as fast whatever the request
rate. Samples arriving at the same instant weigh equally (a plain per-sample EWMA with a
time-derived alpha would give the second of two simultaneous samples zero weight).
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from gateway.domain import Prediction
from gateway.outcome import Outcome
from gateway.state.outcomes import OutcomeKind


@dataclass(frozen=True, slots=True)
class DecayingMean:
    """A time-decayed mean: sum(w_i * x_i) / sum(w_i) with w_i = 0.5 ** (age_i / half_life).

    ``total`` and ``weight`` are both decayed to ``at``; their ratio is the mean, and ``weight``
    (in samples) says how much recent evidence backs it.
    """

    total: float = 0.0
    weight: float = 0.0
    at: float = 0.0

    @property
    def value(self) -> float | None:
        """The mean, or None before the first sample."""
        return self.total / self.weight if self.weight > 0 else None

    def add(self, sample: float, now: float, half_life_s: float) -> DecayingMean:
        """This mean with ``sample`` observed at ``now``."""
        # A sample older than ``at`` (clocks of two writers) decays nothing rather than growing.
        decay = 0.5 ** (max(0.0, now - self.at) / half_life_s) if self.weight else 0.0
        return DecayingMean(
            self.total * decay + sample, self.weight * decay + 1.0, max(now, self.at)
        )


@dataclass(frozen=True, slots=True)
class Observations:
    """Per-replica latency and error statistics from finished requests (seconds, fraction)."""

    ttft: DecayingMean = DecayingMean()
    tpot: DecayingMean = DecayingMean()
    errors: DecayingMean = DecayingMean()  # mean of 1 (error) / 0 (success): the error rate
    # Mean log(actual / predicted) of the latency model: its bias on this replica, learned online.
    ttft_log_bias: DecayingMean = DecayingMean()
    tpot_log_bias: DecayingMean = DecayingMean()

    @property
    def ttft_s(self) -> float | None:
        return self.ttft.value

    @property
    def tpot_s(self) -> float | None:
        return self.tpot.value

    @property
    def error_rate(self) -> float:
        """Fraction of recent requests that failed or were refused as overload, in [0, 1]."""
        return self.errors.value or 0.0

    @property
    def ttft_bias(self) -> float:
        """actual / predicted TTFT, geometric mean of recent requests (1 before any)."""
        return math.exp(self.ttft_log_bias.value or 0.0)

    @property
    def tpot_bias(self) -> float:
        return math.exp(self.tpot_log_bias.value or 0.0)


def with_prediction(outcome: Outcome, prediction: Prediction | None, stalled_ms: float = 0.0) -> Outcome:
    """The outcome carrying the latency model's raw prediction, which the store learns its bias on.

    ``stalled_ms``: prefill of prompts the gateway sent to the replica after this request (see
    ``gateway.state.decodes``). The model predicts the plain step, since at decision time those
    prompts did not exist; they are added to the prediction it is judged against, so the bias
    learns the model's error and not the traffic that came later."""
    if prediction is None or prediction.model_ttft_ms is None:
        return outcome
    tpot = None
    if prediction.model_tpot_ms is not None:
        tpot = (prediction.model_tpot_ms + stalled_ms / max(1, outcome.output_tokens - 1)) / 1e3
    # Built field by field: dataclasses.replace reflects over the fields on every call.
    return Outcome(outcome.replica_id, outcome.ok, outcome.status, outcome.ttft_s, outcome.duration_s,
                   outcome.input_tokens, outcome.output_tokens, prediction.model_ttft_ms / 1e3, tpot)


def observe(
    observations: Observations,
    outcome: Outcome,
    kind: OutcomeKind,
    now: float,
    half_life_s: float,
) -> Observations:
    """Fold one finished request into a replica's observations.

    Latencies come from successful requests only (a failure's timing says nothing about speed);
    client errors are ignored entirely.
    """
    if kind is OutcomeKind.CLIENT:
        return observations
    errors = observations.errors.add(0.0 if kind is OutcomeKind.SUCCESS else 1.0, now, half_life_s)
    if kind is not OutcomeKind.SUCCESS:
        return Observations(observations.ttft, observations.tpot, errors, observations.ttft_log_bias, observations.tpot_log_bias)
    ttft, tpot = observations.ttft, observations.tpot
    ttft_bias, tpot_bias = observations.ttft_log_bias, observations.tpot_log_bias
    if outcome.ttft_s is not None:
        ttft = ttft.add(outcome.ttft_s, now, half_life_s)
        ttft_bias = _add_ratio(ttft_bias, outcome.ttft_s, outcome.predicted_ttft_s, now, half_life_s)
    per_token = time_per_output_token(outcome, ttft_guess_s=ttft.value or outcome.predicted_ttft_s or 0.0)
    if per_token is not None:
        tpot = tpot.add(per_token, now, half_life_s)
        tpot_bias = _add_ratio(tpot_bias, per_token, outcome.predicted_tpot_s, now, half_life_s)
    return Observations(ttft, tpot, errors, ttft_bias, tpot_bias)


# A single wild sample (a GC pause, a preemption) must not swing the model by more than e^1.
_MAX_LOG_RATIO = 1.0


def _add_ratio(mean: DecayingMean, actual: float, predicted: float | None, now: float, half_life_s: float) -> DecayingMean:
    if predicted is None or predicted <= 0 or actual <= 0:
        return mean
    ratio = max(-_MAX_LOG_RATIO, min(_MAX_LOG_RATIO, math.log(actual / predicted)))
    return mean.add(ratio, now, half_life_s)


def time_per_output_token(outcome: Outcome, ttft_guess_s: float | None = None) -> float | None:
    """Decode time per generated token after the first, in seconds, when it can be measured: it
    needs at least two output tokens, and a first-token time. A non-stream answer has none (its
    first byte is its last); ``ttft_guess_s`` stands in for it then, so a replica that slows down
    is noticed from non-stream traffic too, not only from streams."""
    ttft_s = outcome.ttft_s if outcome.ttft_s is not None else ttft_guess_s
    if ttft_s is None or outcome.output_tokens < 2:
        return None
    return max(0.0, outcome.duration_s - ttft_s) / (outcome.output_tokens - 1)
