"""Synthesised requests asked in prose, with neither code nor a document in them: chat (open
questions, advice, opinions, plans, writing and editing), coding (write, implement, debug or
explain code; API, library and language questions) and reasoning (riddles, follow-ups, word
problems asked as a chat would ask them), single and multi-turn. The tasks share their openers,
closers and conversation shapes (``gateway.detect.training.templates.phrasing``), so what tells them apart is what
they ask about, not how they are phrased. ``TRAINING`` and, for tuning only, ``VALIDATION`` hold
them by task, with those on the line between chat and reasoning (estimates, "what if" and
common-sense questions to be talked through; everyday word problems) from
``gateway.detect.training.templates.chat_or_reasoning``. Templates as in ``gateway.detect.training.templates.template``:
``(seed) -> messages``, deterministic."""

from __future__ import annotations

import random

from gateway.detect.training.templates.chat_or_reasoning import (
    chat_ballpark,
    chat_common_sense,
    chat_estimate,
    chat_what_if,
    chat_wonder,
    reason_everyday,
    reason_household,
)
from gateway.detect.training.templates.phrasing import ask, turns
from gateway.detect.training.templates.template import CITIES, LANGS, Messages, Template

# chat ----------------------------------------------------------------------------------------
QUESTIONS = (
    "Why do cats purr?", "What caused the fall of the Western Roman Empire?", "How do vaccines teach the immune system?",
    "Why is the ocean salty but rivers are not?", "Who invented the printing press, and why did it matter?",
    "How does a rainbow form?", "What is the difference between weather and climate?", "Why do we dream?",
    "How did ancient sailors navigate without maps?", "What makes a good friend?", "Why do leaves change colour?",
    "Is it healthy to drink coffee every day?", "What happened during the French Revolution?",
    "How do bees make honey?", "Why do some people dislike cilantro?", "What is inflation and why does it matter?",
    "How do airplanes stay in the air?", "What are black holes?", "Why is sleep important for memory?",
    "What is stoicism about?", "How did the internet change journalism?", "What do whales eat?",
    "Why is Shakespeare still read today?", "How do elections work in a parliamentary system?",
    "What are the health benefits of walking?", "Why do onions make you cry?", "What is the meaning of life?",
)
SITUATIONS = (
    "my roommate never does the dishes", "I have a job interview on Monday", "my dog barks at night",
    "I can't stick to a workout routine", "I'm moving to a new city alone", "my team ignores my ideas in meetings",
    "I procrastinate on everything", "my parents want me to study law", "I feel nervous speaking in public",
    "my friend forgot my birthday", "I want to ask for a raise", "I keep waking up at 4 am",
    "I spend too much money on takeout", "my neighbour plays loud music", "I want to learn to cook",
)
THINGS = ("movies", "podcasts", "novels", "hiking trails", "board games", "gifts", "houseplants", "albums",
          "documentaries", "hobbies", "day trips", "recipes", "museums")
AUDIENCES = ("a rainy weekend", "my dad who loves history", "a ten-year-old", "someone new to the genre",
             "a long flight", "a couple on a budget", "a group of friends", "winter evenings")
FORMS = ("poem", "short story", "song", "speech", "letter", "tweet", "slogan", "fairy tale", "eulogy", "riddle",
         "birthday message", "bedtime story", "toast", "sonnet", "motivational quote")
SUBJECTS = ("the sea", "my grandmother", "autumn", "a lost umbrella", "friendship", "the first day of school",
            "a lighthouse keeper", "moving house", "a stubborn cat", "the moon", "our football team", "rain in " + CITIES[0])
PARAGRAPHS = (
    "i went to the store yesterday and their was no milk so i had to go to another one which was far and it rained.",
    "Our company are committed to deliver the best experience for customers and we always tries to improve.",
    "The meeting was long. Nobody agreed. We will meet again next week, probably, if people are free.",
    "Dear team, I wanted to let you know that I will be leaving at the end of the month after five great years.",
    "Summer is my favourite season because the days are long and everyone seems happier and more relaxed.",
)
OPINIONS = ("Is it better to rent or to buy a home?", "Are cities better places to live than the countryside?",
            "Should children have smartphones?", "Is a four-day work week a good idea?",
            "Which is the best season of the year?", "Are e-books as good as paper books?",
            "Is it worth learning Latin today?", "Do zoos do more good than harm?")


def chat_question(rng: random.Random) -> Messages:
    return [{"role": "user", "content": ask(rng, rng.choice(QUESTIONS))}]


