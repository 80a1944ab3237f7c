"""Whether one request is split (prefill on one replica, decode on another) or served whole by
a co-located replica. Each rule sees what a production gateway sees before the request runs:
the prompt's length, the prefix the index believes each replica holds, the request's budget,
and the predictions and ledgers routing already reads; never the answer's true length.

- ``ThresholdRule``: llm-d's ``prefix-based-pd-decider``: split when the prompt's part not
  cached on the chosen decode replica is at least ``non_cached_tokens`` (0: never split), and,
  when ``prompt_tokens`` is set, the prompt is at least that long. llm-d's shipped P/D config
  uses 16. The baseline to beat: it splits nearly every prompt.
- ``DuetRule``: split when serving the request whole would hurt a budget that splitting keeps
  (see its docstring).
- ``NeverSplit``: every request whole that a co-located replica can take (an operator may drain
  the P/D replicas this way). Under every rule a request no co-located replica can take is split
  (``split.with_split``): refusing it would serve nobody.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar, Protocol

from gateway.domain import RequestProfile
from gateway.routing.pd.pairs import Pair, pair_prediction
from gateway.routing.plugin import Option
from gateway.routing.predictors import prefill_interference_ms, prefill_ms, replica_load, uncached_tokens
from gateway.routing.roles import chunk_budget


class SplitRule(Protocol):
    """Decides whether ``request`` goes to ``pair`` rather than ``whole`` (the best co-located
    option; None: there is none). Returns (split, reason). ``crosses_variants``: whether, when
    no whole replica of any variant is predicted to meet the request's budget, a pair of
    another variant than the router chose may take it where it is predicted to meet it."""

    crosses_variants: ClassVar[bool]

    def split(self, request: RequestProfile, whole: Option | None, pair: Pair) -> tuple[bool, str]: ...


@dataclass(frozen=True, slots=True)
class NeverSplit:
    crosses_variants: ClassVar[bool] = False

    def split(self, request: RequestProfile, whole: Option | None, pair: Pair) -> tuple[bool, str]:
        return False, "never split"


@dataclass(frozen=True, slots=True)
class ThresholdRule:
    """llm-d's rule: the uncached prompt (measured on the decode replica, as llm-d reads the
    prefix match on the decode endpoint) at least ``non_cached_tokens``."""

    non_cached_tokens: int = 16
    prompt_tokens: int = 0
    crosses_variants: ClassVar[bool] = False

    def split(self, request: RequestProfile, whole: Option | None, pair: Pair) -> tuple[bool, str]:
        uncached = uncached_tokens(request, pair.decode.candidate)
        if self.non_cached_tokens == 0 or request.input_tokens < self.prompt_tokens:
            return False, "threshold off or prompt short"
        if uncached >= self.non_cached_tokens:
            return True, f"{uncached} uncached tokens >= {self.non_cached_tokens}"
        return False, f"{uncached} uncached tokens < {self.non_cached_tokens}"


@dataclass(frozen=True, slots=True)
class DuetRule:
    """Split when serving whole would cost a budget that splitting keeps, in this order:

    1. no co-located replica: split (``with_split`` does so before asking any rule);
    2. the split's TTFT (the prefill replica's predicted TTFT plus one decode step for the
       handoff) misses the request's TTFT budget that whole meets: whole;
    3. whole's TPOT (predicted, plus the other prompts' prefill it would decode beside) misses
       the request's TPOT budget that the decode replica meets: split;
    4. the prompt's uncached prefill on the co-located replica is longer than the least slack
       of the decodes in flight there (``decode_slack_ms``): it would push one past its
       budget: split;
    5. the uncached prompt needs more than one of the co-located replica's chunks while
       sequences run there (each chunk stalls every one of them): split;
    6. otherwise whole: a short or cached prompt costs no transfer.

    And where no whole replica of any variant is predicted to meet the budget, a pair that is
    takes the request, of whichever variant (``crosses_variants``): the objective chose its
    variant among whole replicas only, blind to the capacity the pairs add.
    """

    crosses_variants: ClassVar[bool] = True

    def split(self, request: RequestProfile, whole: Option | None, pair: Pair) -> tuple[bool, str]:
        if whole is None:
            return True, "no co-located replica"
        budget = request.budget
        split_ttft = pair_prediction(request, pair).ttft_ms
        if budget.ttft_ms is not None and split_ttft > budget.ttft_ms >= whole.prediction.ttft_ms:
            return False, f"split TTFT {split_ttft:.0f} ms misses {budget.ttft_ms:.0f}"
        whole_tpot = whole.prediction.tpot_ms + prefill_interference_ms(request, whole.candidate, whole.prediction)
        if budget.tpot_ms is not None and whole_tpot > budget.tpot_ms >= pair.decode.prediction.tpot_ms:
            return True, f"whole TPOT {whole_tpot:.0f} ms misses {budget.tpot_ms:.0f}"
        stall = prefill_ms(request, whole.candidate.variant, whole.candidate.cached_tokens)
        slack = whole.candidate.state.decode_slack_ms
        if slack is not None and stall > slack:
            return True, f"prefill {stall:.0f} ms > in-flight slack {slack:.0f} ms"
        uncached = uncached_tokens(request, whole.candidate)
        if uncached > chunk_budget(whole.candidate) and replica_load(whole.candidate) > 0:
            return True, f"{uncached} uncached tokens over one chunk beside running decodes"
        return False, "short or cached prompt"


def rule_named(name: str, non_cached_tokens: int = 16, prompt_tokens: int = 0) -> SplitRule:
    """The rule a policy names (``duet``, ``threshold``, ``never``)."""
    rules: dict[str, SplitRule] = {"duet": DuetRule(), "threshold": ThresholdRule(non_cached_tokens, prompt_tokens),
                                   "never": NeverSplit()}
    return rules[name]
