"""The function templates the coding task draws from: a description, a reference source with
``{name}`` and constant placeholders, and an argument generator. The reference source is the one
truth: the generator runs it (our code, in-process) to compute every expected output."""

from __future__ import annotations

import random
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

WORDS = ("apple", "river", "stone", "cloud", "tiger", "lemon", "piano", "orbit", "maple", "candle",
         "garden", "silver", "rocket", "bridge", "forest", "yellow", "window", "planet", "coffee", "market")


@dataclass(frozen=True, slots=True)
class FunctionSpec:
    """One function family. ``constants`` draws the template's constants; ``arguments`` draws
    one call's arguments (a tuple)."""

    names: tuple[str, ...]
    signature: str  # with {name}
    description: str  # with the constants' placeholders
    source: str  # with {name} and the constants' placeholders
    constants: Callable[[random.Random], dict[str, Any]]
    arguments: Callable[[random.Random], tuple[Any, ...]]


def _ints(rng: random.Random, low: int = 0, high: int = 8, spread: int = 20) -> list[int]:
    return [rng.randint(-spread, spread) for _ in range(rng.randint(low, high))]


def _sentence(rng: random.Random) -> str:
    return " ".join(rng.choice(WORDS) for _ in range(rng.randint(1, 5)))


def _none(rng: random.Random) -> dict[str, Any]:
    return {}


SPECS: tuple[FunctionSpec, ...] = (
    FunctionSpec(("sum_multiples", "sum_of_multiples", "total_divisible"), "{name}(xs: list[int]) -> int",
                 "returns the sum of the elements of xs that are divisible by {k}",
                 "def {name}(xs):\n    return sum(x for x in xs if x % {k} == 0)\n",
                 lambda rng: {"k": rng.randint(2, 7)}, lambda rng: (_ints(rng),)),
    FunctionSpec(("count_above", "count_greater", "how_many_above"), "{name}(xs: list[int]) -> int",
                 "returns how many elements of xs are strictly greater than {t}",
                 "def {name}(xs):\n    return sum(1 for x in xs if x > {t})\n",
                 lambda rng: {"t": rng.randint(-5, 10)}, lambda rng: (_ints(rng),)),
    FunctionSpec(("scale_all", "multiply_each", "scaled"), "{name}(xs: list[int]) -> list[int]",
                 "returns a new list with every element of xs multiplied by {f}",
                 "def {name}(xs):\n    return [x * {f} for x in xs]\n",
                 lambda rng: {"f": rng.randint(2, 9)}, lambda rng: (_ints(rng),)),
    FunctionSpec(("running_total", "prefix_sums", "cumulative_sum"), "{name}(xs: list[int]) -> list[int]",
                 "returns the running totals of xs (element i is the sum of xs[0..i])",
                 "def {name}(xs):\n    out, total = [], 0\n    for x in xs:\n        total += x\n        out.append(total)\n"
                 "    return out\n", _none, lambda rng: (_ints(rng),)),
    FunctionSpec(("spread", "value_range", "max_minus_min"), "{name}(xs: list[int]) -> int",
                 "returns the largest element of xs minus the smallest (xs is never empty)",
                 "def {name}(xs):\n    return max(xs) - min(xs)\n", _none, lambda rng: (_ints(rng, low=1),)),
    FunctionSpec(("reverse_words", "words_backwards", "flip_word_order"), "{name}(s: str) -> str",
                 "returns the words of s (separated by single spaces) in reverse order, joined by single spaces",
                 "def {name}(s):\n    return ' '.join(reversed(s.split(' ')))\n", _none, lambda rng: (_sentence(rng),)),
    FunctionSpec(("count_vowels", "vowel_count", "num_vowels"), "{name}(s: str) -> int",
                 "returns how many characters of s are vowels (a, e, i, o, u; lowercase only)",
                 "def {name}(s):\n    return sum(1 for c in s if c in 'aeiou')\n", _none, lambda rng: (_sentence(rng),)),
    FunctionSpec(("shift_letters", "caesar", "rotate_letters"), "{name}(s: str) -> str",
                 "returns s with every lowercase letter shifted {k} places forward in the alphabet "
                 "(wrapping from z to a); other characters stay",
                 "def {name}(s):\n    return ''.join(chr((ord(c) - 97 + {k}) % 26 + 97) if 'a' <= c <= 'z' else c "
                 "for c in s)\n", lambda rng: {"k": rng.randint(1, 25)}, lambda rng: (_sentence(rng),)),
    FunctionSpec(("dedupe", "unique_in_order", "remove_duplicates"), "{name}(xs: list[int]) -> list[int]",
                 "returns xs without repeated elements, keeping the first occurrence of each, in order",
                 "def {name}(xs):\n    seen, out = set(), []\n    for x in xs:\n        if x not in seen:\n"
                 "            seen.add(x)\n            out.append(x)\n    return out\n",
                 _none, lambda rng: ([rng.randint(0, 5) for _ in range(rng.randint(0, 9))],)),
    FunctionSpec(("differences", "steps", "pairwise_diff"), "{name}(xs: list[int]) -> list[int]",
                 "returns the list of differences xs[i + 1] - xs[i] (empty when xs has fewer than two elements)",
                 "def {name}(xs):\n    return [b - a for a, b in zip(xs, xs[1:])]\n", _none, lambda rng: (_ints(rng),)),
    FunctionSpec(("clamp_all", "clip_values", "bounded"), "{name}(xs: list[int]) -> list[int]",
                 "returns xs with every element below {lo} replaced by {lo} and every element above {hi} "
                 "replaced by {hi}",
                 "def {name}(xs):\n    return [min(max(x, {lo}), {hi}) for x in xs]\n",
                 lambda rng: {"lo": rng.randint(-10, 0), "hi": rng.randint(1, 10)}, lambda rng: (_ints(rng),)),
    FunctionSpec(("digit_sum", "sum_digits", "add_digits"), "{name}(n: int) -> int",
                 "returns the sum of the decimal digits of the non-negative integer n",
                 "def {name}(n):\n    return sum(int(d) for d in str(n))\n", _none,
                 lambda rng: (rng.randint(0, 10 ** rng.randint(1, 7)),)),
    FunctionSpec(("title_case", "capitalize_words", "capitalized"), "{name}(s: str) -> str",
                 "returns s with the first letter of every word in upper case (words are separated by single "
                 "spaces; the other letters stay as they are)",
                 "def {name}(s):\n    return ' '.join(w[:1].upper() + w[1:] for w in s.split(' '))\n", _none,
                 lambda rng: (_sentence(rng),)),
    FunctionSpec(("even_squares", "squares_of_evens", "square_evens"), "{name}(xs: list[int]) -> list[int]",
                 "returns the squares of the even elements of xs, in their order",
                 "def {name}(xs):\n    return [x * x for x in xs if x % 2 == 0]\n", _none, lambda rng: (_ints(rng),)),
)
