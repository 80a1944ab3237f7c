"""Which session a request belongs to, read from the request itself (the sessions' policy, what
a session keeps and when it moves, is ``gateway.sessions``).

Where the session id comes from, first found wins: the ``x-session-id`` header; the OpenAI
``user`` or ``safety_identifier`` body field; a hash of the conversation's first messages (its
system prompt and first user message), which every later turn of a chat repeats. A hashed
conversation's first turn is routed freely and only seats the session: many clients open with
the same canned messages, and pinning all of them to where the first one went would pile a
popular prompt onto one replica; its later turns (an assistant message in the history) are one
conversation's.
"""

from __future__ import annotations

import hashlib
from collections.abc import Mapping

from gateway.endpoints import ChatBody, RequestBody
from gateway.endpoints.prompt import message_texts

SESSION_HEADER = "x-session-id"


def session_key(body: RequestBody, headers: Mapping[str, str], model: str) -> str | None:
    """The session a request belongs to (None: none can be told), scoped by its logical model
    (a pinned name such as ``smollm2:fast`` is the same conversation as ``smollm2``)."""
    found = _claimed(body, headers) or _conversation(body)
    return None if found is None else f"{model}\x1f{found}"


def continues(body: RequestBody, headers: Mapping[str, str]) -> bool:
    """Whether the request continues its session (so its seat applies): a claimed id always
    does; a hashed conversation once its history holds an answer."""
    if _claimed(body, headers) is not None:
        return True
    return isinstance(body, ChatBody) and any(m.get("role") in ("assistant", "tool") for m in body.messages)


def _claimed(body: RequestBody, headers: Mapping[str, str]) -> str | None:
    if named := headers.get(SESSION_HEADER):
        return f"h:{named}"
    extra = body.model_extra or {}
    for field in ("user", "safety_identifier"):
        if isinstance(value := extra.get(field), str) and value:
            return f"u:{value}"
    return None


def _conversation(body: RequestBody) -> str | None:
    """A hash of the chat's system prompt(s) and first user message: the same on every turn."""
    if not isinstance(body, ChatBody):
        return None
    head = []
    for message in body.messages:
        head.append(f"{message.get('role')}\x1e{''.join(message_texts([message]))}")
        if message.get("role") == "user":
            break
    else:
        return None
    return "c:" + hashlib.blake2b("\x1d".join(head).encode(), digest_size=12).hexdigest()
