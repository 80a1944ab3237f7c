"""The tables in docs/parity.md that are computed, not measured, are what the code computes: the
paired bootstrap's interval for k losses in n items, and the pairs the online test needs."""

from __future__ import annotations

import math
import re

import pytest

from gateway.parity.sequential import Design
from quantize.parity.real_docs import DOCS
from quantize.parity.stats import paired_bootstrap_ci

TEXT = DOCS.read_text()


def rows(first_header_cell: str) -> list[list[str]]:
    """The body rows of the table whose header starts with ``first_header_cell``."""
    lines = TEXT[TEXT.index(f"| {first_header_cell} |"):].splitlines()
    body = []
    for line in lines[2:]:
        if not line.startswith("|"):
            break
        body.append([cell.strip() for cell in line.strip("|").split("|")])
    return body


def close(shown: str, value: float) -> bool:
    """``shown`` is ``value`` to the decimals it shows."""
    decimals = len(shown.partition(".")[2])
    return abs(float(shown) - value) <= 0.5 * 10 ** -decimals + 1e-9


def test_the_bootstrap_interval_table_is_what_the_gate_computes():
    table = rows("n")
    assert [row[0] for row in table] == ["50", "100", "200"]
    for n_text, *cells in table:
        n = int(n_text)
        for k, cell in zip((1, 2, 5), cells, strict=True):
            low_text, high_text = re.fullmatch(r"\[(\S+), (\S+)\]", cell).groups()
            low, high = paired_bootstrap_ci([1.0] * n, [0.0] * k + [1.0] * (n - k), seed=0)
            assert close(low_text, low) and close(high_text, high), (n, k, cell, low, high)


def test_the_pairs_table_is_what_the_design_computes():
    table = rows("T")
    assert len(table) == 4
    for t_text, revoke, after_50, after_200, open_text in table:
        design = Design(float(t_text))
        assert int(revoke) == design.pairs_to_revoke()
        assert after_50 == f"{design.pairs_to_revoke(50)} more" and after_200 == f"{design.pairs_to_revoke(200)} more"
        assert open_text == f"{design.pairs_to_open()} / {Design(float(t_text), bet=0.9).pairs_to_open()}"


@pytest.mark.parametrize(("tolerance", "loss", "pairs"), [(0.05, 0.2, 54), (0.05, 0.35, 26), (0.15, 0.35, 45)])
def test_the_expected_pairs_quoted_follow_from_the_formula(tolerance, loss, pairs):
    design = Design(tolerance)
    lam = design.bet / (1 + tolerance)
    expected = math.log(1 / design.alpha) / (loss * math.log1p(lam * (1 - tolerance)) + (1 - loss) * math.log1p(-lam * tolerance))
    assert round(expected) == pairs
    prose = " ".join(TEXT.split())
    assert f"{pairs} pairs for p = {loss:g}" in prose or f"{pairs} for p = {loss:g}" in prose
