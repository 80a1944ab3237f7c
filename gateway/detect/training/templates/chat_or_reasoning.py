"""Requests on the line between chat and reasoning, written after the held-out set's first reading
showed the detector confusing them: chat that sounds like reasoning (an estimate, a "what if", a
common-sense question, to be talked through "step by step") and word problems asked the same
chatty way. What keeps them apart is whether there is anything to compute: the chat ones carry no
figures, the reasoning ones their figures. ``chat_ballpark``, ``chat_wonder`` and
``reason_household`` are for validation only, in words of their own (``prose.VALIDATION``)."""

from __future__ import annotations

import random

from gateway.detect.training.templates.phrasing import ask
from gateway.detect.training.templates.template import CITIES, Messages

# Chat that sounds like reasoning: an estimate to be talked through, a "what if", a common-sense
# question. No figures to compute with: the answer is an explanation, not a worked result.
STEPWISE = ("", "", " Walk me through your thinking.", " Explain how you get there, one step at a time.",
            " Show your reasoning.", " Talk me through it step by step.", " How would you work it out?",
            " Lay out each step so I can follow.", " Explain the logic behind your guess.", " Explain your answer.",
            " Please justify it, step by step.", " I want the reasoning, not only the result.")
ESTIMATES = ("How many leaves does a full-grown oak carry in summer?", "How many piano tuners work in a big city?",
             "How many golf balls would fill a school bus?", "How much water does a family use in a year?",
             "How many hairs are there on a human head?", "How many bricks does it take to build a house?",
             "How many cups of coffee does a large city drink every morning?", "How many ants live in a garden?",
             "How many steps would it take to walk across a country?", "How much does the air in a classroom weigh?",
             "How many people are up in the air on planes at any moment?", "How many grains of rice are in a bag?",
             "How long would it take to count to a billion out loud?", "How many pizzas are eaten on a Friday night?",
             "How far does a person walk in their whole life?", "How many bicycles are there in {city}?",
             "How many trees are cut down each day to make paper?", "How many teachers work in a country like mine?",
             "How many taxis drive through {city} every hour?", "How much rain falls on a football pitch in a year?",
             "How many letters does a postman deliver in a career?", "How many times a day does a dog wag its tail?",
             "How many people visit a big museum each day?", "How many meals does a school kitchen serve in a year?",
             "How many people in {city} are asleep at noon?")
COUNTERFACTUALS = ("the wheel had never been invented", "the Moon were twice as close to the Earth",
                   "everyone in the world spoke the same language", "the dinosaurs had not died out",
                   "the Library of Alexandria had never burned", "humans could breathe underwater",
                   "nobody had ever invented the clock", "cars had never replaced horses", "the Earth had no seasons",
                   "the telephone had been invented in ancient Greece", "money had never been invented",
                   "Antarctica had a warm climate", "photography had never been invented", "people lived for three centuries")
COMMON_SENSE = ("How can you tell whether an egg is still fresh without cracking it?",
                "Why might a shop put sweets right next to the checkout?", "How can you tell if a melon is ripe?",
                "What clues tell you a house has been empty for a while?", "How can you guess the time of day from shadows?",
                "Why do drivers slow down to look at an accident on the other side of the road?",
                "Why might someone take the train rather than fly for a short trip?",
                "How do you know whether a dog is friendly before you pet it?", "How can you tell that a storm is coming?",
                "Why do some people still prefer handwritten letters to email?",
                "What are the signs that a colleague is overwhelmed but won't say so?",
                "How can you judge whether a used car has been looked after?",
                "Why do people lower their voices in a library even when no sign asks them to?")


def chat_estimate(rng: random.Random) -> Messages:
    what = rng.choice(ESTIMATES).format(city=rng.choice(CITIES))
    body = rng.choice((what, what, f"Roughly, {what[0].lower()}{what[1:]}", f"Give me a ballpark figure: {what}",
                       f"Here's one I've always wondered about. {what}", f"Estimate this for me: {what}"))
    return [{"role": "user", "content": ask(rng, body + rng.choice(STEPWISE))}]


def chat_what_if(rng: random.Random) -> Messages:
    case = rng.choice(COUNTERFACTUALS)
    body = rng.choice((f"What if {case}?", f"What would the world look like if {case}?",
                       f"How would everyday life be different if {case}?", f"Imagine {case}. What would change?",
                       f"Suppose {case}: how would history have gone?"))
    return [{"role": "user", "content": ask(rng, body + rng.choice(STEPWISE))}]


