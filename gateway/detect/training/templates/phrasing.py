"""How the prose templates ask (``prose``, ``chat_or_reasoning`` beside this module):
the openers and closers around a request and the follow-ups that end a conversation. Chat, coding
and reasoning share them, so that phrasing tells no task apart: only what a request asks about
does."""

from __future__ import annotations

import random

from gateway.detect.training.templates.template import Messages

OPENERS = ("", "", "", "Quick question: ", "Hey, ", "Hi! ", "I was wondering: ", "Can you help me? ", "Honestly, ",
           "Okay so ", "Please help. ", "Serious question: ", "Hello. ")
CLOSERS = ("", "", "", " Thanks!", " Keep it short.", " Please be detailed.", " Explain it simply.",
           " Any thoughts?", " Thanks in advance.", " Give me a few options.", " Use bullet points.")
FOLLOW_UPS = ("Can you give an example?", "Why is that?", "Can you make it shorter?", "What would you do?",
              "Tell me more about the second point.", "Hmm, are you sure?", "Okay, and what else?",
              "Could you say that in simpler words?", "Thanks. One more thing: what's the main risk?")


def ask(rng: random.Random, body: str) -> str:
    """``body`` after an opener and before a closer, either of which may be empty."""
    return rng.choice(OPENERS) + body + rng.choice(CLOSERS)


def turns(rng: random.Random, first: str, reply: str) -> Messages:
    """A conversation whose last user turn follows up an earlier answer."""
    system = rng.choice((None, None, "You are a helpful assistant.", "Answer concisely."))
    head = [{"role": "system", "content": system}] if system else []
    return [*head, {"role": "user", "content": first}, {"role": "assistant", "content": reply},
            {"role": "user", "content": rng.choice(FOLLOW_UPS)}]
