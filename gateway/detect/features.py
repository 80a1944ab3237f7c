"""A request's features for task detection: what its messages say and how they are shaped.

Reads a bounded window, whatever the prompt's length: the last user turn's first
``HEAD_CHARS`` and last ``TAIL_CHARS`` characters (an instruction sits at the top or the bottom of
a long document), the system prompt's first ``SYSTEM_CHARS``, the first ``TOOL_CHARS`` of each of
the latest ``TOOL_RESULTS`` tool results, plus the lengths and roles of every message (one ``len``
per message). So a 32k-token prompt costs about what a 1k-token one does, no request has more than
~2,300 characters tokenized (the detector's time is the tokenizing and looking up of these), and
a long agent loop costs only its messages' lengths and roles beyond that (~0.25 µs a message).

Why 768 + 256 characters of the user turn are enough: a question or an instruction is short, and a
long prompt's instruction sits at its top or bottom (around a document, a table, code). The whole
of 100% of GSM8K's and Vicuna bench's questions and 96% of HumanEval's prompts fit in the window,
and on the validation splits (``gateway.detect.corpus``) the detector trained on this window
answers exactly as one trained on twice as much (1,536 + 512) did; what the middle of a long
prompt holds is read as its length (``ulen``) and line count."""

from __future__ import annotations

import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Any

HEAD_CHARS = 768
TAIL_CHARS = 256
SYSTEM_CHARS = 256
TOOL_CHARS = 128
# Tool results read, the latest: an agent's loop can hold hundreds, and reading every one made a
# call grow with the conversation (0.7 ms at 100 results, 6.8 ms at 1,000). No training request
# has more than two, so the features of those it learned from are unchanged.
TOOL_RESULTS = 8
# A user turn this short that follows another is read after it (the earlier turn's window, then this
# one): a follow-up ("why?", "now in Python", "what if they buy twice as many?") carries little of its
# task in its own words, and the turn it follows carries the rest.
FOLLOW_UP_CHARS = TAIL_CHARS  # so the whole follow-up is in the window's tail
# Words, runs of digits (folded to zeros: a number's size, not its value) and single symbols.
_TOKEN = re.compile(r"[a-z_]+|0+|[^\sa-z_0]")
_DIGITS = str.maketrans("123456789", "000000000")
# The former has_code rule's pattern (``^`` in multiline mode), kept as one feature among the others:
# a fence anywhere, or a line starting with a keyword. Searched as a newline followed by the line's
# pattern over the text with a newline in front, which finds the same lines without trying every
# position as a line start (a third of a call's time before).
_FENCE = "```"
# Words a programmer uses and few others do: languages, tools and the vocabulary of code. A count of
# them carries over to requests about code whose own words training never saw (a library, a term).
PROGRAMMING = frozenset("""
    algorithm api apis array arrays assert async await backend bash binary boolean branch bug bugs build byte bytes
    cache callback char class classes cli clojure cmake code codebase coding commit compile compiled compiler
    concurrency const constructor container cpp css csv database debug debugger debugging dependency deploy
    deserialize dict dictionary django docker dockerfile endpoint enum error errors exception exceptions
    framework frontend function functions garbage generic generics git github gradle golang hash hashmap heap html
    http https ide implement implementation import index inheritance int integer interface interpreter java
    javascript json kotlin kubernetes lambda library linker lint linter linux list loop loops malloc maven
    memory method methods module modules mutex mysql namespace node npm null numpy object objects oop package
    parse parser php pip pointer pointers postgres postgresql process program programming python query queue
    react recursion recursive refactor regex regexp repo repository request rest ruby runtime rust scala schema
    script sdk segfault serialize server shell snippet sql sqlite stack string strings struct swift syntax
    terminal test tests thread threads token tuple type typescript typing unicode unix variable variables
    vector vue webpack websocket yaml
""".split())
_CODE_LINE = re.compile(r"\n\s*(?:def |class |import |from \S+ import |function |#include|public |const |let |fn |package )")


def _text(content: Any) -> str:
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        return "\n".join(p["text"] for p in content if isinstance(p, dict) and isinstance(p.get("text"), str))
    return ""


def window(text: str) -> str:
    if len(text) <= HEAD_CHARS + TAIL_CHARS:
        return text
    return text[:HEAD_CHARS] + "\n" + text[-TAIL_CHARS:]


def word_tokens(text: str) -> list[str]:
    return _TOKEN.findall(text.lower().translate(_DIGITS))


def _bucket(n: int) -> int:
    """floor(log2(n)), 0 for n < 2: a count's order of magnitude."""
    return max(n.bit_length() - 1, 0)


