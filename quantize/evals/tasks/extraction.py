"""extraction: pull a figure out of a generated financial statement (prose or a table) —
an amount, a margin or a ratio — validated numerically with a tolerance."""

from __future__ import annotations

import random
from dataclasses import dataclass
from typing import Any

from quantize.evals.checking.answers import first_number, format_number, message_text
from quantize.evals.items import EvalItem, ModelAnswer, Verdict, verdict
from quantize.evals.task import chat_request, item_rng

FIRST = ("Northwind", "Bluepeak", "Harbor", "Silverline", "Redwood", "Crescent", "Ironbridge", "Lakeside",
         "Summit", "Oakmont", "Brightwater", "Granite")
SECOND = ("Holdings", "Industries", "Systems", "Foods", "Logistics", "Energy", "Retail", "Labs")


@dataclass(frozen=True, slots=True)
class Statement:
    """One year's figures, in millions of USD."""

    company: str
    year: int
    revenue: int
    cost_of_revenue: int
    operating_expenses: int
    interest_expense: int
    tax: int
    total_assets: int
    total_liabilities: int

    @property
    def gross_profit(self) -> int:
        return self.revenue - self.cost_of_revenue

    @property
    def operating_income(self) -> int:
        return self.gross_profit - self.operating_expenses

    @property
    def net_income(self) -> int:
        return self.operating_income - self.interest_expense - self.tax

    @property
    def equity(self) -> int:
        return self.total_assets - self.total_liabilities


def draw_statement(rng: random.Random) -> Statement:
    revenue = rng.randint(500, 25_000)
    cost = round(revenue * rng.uniform(0.35, 0.65))
    opex = round(revenue * rng.uniform(0.10, 0.25))
    interest = round(revenue * rng.uniform(0.0, 0.03))
    pretax = revenue - cost - opex - interest
    assets = round(revenue * rng.uniform(0.8, 2.5))
    return Statement(f"{rng.choice(FIRST)} {rng.choice(SECOND)}", rng.randint(2018, 2025), revenue, cost, opex,
                     interest, max(0, round(pretax * 0.21)), assets, round(assets * rng.uniform(0.3, 0.7)))


def _table(s: Statement) -> str:
    rows = [("Revenue", s.revenue), ("Cost of revenue", s.cost_of_revenue), ("Gross profit", s.gross_profit),
            ("Operating expenses", s.operating_expenses), ("Operating income", s.operating_income),
            ("Interest expense", s.interest_expense), ("Income tax", s.tax), ("Net income", s.net_income),
            ("Total assets", s.total_assets), ("Total liabilities", s.total_liabilities)]
    lines = [f"{s.company} - fiscal year {s.year} (USD millions)", "", "| Line item | Amount |", "|---|---:|"]
    return "\n".join(lines + [f"| {label} | {value:,} |" for label, value in rows])


def _prose(s: Statement) -> str:
    return (f"{s.company} reported revenue of ${s.revenue:,} million for fiscal {s.year}. Cost of revenue was "
            f"${s.cost_of_revenue:,} million, leaving a gross profit of ${s.gross_profit:,} million. Operating "
            f"expenses came to ${s.operating_expenses:,} million, so operating income was "
            f"${s.operating_income:,} million. After interest expense of ${s.interest_expense:,} million and "
            f"income tax of ${s.tax:,} million, net income was ${s.net_income:,} million. At year end the company "
            f"held total assets of ${s.total_assets:,} million against total liabilities of "
            f"${s.total_liabilities:,} million.")


# question -> (how to ask, the value, absolute tolerance)
def _questions(s: Statement) -> list[tuple[str, float, float]]:
    amount = "in millions of USD? Answer with the number only."
    return [
        (f"What was {s.company}'s revenue in fiscal {s.year}, {amount}", s.revenue, 0.5),
        (f"What was {s.company}'s net income in fiscal {s.year}, {amount}", s.net_income, 0.5),
        (f"What was {s.company}'s operating income in fiscal {s.year}, {amount}", s.operating_income, 0.5),
        (f"What was {s.company}'s shareholders' equity (total assets minus total liabilities) at the end of "
         f"fiscal {s.year}, {amount}", s.equity, 0.5),
        (f"What was {s.company}'s gross margin (gross profit divided by revenue) in fiscal {s.year}, as a "
         "percentage rounded to one decimal? Answer with the number only.",
         round(100 * s.gross_profit / s.revenue, 1), 0.11),
        (f"What was {s.company}'s debt-to-equity ratio (total liabilities divided by shareholders' equity) at "
         f"the end of fiscal {s.year}, rounded to two decimals? Answer with the number only.",
         round(s.total_liabilities / s.equity, 2), 0.011),
    ]


class ExtractionTask:
    name = "extraction"
    max_tokens = 32

    def generate(self, seed: int, n: int) -> list[EvalItem]:
        return [self._item(seed, i) for i in range(n)]

    def _item(self, seed: int, index: int) -> EvalItem:
        rng = item_rng(self.name, seed, index)
        statement = draw_statement(rng)
        document = _table(statement) if rng.random() < 0.5 else _prose(statement)
        question, value, tolerance = rng.choice(_questions(statement))
        return EvalItem(f"extraction-{seed}-{index}", self.name, chat_request(f"{document}\n\nQuestion: {question}"),
                        {"value": value, "tolerance": tolerance})

    def verify(self, item: EvalItem, response: dict[str, Any]) -> Verdict:
        number = first_number(message_text(response))
        if number is None:
            return verdict(item, False, "none", "no number in the answer")
        close = abs(number - item.expected["value"]) <= item.expected["tolerance"]
        return verdict(item, close, format_number(number))

    def reference_answer(self, item: EvalItem) -> ModelAnswer:
        return ModelAnswer(f"{item.expected['value']:,}")

    def wrong_answer(self, item: EvalItem) -> ModelAnswer:
        value = item.expected["value"]
        return ModelAnswer(format_number(value * 1.5 + 1))