def chat_situation(rng: random.Random) -> Messages:
    situation = rng.choice(SITUATIONS)
    body = rng.choice((f"{situation[0].upper()}{situation[1:]}. What should I do?", f"Any advice? {situation}.",
                       f"How do I deal with this: {situation}?", f"What would you suggest if {situation}?"))
    return [{"role": "user", "content": ask(rng, body)}]


def chat_recommend(rng: random.Random) -> Messages:
    body = rng.choice(("Can you recommend some {t} for {a}?", "Suggest five {t} for {a}.", "What are good {t} for {a}?",
                       "I need {t} for {a}. Ideas?")).format(t=rng.choice(THINGS), a=rng.choice(AUDIENCES))
    return [{"role": "user", "content": ask(rng, body)}]


def chat_creative(rng: random.Random) -> Messages:
    verb = rng.choice(("Write", "Compose", "Draft", "Come up with", "Help me write", "Could you write", "Make up"))
    return [{"role": "user", "content": ask(rng, f"{verb} a {rng.choice(FORMS)} about {rng.choice(SUBJECTS)}.")}]


def chat_edit(rng: random.Random) -> Messages:
    instruction = rng.choice(("Fix the grammar in this:", "Rewrite this to sound friendlier:", "Make this more formal:",
                              "Proofread this paragraph please.", "Can you make this sound less awkward?",
                              "Shorten this to one sentence:"))
    return [{"role": "user", "content": f"{instruction}\n\n{rng.choice(PARAGRAPHS)}"}]


def chat_plan(rng: random.Random) -> Messages:
    body = rng.choice((f"Plan a {rng.randint(2, 7)}-day trip to {rng.choice(CITIES)} for me.",
                       "Make me a weekly meal plan with cheap vegetarian dinners.",
                       "Help me plan a birthday party for an eight-year-old.",
                       "What should a packing list for a week of camping include?",
                       f"Put together a study schedule for the next {rng.randint(2, 6)} weeks before my exams.",
                       "Suggest a morning routine that helps me feel less rushed."))
    return [{"role": "user", "content": ask(rng, body)}]


def chat_opinion_open(rng: random.Random) -> Messages:
    body = rng.choice(OPINIONS)
    return [{"role": "user", "content": ask(rng, rng.choice((body, f"What's your take: {body[0].lower()}{body[1:]}",
                                                              f"{body} Give both sides.")))}]


def chat_thread(rng: random.Random) -> Messages:
    return turns(rng, rng.choice(QUESTIONS), rng.choice((
        "Good question! In short, it comes down to a few factors, which I'll go through one by one.",
        "There are several reasons. The most important one is history, but culture and habit matter too.",
        "Here is a short overview with the main ideas, and a note on where people still disagree.")))


# coding --------------------------------------------------------------------------------------
CONCEPTS = ("closures", "decorators", "generics", "async and await", "pointers", "recursion", "memoization",
            "dependency injection", "SQL joins", "database indexes", "mutexes", "race conditions", "the virtual DOM",
            "interfaces", "inheritance versus composition", "hash maps", "the event loop", "immutability",
            "type inference", "lambdas", "iterators", "exceptions", "unit testing", "semantic versioning",
            "environment variables", "REST APIs", "websockets", "monads", "virtual environments", "ORMs",
            "lazy evaluation", "string interpolation", "null safety", "enums", "static typing", "traits")
HOWTOS = ("read environment variables", "sort a dictionary by value", "run two functions in parallel",
          "connect to PostgreSQL", "parse command-line arguments", "serve static files", "time how long a call takes",
          "upload a file to S3", "cancel a request after a timeout", "write a file atomically", "hash a password",
          "log to a file and the console", "read a large file line by line", "call a REST API with a token",
          "convert a string to a date", "remove duplicates from an array", "generate a random UUID",
          "schedule a job every night", "zip a folder", "send an email with an attachment")
FRAMEWORKS = ("Django", "React", "Flask", "Spring Boot", "pandas", "NumPy", "Express", "Rails", "PyTorch", "FastAPI",
              "Vue", "Angular", "Laravel", "Kubernetes", "Terraform", "SQLAlchemy", "Next.js", "Svelte")
SYMPTOMS = ("returns a 500 error only in production", "gets slower every hour until I restart it",
            "re-renders in an endless loop", "times out once the table has a million rows",
            "passes its tests locally but fails in CI", "uses all the memory on the server",
            "shows the wrong time zone for some users", "deadlocks under load", "crashes on startup after an upgrade",
            "loses data when two users save at once", "won't compile after I added a new dependency")
PAIRS = ("Postgres or MongoDB", "React or Vue", "Go or Rust", "REST or gRPC", "tabs or spaces", "Kafka or RabbitMQ",
         "a monorepo or several repos", "classes or plain functions", "GraphQL or REST", "Docker Compose or Kubernetes",
         "Java or Kotlin", "SQLite or Postgres")