@dataclass(frozen=True, slots=True)
class Parts:
    """A request's features before they are named: the shape and signal names, and per part of the
    text (``u`` the user turn or prompt, ``s`` the system prompt, ``t`` the tool results) its tokens,
    each a feature ``part:token``; the parts in ``paired`` also have each adjacent pair of tokens
    as a feature ``part:first second``. ``names()`` spells them all out (training reads them so);
    the detector looks the tokens up as they are, without building a string per feature."""

    shape: list[str]
    words: list[tuple[str, list[str]]]
    paired: list[tuple[str, list[str]]]

    def names(self) -> list[str]:
        out = list(self.shape)
        unigrams = dict(self.words)
        for part, tokens in self.paired:
            out += [f"{part}:{t}" for t in tokens] + [f"{part}:{a} {b}" for a, b in zip(tokens, tokens[1:], strict=False)]
            unigrams.pop(part, None)
        for part, tokens in unigrams.items():
            out += [f"{part}:{t}" for t in tokens]
        return out


def message_features(messages: Sequence[Any]) -> list[str]:
    """Feature names of a chat request (``messages`` as the client sent them)."""
    return message_parts(messages).names()


def prompt_features(prompt: str) -> list[str]:
    """Feature names of a completions prompt (one text, no roles)."""
    return prompt_parts(prompt).names()


@dataclass(frozen=True, slots=True)
class RequestText:
    """What a chat request's messages say, as the detector reads them: the user turn (a short
    follow-up after the turn it follows, ``FOLLOW_UP_CHARS``), the system prompt, the latest tool
    results' heads (``TOOL_CHARS`` each), and the shape features of the messages' roles and lengths."""

    user: str
    system: str
    tool_results: list[str]
    shape: list[str]


def request_text(messages: Sequence[Any]) -> RequestText:
    user, earlier, system, chars, tool_results, calls = "", "", "", 0, [], 0
    for message in messages:
        if not isinstance(message, dict):
            continue
        role, text = message.get("role"), _text(message.get("content"))
        chars += len(text)
        if role == "user":
            earlier, user = user, text
        elif role == "system" or role == "developer":
            system = system or text
        elif role == "tool" or role == "function":
            tool_results.append(text[:TOOL_CHARS])
        if message.get("tool_calls"):
            calls += 1
    last = messages[-1].get("role") if messages and isinstance(messages[-1], dict) else None
    shape = [f"last:{last}", f"turns:{_bucket(len(messages))}", f"len:{_bucket(chars)}", f"calls:{min(calls, 3)}",
             f"results:{min(len(tool_results), 3)}", f"system:{bool(system)}"]
    if earlier and len(user) <= FOLLOW_UP_CHARS:
        user = window(earlier) + "\n" + user
    return RequestText(user, system, tool_results[-TOOL_RESULTS:], shape)


def message_parts(messages: Sequence[Any]) -> Parts:
    """The features of a chat request, unnamed (``message_features`` names them)."""
    return parts_of(request_text(messages))


def parts_of(read: RequestText) -> Parts:
    """``message_parts`` of a request already read (the blend detector reads it once for both
    its words and its vectors)."""
    signals, tokens = _text_features(read.user)
    words = [("s", word_tokens(read.system[:SYSTEM_CHARS]) if read.system else []),
             ("t", word_tokens(" ".join(read.tool_results)) if read.tool_results else [])]
    return Parts(read.shape + signals, words, [("u", tokens)])


def prompt_parts(prompt: str) -> Parts:
    """The features of a completions prompt, unnamed (``prompt_features`` names them)."""
    signals, tokens = _text_features(prompt)
    return Parts([f"len:{_bucket(len(prompt))}", "last:prompt", *signals], [], [("u", tokens)])


def _has_code(text: str) -> bool:
    return _FENCE in text or _CODE_LINE.search("\n" + text) is not None


def _text_features(full: str) -> tuple[list[str], list[str]]:
    """The signals of a user turn or prompt and the tokens of its window: whether it holds code, its
    lines, digits and length, how many programming words it uses (``PROGRAMMING``), its first word
    and whether it ends as a question."""
    text = window(full)
    folded = text.lower().translate(_DIGITS)
    tokens = _TOKEN.findall(folded)
    words = PROGRAMMING.intersection(tokens)
    signals = [f"code:{_has_code(text)}", f"lines:{_bucket(text.count(chr(10)))}",
               f"digits:{_bucket(folded.count('0'))}", f"ulen:{_bucket(len(full))}", f"prog:{min(len(words), 3)}",
               f"first:{tokens[0] if tokens else ''}", f"ask:{text.rstrip().endswith('?')}"]
    return signals, tokens


def feature_ids(names: Iterable[str], vocabulary: dict[str, int]) -> list[int]:
    """The vocabulary's ids of ``names``, each once (features are present or not)."""
    get = vocabulary.get
    return list({i for i in map(get, names) if i is not None})
