"""Tool calls as a replica launched with ``--enable-auto-tool-choice --tool-call-parser hermes``
makes them (vLLM 0.32's ``tool_parsers/hermes_tool_parser.py``; captured in
``tests/fixtures/vllm_cpu/chat_tools_named*``).

The model writes a call as text, ``<tool_call>\\n{"name": ..., "arguments": {...}}\\n</tool_call>``,
token by token, and the parser turns that text into tool calls. vLLM's strict tool calling (on
by default) sends named and ``required`` choices through the same parser, so a call cut short
by ``max_tokens`` is no call: the full answer carries the raw text as ``content``
(``finish_reason: length``), while a stream has already sent the name and the argument text
that arrived.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from typing import Any

START, END = "<tool_call>", "</tool_call>"

# Where a BPE tokenizer cuts markup: words (long ones in parts), numbers, runs of punctuation,
# whitespace, each word or punctuation run with its leading space. On the captured call
# (``get_weather`` with city and unit) this gives 35 pieces where SmolLM2's tokenizer gives 37;
# the ~4 characters per token of prose would give 26, and the call would fit in the 32-token
# budget that real vLLM ran out of.
_PIECE = re.compile(r" ?[A-Za-z]{1,10}| ?[0-9]{1,3}| ?[^\sA-Za-z0-9]+|\s+")
_NAME = re.compile(r'"name"\s*:\s*"([^"]+)"')
_ARGUMENTS = re.compile(r'"arguments"\s*:\s*')
_CALL = re.compile(r"<tool_call>(.*?)</tool_call>|<tool_call>(.*)", re.DOTALL)


def markup(name: str, arguments: str) -> str:
    """The text a Hermes-style model writes to call ``name`` with ``arguments`` (JSON text)."""
    return f'{START}\n{{"name": {json.dumps(name)}, "arguments": {arguments}}}\n{END}'


def token_pieces(text: str) -> list[str]:
    """``text`` cut into consecutive token-sized pieces (they join back to ``text``)."""
    return _PIECE.findall(text)


@dataclass(frozen=True, slots=True)
class ParsedCall:
    """A tool call read from complete model output: function name, arguments as JSON text."""

    name: str
    arguments: str


def parse(text: str) -> ParsedCall | None:
    """The non-streaming parse: the first call in ``text``, or None when there is none or its
    JSON is incomplete (the parser then returns the text as content)."""
    match = _CALL.search(text)
    if match is None:
        return None
    try:
        call = json.loads(match.group(1) if match.group(1) is not None else match.group(2))
        # vLLM re-serialises the arguments with json.dumps (", " and ": " separators).
        return ParsedCall(str(call["name"]), json.dumps(call["arguments"], ensure_ascii=False))
    except (ValueError, KeyError, TypeError):
        return None


class StreamParser:
    """The streaming parse of one choice: fed the text of each engine output, it returns the
    tool-call deltas vLLM sends for it (the name with the call's id once the name is
    complete, then each new piece of argument text)."""

    __slots__ = ("call_id", "_text", "_name_sent", "_args_sent")

    def __init__(self, call_id: str) -> None:
        self.call_id = call_id
        self._text = ""
        self._name_sent = False
        self._args_sent = ""

    def feed(self, delta: str) -> list[dict[str, Any]]:
        """Deltas for the output so far plus ``delta``, in vLLM's key order; [] when nothing
        new can be sent yet."""
        self._text += delta
        body = _call_body(self._text)
        if body is None:
            return []
        json_text, complete = body
        deltas: list[dict[str, Any]] = []
        if not self._name_sent:
            name = _NAME.search(json_text)
            if name is None:
                return []
            self._name_sent = True
            deltas.append({"id": self.call_id, "type": "function", "index": 0, "function": {"name": name.group(1)}})
        arguments = _arguments(json_text, complete)
        if arguments is not None and len(arguments) > len(self._args_sent):
            deltas.append({"index": 0, "function": {"arguments": arguments[len(self._args_sent):]}})
            self._args_sent = arguments
        return deltas


def _call_body(text: str) -> tuple[str, bool] | None:
    """The JSON text of the first call so far, and whether it is complete."""
    start = text.find(START)
    if start == -1:
        return None
    raw = text[start + len(START):]
    end = raw.find(END)
    if end != -1:
        return raw[:end].strip(), True
    raw = raw[: len(raw) - _partial_overlap(raw, END)].strip()
    return raw, bool(raw) and _is_json(raw)


def _arguments(json_text: str, complete: bool) -> str | None:
    """The argument text after ``"arguments":`` (without the call's closing brace once complete)."""
    match = _ARGUMENTS.search(json_text)
    if match is None:
        return None
    raw = json_text[match.end():]
    if complete:
        raw = raw.rstrip()
        if raw.endswith("}"):
            raw = raw[:-1].rstrip()
    return raw


def _partial_overlap(text: str, tag: str) -> int:
    """Length of the longest end of ``text`` that begins ``tag`` (a tag still arriving)."""
    for size in range(min(len(text), len(tag) - 1), 0, -1):
        if tag.startswith(text[-size:]):
            return size
    return 0


def _is_json(text: str) -> bool:
    try:
        json.loads(text)
    except ValueError:
        return False
    return True