def chat_common_sense(rng: random.Random) -> Messages:
    return [{"role": "user", "content": ask(rng, rng.choice(COMMON_SENSE) + rng.choice(STEPWISE))}]


# reasoning -----------------------------------------------------------------------------------
def reason_everyday(rng: random.Random) -> Messages:
    """A word problem asked as a chat would be: everyday numbers to work with, the same closers."""
    a, b, c = rng.randint(3, 40), rng.randint(2, 12), rng.randint(2, 9)
    body = rng.choice((
        f"My son's homework: a baker makes {a * c} loaves and sells {c} every hour. How many are left after {b} hours?",
        f"I drive {a} km to work and back {c} days a week, and my car uses {b} litres per 100 km. How much fuel is that a week?",
        f"If I save ${a} a week, how many weeks until I can buy a bike that costs ${a * b + c}?",
        f"I read {b} pages a day and my book has {a * b + c} pages. On which day do I finish it?",
        f"Our garden is {a} m by {b} m and a bag of seed covers {c} square metres. How many bags do we need?",
        f"We are {c} friends splitting a ${a * c + b} bill, and I also pay a ${b} tip on my own. How much do I pay?",
        f"I earn ${a} an hour for {b + 20} hours a week. What if I worked {c} more hours a week: how much more in a month "
        "of four weeks?"))
    system = rng.choice((None, None, "You are a patient maths tutor.", "Show your working.", "You are a helpful assistant."))
    head = [{"role": "system", "content": system}] if system else []
    return [*head, {"role": "user", "content": ask(rng, body + rng.choice(STEPWISE))}]


# validation only -----------------------------------------------------------------------------
def chat_ballpark(rng: random.Random) -> Messages:
    what = rng.choice(("how many apples one orchard grows in a season", "how many books a public library lends in a year",
                       "how much paint it takes to cover a lighthouse", "how many umbrellas get left on trains",
                       "how long it would take to walk around the equator", "how many birds cross a mountain pass in autumn",
                       "how many people ride the escalators of a busy metro station each day",
                       "how much salt a cold country spreads on its roads in winter", "how many keys a locksmith cuts"))
    close = rng.choice(("", " I'd like to see how you reason it out, not just a number.", " Guide me through the estimate.",
                        " Break your thinking into stages.", " Explain your answer so the logic is clear."))
    return [{"role": "user", "content": f"{rng.choice(('Any idea ', 'Ballpark it for me: ', 'Just curious: '))}{what}?{close}"}]


def chat_wonder(rng: random.Random) -> Messages:
    body = rng.choice(("If trains were never late, how would cities change?",
                       "Suppose bees vanished tomorrow. What happens next?",
                       "How would sport be different if nobody kept score?", "If we had never tamed fire, where would we be?",
                       "Why do supermarkets keep the milk at the back?", "How can you tell whether a bridge is safe to cross?",
                       "Why might a town plant trees along its streets?", "How do you know when bread has proved enough?",
                       "What would happen to fashion if mirrors didn't exist?", "Why do hikers tell someone their route?"))
    return [{"role": "user", "content": ask(rng, body + rng.choice(("", " Reason it out for me.", " Explain your thinking.")))}]


def reason_household(rng: random.Random) -> Messages:
    a, b, c = rng.randint(2, 9), rng.randint(10, 60), rng.randint(3, 12)
    body = rng.choice((f"A recipe for {c} people needs {a * c} eggs. How many eggs do I need for {c + a} people?",
                       f"A tin of paint covers {b} square metres and my walls are {b * a + c} square metres. How many tins?",
                       f"My flight leaves at {a}:30 and takes {c} hours; the destination is {a % 4 + 1} hours behind. "
                       "What time do I land there?",
                       f"The bathroom floor is {a} metres by {c} metres and a box of tiles covers {a + 1} square metres. "
                       "How many boxes should I order?",
                       f"My phone plan costs ${b} a month plus ${a} per extra gigabyte. Last month I paid ${b + a * c}. "
                       "How many extra gigabytes did I use?"))
    return [{"role": "user", "content": ask(rng, body + rng.choice(("", " Can you go through it with me?", " Explain it.")))}]

