"""Which outcomes count against a replica."""

from __future__ import annotations

import pytest

from gateway.outcome import Outcome
from gateway.state.outcomes import OutcomeKind, classify


@pytest.mark.parametrize(
    ("ok", "status", "kind"),
    [
        (True, 200, OutcomeKind.SUCCESS),
        (False, 200, OutcomeKind.FAILURE),  # the stream broke after the headers
        (False, 0, OutcomeKind.FAILURE),  # connect error or timeout: no status at all
        (False, 500, OutcomeKind.FAILURE),
        (False, 503, OutcomeKind.FAILURE),
        (False, 429, OutcomeKind.OVERLOAD),
        (False, 400, OutcomeKind.CLIENT),
        (False, 404, OutcomeKind.CLIENT),
        (False, 499, OutcomeKind.CLIENT),  # the client went away
    ],
)
def test_classify(ok: bool, status: int, kind: OutcomeKind) -> None:
    outcome = Outcome(
        "r1", ok=ok, status=status, ttft_s=None, duration_s=0.1, input_tokens=1, output_tokens=0
    )
    assert classify(outcome) is kind
