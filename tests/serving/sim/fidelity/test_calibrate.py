"""Fitting profile costs from measurements."""

from __future__ import annotations

import pytest

from serving.sim.fidelity.calibrate import acceptance_from_length, fit_line, report


def test_fit_line_recovers_a_line() -> None:
    line = fit_line([1, 2, 4, 8], [0.034 + 0.0009 * x for x in (1, 2, 4, 8)])
    assert line.intercept == pytest.approx(0.034) and line.slope == pytest.approx(0.0009)


def test_acceptance_inverts_mean_length() -> None:
    assert acceptance_from_length(1 + 0.5 + 0.25 + 0.125 + 0.0625, 4) == pytest.approx(0.5, abs=1e-6)


def test_report_fits_a_synthetic_replica() -> None:
    base, per_seq = 0.03, 0.001
    # TTFT grows with the streams (queued prefills); the step time must not be fooled by it.
    samples = [{"phase": "decode", "concurrency": c, "ttft_s": 0.05 * c, "output_tokens": 128,
                "total_s": 0.05 * c + 127 * (base + per_seq * c)} for c in (1, 2, 4, 8) for _ in range(c)]
    samples += [{"phase": f"ttft-{n}", "prompt_tokens": n, "ttft_s": 0.04 + 0.0002 * n} for n in (16, 128, 512)]
    measurements = {"forced_output_tokens": 128, "replicas": {"bf16": {"summary": {}, "samples": samples}}}
    lines = report(measurements)
    assert lines[0] == "bf16: base_s 0.0300  decode_s_per_token 0.00100"
    assert lines[1].startswith("bf16: prefill_s_per_token 0.000200  frontend_s 0.0100")
