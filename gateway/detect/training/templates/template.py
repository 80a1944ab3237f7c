"""What a synthesised template is: ``(rng) -> messages``, deterministic given the generator,
which ``gateway.detect.training.corpus`` seeds with the sample's id. Beside it, the two helpers templates
build with and the words the templates of several modules draw on (people, organisations,
cities, topics, programming languages)."""

from __future__ import annotations

import random
from collections.abc import Callable
from typing import Any

Messages = list[dict[str, Any]]
Template = Callable[[random.Random], Messages]

PEOPLE = ("Maria Lopez", "Chen Wei", "Aisha Khan", "John Miller", "Olga Petrova", "Kwame Mensah", "Sofia Rossi",
          "Liam O'Brien", "Yuki Tanaka", "Priya Nair", "Lucas Martin", "Fatima Zahra", "Noah Fischer", "Emma Dubois")
ORGS = ("Northwind Traders", "Bluepeak Labs", "Harbor Logistics", "Silverline Energy", "Redwood Clinic",
        "Crescent Bank", "Ironbridge Motors", "Lakeside School", "Summit Foods", "Oakmont Insurance")
CITIES = ("Lisbon", "Nairobi", "Osaka", "Denver", "Krakow", "Lyon", "Toronto", "Pune", "Recife", "Auckland")
TOPICS = ("climate policy", "the history of jazz", "remote work", "urban gardening", "sleep hygiene", "electric cars",
          "personal budgeting", "learning a language", "public libraries", "marathon training", "houseplants",
          "volunteering", "board games", "photography", "minimalism", "the Roman empire", "coffee brewing",
          "social media", "job interviews", "city cycling", "meditation", "renewable energy", "space tourism")
LANGS = ("Python", "JavaScript", "TypeScript", "Go", "Rust", "Java", "C++", "Bash", "SQL", "Ruby", "C#", "Kotlin")


def pick(rng: random.Random, items: tuple[str, ...], k: int = 1) -> list[str]:
    """``k`` distinct items, in the order drawn."""
    return rng.sample(items, k)


def user(text: str, system: str | None = None) -> Messages:
    """A one-turn request, after a system prompt when one is given."""
    return ([{"role": "system", "content": system}] if system else []) + [{"role": "user", "content": text}]
