"""agent (tool calling): the request offers several tools; correct = the right tool, arguments
valid for its JSON schema, and the key values right. A call written as Hermes markup in the
text (a server started without a tool parser) counts too: parity is about the model."""

from __future__ import annotations

import json
import random
import re
from collections.abc import Callable
from typing import Any

import jsonschema

from quantize.evals.checking.answers import message_text, parse_json_object, tool_call
from quantize.evals.items import EvalItem, ModelAnswer, Verdict, verdict
from quantize.evals.task import chat_request, item_rng

CITIES = ("Paris", "Lagos", "Osaka", "Lima", "Oslo", "Toronto", "Nairobi", "Madrid", "Seoul", "Denver", "Cairo",
          "Hanoi", "Quito", "Perth", "Dublin", "Austin", "Accra", "Porto", "Kyoto", "Bergen")
CURRENCIES = ("USD", "EUR", "GBP", "JPY", "CHF", "CAD")
TICKERS = ("AAPL", "MSFT", "NVDA", "AMZN", "TSLA", "IBM", "ORCL", "INTC", "AMD", "SAP", "SONY", "KO", "PEP", "NKE")
PEOPLE = ("ana", "ben", "chen", "dara", "eli", "fay", "gus", "hana", "ivan", "jade")
_MARKUP = re.compile(r"<tool_call>\s*(\{.*?\})\s*(?:</tool_call>|$)", re.DOTALL)


def _function(name: str, description: str, properties: dict[str, Any], required: list[str]) -> dict[str, Any]:
    return {"type": "function", "function": {"name": name, "description": description, "parameters": {
        "type": "object", "properties": properties, "required": required, "additionalProperties": False}}}


TOOLS = [
    _function("get_weather", "Current weather for a city",
              {"city": {"type": "string"}, "unit": {"type": "string", "enum": ["celsius", "fahrenheit"]}},
              ["city", "unit"]),
    _function("convert_currency", "Convert an amount of money between currencies",
              {"amount": {"type": "number"}, "from_currency": {"type": "string", "enum": list(CURRENCIES)},
               "to_currency": {"type": "string", "enum": list(CURRENCIES)}}, ["amount", "from_currency", "to_currency"]),
    _function("get_stock_price", "Latest price of a stock",
              {"ticker": {"type": "string", "pattern": "^[A-Z]{1,5}$"}}, ["ticker"]),
    _function("send_email", "Send an email",
              {"to": {"type": "string"}, "subject": {"type": "string"}}, ["to", "subject"]),
]
SCHEMAS = {t["function"]["name"]: t["function"]["parameters"] for t in TOOLS}

Intent = tuple[str, str, dict[str, Any]]  # (user message, tool, key arguments)


def _weather(rng: random.Random) -> Intent:
    city, unit = rng.choice(CITIES), rng.choice(("celsius", "fahrenheit"))
    return f"What is the weather in {city} right now? Give me the temperature in {unit}.", "get_weather", \
        {"city": city, "unit": unit}


def _convert(rng: random.Random) -> Intent:
    source, target = rng.sample(CURRENCIES, 2)
    amount = rng.randint(5, 5000)
    return f"Convert {amount} {source} to {target}.", "convert_currency", \
        {"amount": amount, "from_currency": source, "to_currency": target}


def _stock(rng: random.Random) -> Intent:
    ticker = rng.choice(TICKERS)
    return f"What is the latest stock price of {ticker}?", "get_stock_price", {"ticker": ticker}


def _email(rng: random.Random) -> Intent:
    person, topic = rng.choice(PEOPLE), rng.choice(
        ("budget review", "team lunch", "release notes", "travel plans", "offsite agenda", "quarterly goals"))
    return f"Send an email to {person}@example.com with the subject '{topic}'.", "send_email", \
        {"to": f"{person}@example.com", "subject": topic}


INTENTS: tuple[Callable[[random.Random], Intent], ...] = (_weather, _convert, _stock, _email)


class AgentTask:
    name = "agent"
    max_tokens = 128

    def generate(self, seed: int, n: int) -> list[EvalItem]:
        items = []
        for i in range(n):
            rng = item_rng(self.name, seed, i)
            message, tool, arguments = rng.choice(INTENTS)(rng)
            tools = rng.sample(TOOLS, len(TOOLS))  # the right tool is not always first
            request = chat_request(message, tools=tools, tool_choice="auto")
            items.append(EvalItem(f"agent-{seed}-{i}", self.name, request, {"name": tool, "arguments": arguments}))
        return items

    def verify(self, item: EvalItem, response: dict[str, Any]) -> Verdict:
        call = _call_of(response)
        if call is None:
            return verdict(item, False, "no-call", "no tool call")
        name, arguments = call
        answer = f"{name}({json.dumps(arguments, sort_keys=True)})" if arguments is not None else f"{name}(?)"
        if name != item.expected["name"]:
            return verdict(item, False, answer, f"called {name}, expected {item.expected['name']}")
        if arguments is None:
            return verdict(item, False, answer, "arguments are not a JSON object")
        try:
            jsonschema.validate(arguments, SCHEMAS[name])
        except jsonschema.ValidationError as exc:
            return verdict(item, False, answer, f"schema: {exc.message}")
        wrong = [key for key, value in item.expected["arguments"].items() if not _same(arguments.get(key), value)]
        return verdict(item, not wrong, answer, f"wrong {', '.join(wrong)}" if wrong else "")

    def reference_answer(self, item: EvalItem) -> ModelAnswer:
        return ModelAnswer(tool_name=item.expected["name"], tool_arguments=dict(item.expected["arguments"]))

    def wrong_answer(self, item: EvalItem) -> ModelAnswer:
        other = next(t for t in SCHEMAS if t != item.expected["name"])
        return ModelAnswer(tool_name=other, tool_arguments={})


def _call_of(response: dict[str, Any]) -> tuple[str, dict[str, Any] | None] | None:
    call = tool_call(response)
    if call is not None:
        return call.name, parse_json_object(call.arguments_text)
    match = _MARKUP.search(message_text(response))
    body = parse_json_object(match.group(1)) if match else None
    if body is None or "name" not in body:
        return None
    arguments = body.get("arguments")
    return str(body["name"]), arguments if isinstance(arguments, dict) else None


def _same(actual: Any, expected: Any) -> bool:
    if isinstance(expected, str):
        return isinstance(actual, str) and actual.strip().lower() == expected.lower()
    if isinstance(expected, int | float) and not isinstance(actual, bool):
        return isinstance(actual, int | float) and abs(actual - expected) < 1e-6
    return bool(actual == expected)