PURPOSES = ("a small web shop", "a data pipeline", "a side project", "a team of five developers", "a mobile backend",
            "high-throughput logging", "an internal admin tool")
PROGRAMS = ("a command-line tool that renames photos by the date they were taken",
            "a REST endpoint that returns the ten most recent orders", "a function that checks whether a string is a "
            "valid IPv4 address", "a class for a bank account with deposit and withdraw", "a rate limiter",
            "a script that backs up a database every night", "a to-do list app with a local database",
            "a binary search tree with insert and delete", "an LRU cache", "a web scraper for product prices",
            "a chat server using websockets", "a function that converts Roman numerals to integers",
            "a tokenizer for arithmetic expressions", "a thread-safe queue", "pagination for an API")


def code_explain_term(rng: random.Random) -> Messages:
    concept, lang = rng.choice(CONCEPTS), rng.choice(LANGS)
    body = rng.choice((f"Can you explain {concept} in {lang}?", f"I don't understand {concept}. Explain with an example.",
                       f"How do {concept} work in {lang}?", f"When should I use {concept} in {lang} code?",
                       f"What are {concept} good for in programming?"))
    return [{"role": "user", "content": ask(rng, body)}]


def code_howto(rng: random.Random) -> Messages:
    how, lang = rng.choice(HOWTOS), rng.choice(LANGS)
    body = rng.choice((f"How can I {how} in {lang}?", f"What's the best way to {how} with {lang}?",
                       f"In {lang}, how would you {how}?", f"Show me how to {how} using {lang}."))
    return [{"role": "user", "content": ask(rng, body)}]


def code_library(rng: random.Random) -> Messages:
    fw = rng.choice(FRAMEWORKS)
    body = rng.choice((f"In {fw}, how do I {rng.choice(HOWTOS)}?", f"Is there a built-in way in {fw} to {rng.choice(HOWTOS)}?",
                       f"What's the {fw} equivalent of middleware?", f"How do I upgrade a project to the latest {fw}?",
                       f"Which {fw} setting controls caching, and how do I change it?"))
    return [{"role": "user", "content": ask(rng, body)}]


def code_debug_prose(rng: random.Random) -> Messages:
    body = rng.choice(("My {f} app {s}. What could cause it?", "Our {f} service {s}. Where should I start debugging?",
                       "I'm stuck: the {f} project {s}. Any idea why?")).format(f=rng.choice(FRAMEWORKS), s=rng.choice(SYMPTOMS))
    return [{"role": "user", "content": ask(rng, body)}]


def code_compare(rng: random.Random) -> Messages:
    pair, purpose = rng.choice(PAIRS), rng.choice(PURPOSES)
    body = rng.choice((f"Should I use {pair} for {purpose}?", f"{pair}: which would you pick for {purpose}, and why?",
                       f"What are the trade-offs between {pair} for {purpose}?"))
    return [{"role": "user", "content": ask(rng, body)}]


def code_build(rng: random.Random) -> Messages:
    verb = rng.choice(("Write", "Implement", "Build", "Create", "Code", "Help me write", "I need"))
    return [{"role": "user", "content": ask(rng, f"{verb} {rng.choice(PROGRAMS)} in {rng.choice(LANGS)}.")}]


def code_thread(rng: random.Random) -> Messages:
    lang = rng.choice(LANGS)
    reply = rng.choice(("Here's one way to do it:\n\n```\nresult = process(items)\nprint(result)\n```\n\nIt runs in linear time.",
                        f"Sure. In {lang} you would wrap the call in a try block and retry on failure.",
                        "You can do this with a small helper function that takes the list and returns a new one."))
    messages = turns(rng, f"How do I {rng.choice(HOWTOS)} in {lang}?", reply)
    messages[-1]["content"] = rng.choice(("Now make it handle empty input.", "Can you add unit tests for it?",
                                          "Why did you use a loop there?", "Rewrite it without the library.",
                                          "It fails with a type error, what's wrong?", "Make it async, please."))
    return messages


# reasoning -----------------------------------------------------------------------------------
RIDDLES = (
    "A farmer must take a wolf, a goat and a cabbage across a river in a boat that holds one of them at a time. "
    "How does he do it?",
    "On an island, knights always tell the truth and knaves always lie. A says: 'We are both knaves.' What are A and B?",
    "You have two ropes that each burn for an hour, unevenly. How do you measure forty-five minutes?",
    "Three boxes are labelled apples, oranges and mixed, and every label is wrong. You may take one fruit from one box. "
    "How do you relabel them?",
    "If some doctors are musicians and no musicians are lazy, can we conclude that some doctors are not lazy?",
    "A man looks at a portrait and says: 'Brothers and sisters I have none, but that man's father is my father's son.' "
    "Who is in the portrait?",
    "Twelve coins look alike, but one is heavier or lighter. With three weighings on a balance, how do you find it?",
    "If it takes five machines five minutes to make five widgets, how long do a hundred machines take for a hundred?",
)


