"""long-context: retrieve a code planted deep (50-95% of the way) in a long generated log,
among distractor codes of other vaults. Documents stay near 1,100-1,450 tokens by SmolLM2's
tokenizer, so that prompt and answer fit the local model's 2,048-token context."""

from __future__ import annotations

import random
import re
from typing import Any

from quantize.evals.checking.answers import message_text
from quantize.evals.items import EvalItem, ModelAnswer, Verdict, verdict
from quantize.evals.task import chat_request, item_rng

COLORS = ("red", "blue", "green", "amber", "violet", "silver", "orange", "black", "white", "teal")
TEAMS = ("night", "morning", "loading", "inventory", "maintenance", "security", "shipping")
GOODS = ("crates", "pallets", "barrels", "boxes", "drums", "sacks")
TARGET_CHARS = (3400, 4300)  # SmolLM2 tokenizes this log at ~3.1 characters per token (digits)
CODE = re.compile(r"\b[A-Z]{2}-\d{4}\b")


def _code(rng: random.Random) -> str:
    return f"{rng.choice('ABCDEFGHJKLMNPQRSTUVWXYZ')}{rng.choice('ABCDEFGHJKLMNPQRSTUVWXYZ')}-{rng.randint(1000, 9999)}"


def _filler(rng: random.Random, day: int) -> str:
    return rng.choice((
        f"On day {day}, the {rng.choice(TEAMS)} team moved {rng.randint(3, 90)} {rng.choice(GOODS)} from dock "
        f"{rng.randint(1, 12)} to dock {rng.randint(1, 12)}.",
        f"The {rng.choice(TEAMS)} shift on day {day} logged {rng.randint(2, 40)} {rng.choice(GOODS)} as damaged "
        "and sent them back for inspection.",
        f"A truck arrived on day {day} carrying {rng.randint(10, 200)} {rng.choice(GOODS)}; unloading took "
        f"{rng.randint(20, 180)} minutes.",
        f"Inventory on day {day} counted {rng.randint(100, 9000)} {rng.choice(GOODS)} across all aisles.",
    ))


class LongContextTask:
    name = "long-context"
    max_tokens = 32

    def generate(self, seed: int, n: int) -> list[EvalItem]:
        return [self._item(seed, i) for i in range(n)]

    def _item(self, seed: int, index: int) -> EvalItem:
        rng = item_rng(self.name, seed, index)
        target_color, *other_colors = rng.sample(COLORS, 3)
        code = _code(rng)
        facts = [f"The access code for the {c} vault is {_code(rng)}." for c in other_colors]
        sentences, length, day, limit = [], 0, 1, rng.randint(*TARGET_CHARS)
        while length < limit:
            sentences.append(_filler(rng, day))
            length += len(sentences[-1]) + 1
            day += 1
        for fact in facts:
            sentences.insert(rng.randint(0, len(sentences)), fact)
        depth = rng.uniform(0.5, 0.95)
        sentences.insert(int(len(sentences) * depth), f"The access code for the {target_color} vault is {code}.")
        document = " ".join(sentences)
        question = f"What is the access code for the {target_color} vault? Answer with the code only."
        return EvalItem(f"long-context-{seed}-{index}", self.name,
                        chat_request(f"Warehouse log:\n{document}\n\nQuestion: {question}"),
                        {"code": code, "depth": round(depth, 3)})

    def verify(self, item: EvalItem, response: dict[str, Any]) -> Verdict:
        text = message_text(response).upper()
        found = CODE.findall(text.replace(" - ", "-"))
        answer = found[0] if found else "none"
        return verdict(item, answer == item.expected["code"], answer)

    def reference_answer(self, item: EvalItem) -> ModelAnswer:
        return ModelAnswer(item.expected["code"])

    def wrong_answer(self, item: EvalItem) -> ModelAnswer:
        code = item.expected["code"]
        digits = int(code[3:])
        return ModelAnswer(f"{code[:3]}{1000 + (digits - 999) % 9000}")