def reason_riddle(rng: random.Random) -> Messages:
    tail = rng.choice(("", " Explain your reasoning.", " Think it through step by step.", " Justify the answer."))
    return [{"role": "user", "content": ask(rng, rng.choice(RIDDLES) + tail)}]


def reason_math_prose(rng: random.Random) -> Messages:
    a, b, c = rng.randint(2, 9), rng.randint(10, 60), rng.randint(3, 12)
    body = rng.choice((f"What is the derivative of x^{a} times sin(x)?", "Show that the square root of 2 is irrational.",
                       f"What's the area of a triangle with sides {3 * a}, {4 * a} and {5 * a}?",
                       f"If I flip a fair coin {c} times, what is the chance of exactly {a % c} heads?",
                       f"Simplify (x^2 - {a * a}) / (x - {a}).", f"What is the greatest common divisor of {a * b} and {a * c}?",
                       f"Evaluate the integral of x^{a} from 0 to {c}.", f"Is {a * b + 1} a prime number? Why?",
                       f"A rectangle's perimeter is {2 * (b + c)} cm and its length is {b} cm. What is its area?",
                       f"Solve the system x + y = {b + c}, x - y = {b - c}.",
                       f"In how many orders can {c} different books be put on a shelf?",
                       "Prove by induction that 1 + 2 + ... + n = n(n + 1)/2.",
                       f"What is the expected value of the sum of {a} dice?"))
    return [{"role": "user", "content": ask(rng, body)}]


def reason_thread(rng: random.Random) -> Messages:
    a, b = rng.randint(3, 40), rng.randint(2, 12)
    first = f"A shop sells pens at ${b} each and gives one free for every {a % 5 + 2} bought. How much do {a} pens cost?"
    messages = turns(rng, first, f"Let's count the free pens first, then multiply the rest by ${b}.")
    messages[-1]["content"] = rng.choice((f"And if the price goes up to ${b + 3}?", "What if they buy twice as many?",
                                          "Check that again, step by step.", f"Now with {a + 7} pens?"))
    return messages


# validation only (gateway.detect.training.corpus.VALIDATION_TEMPLATES): own words and shapes, never trained on ---------
def chat_curious(rng: random.Random) -> Messages:
    body = rng.choice(("Is it true that goldfish only remember three seconds?", "Did Vikings really wear horned helmets?",
                       "Settle a debate: is a tomato a fruit or a vegetable?", "Which came first, the chicken or the egg?",
                       "Do you have a favourite word? Tell me why.", "What's the most interesting fact you know about octopuses?",
                       f"What's {rng.choice(CITIES)} famous for?", "Can you tell me a fun story about a clever fox?",
                       "What's a nice name for a grey kitten?", "Describe a perfect lazy Sunday."))
    if rng.random() < 0.5:
        return [{"role": "user", "content": ask(rng, body)}]
    return [{"role": "user", "content": "Good evening!"}, {"role": "assistant", "content": "Good evening! What's on your mind?"},
            {"role": "user", "content": body}]


def code_question(rng: random.Random) -> Messages:
    lang = rng.choice(LANGS)
    body = rng.choice((f"Why is my {lang} loop so slow on big inputs?", f"Is {lang} pass-by-value or pass-by-reference?",
                       f"What's the cleanest way to structure a {lang} project with several modules?",
                       "How do I stop my unit tests from hitting the real network?",
                       f"Why would a {lang} program print garbage characters instead of accents?",
                       f"What does it mean when the linter says a variable is shadowed in {lang}?",
                       "How should I name branches and write commit messages?",
                       f"Explain the {lang} build toolchain to someone coming from another language."))
    return [{"role": "user", "content": ask(rng, body)}]


VALIDATION: dict[str, tuple[Template, ...]] = {"chat": (chat_curious, chat_ballpark, chat_wonder),
                                                "coding": (code_question,), "reasoning": (reason_household,)}

TRAINING: dict[str, tuple[Template, ...]] = {
    "chat": (chat_question, chat_situation, chat_recommend, chat_creative, chat_edit, chat_plan, chat_opinion_open,
             chat_thread, chat_estimate, chat_what_if, chat_common_sense),
    "coding": (code_explain_term, code_howto, code_library, code_debug_prose, code_compare, code_build, code_thread),
    "reasoning": (reason_riddle, reason_math_prose, reason_thread, reason_everyday),
}
