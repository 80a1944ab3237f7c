"""Synthesised labelled requests: the templates (``TEMPLATES``) for the task types no public set in
``../shared/prompts`` covers (extraction, long documents, agent turns), and for more varied chat,
coding and reasoning requests beside the public ones. Each task has several templates over their
own vocabularies; the extraction ones are in ``gateway.detect.training.templates.extraction``, the rest here. A
sample is ``(template id, seed) -> messages`` (``gateway.detect.training.templates.template``), deterministic, so the
corpus splits by template as well as by seed (``gateway.detect.training.corpus``)."""

from __future__ import annotations

import random

from gateway.detect.training.templates.extraction import (
    extract_figure,
    extract_form_fill,
    extract_instructed,
    extract_json,
    extract_list,
    extract_pipeline,
    extract_system,
    extract_table,
)
from gateway.detect.training.templates.template import CITIES, LANGS, ORGS, PEOPLE, TOPICS, Messages, Template, pick, user

WRITING = ("poem", "short story", "blog post", "cover letter", "toast for a wedding", "product description",
           "thank-you note", "limerick", "speech", "haiku", "apology email", "newsletter intro")


# chat ----------------------------------------------------------------------------------------
def chat_advice(rng: random.Random) -> Messages:
    topic = rng.choice(TOPICS)
    return user(rng.choice((f"What are some good tips for {topic}?", f"How do I get started with {topic}?",
                            f"I'm struggling with {topic}. Any advice?", f"Can you give me a few ideas about {topic}?")))


def chat_explain(rng: random.Random) -> Messages:
    topic = rng.choice(TOPICS)
    return user(rng.choice((f"Explain {topic} to a ten-year-old.", f"Why do people care so much about {topic}?",
                            f"What are the pros and cons of {topic}?", f"Tell me something surprising about {topic}.")))


def chat_write(rng: random.Random) -> Messages:
    kind, topic = rng.choice(WRITING), rng.choice(TOPICS)
    tone = rng.choice(("funny", "heartfelt", "formal", "casual", "persuasive", "short"))
    return user(f"Write a {tone} {kind} about {topic}.")


def chat_roleplay(rng: random.Random) -> Messages:
    who = rng.choice(("a pirate captain", "a medieval knight", "a tour guide in " + rng.choice(CITIES),
                      "a friendly barista", "a detective", "a space explorer"))
    return user(f"Pretend you are {who}. How would you introduce yourself to {rng.choice(PEOPLE)}?",
                system=rng.choice((None, "You are a helpful assistant.", "Stay in character.")))


def chat_smalltalk(rng: random.Random) -> Messages:
    first = rng.choice(("hi!", "Hello there", "good morning", "hey, how are you?", "thanks, that helped a lot"))
    return [{"role": "user", "content": first}, {"role": "assistant", "content": "Hello! How can I help you today?"},
            {"role": "user", "content": rng.choice((f"Recommend a book about {rng.choice(TOPICS)}.",
                                                    f"What should I do this weekend in {rng.choice(CITIES)}?",
                                                    "Can you say that more briefly?", "Tell me a joke."))}]


def chat_opinion(rng: random.Random) -> Messages:
    a, b = pick(rng, TOPICS, 2)
    return user(rng.choice((f"Which is more important for a happy life: {a} or {b}? Discuss.",
                            f"Compare {a} and {b} in a short paragraph.",
                            f"Do you think {a} will matter more in ten years?")))


# coding --------------------------------------------------------------------------------------
FUNCS = ("parse a date string", "merge two sorted lists", "count word frequencies in a file", "validate an email",
         "flatten a nested list", "compute a moving average", "deduplicate records by id", "retry an HTTP call",
         "read a CSV into dictionaries", "find the longest palindrome", "debounce a function", "paginate a query")
SNIPPETS = (
    "def total(items):\n    s = 0\n    for i in range(len(items)+1):\n        s += items[i]\n    return s",
    "function sum(a, b) {\n  return a + b\n}\nconsole.log(sum('1', 2))",
    "for (int i = 0; i <= n; i++) {\n    arr[i] = i * 2;\n}",
    "SELECT name, COUNT(*) FROM orders JOIN users ON orders.user_id = users.id GROUP BY name",
    "fn main() {\n    let v = vec![1, 2, 3];\n    let s: i32 = v.iter().sum();\n    println!(\"{}\", s);\n}",
    "class Stack:\n    def __init__(self):\n        self.items = []\n    def pop(self):\n        return self.items.pop()",
    "const res = await fetch(url);\nconst data = res.json();\nreturn data.items.map(x => x.id);",
    "import pandas as pd\ndf = pd.read_csv('a.csv')\ndf.groupby('k').sum().plot()",
)


def code_write(rng: random.Random) -> Messages:
    return user(rng.choice(("Write a {l} function to {f}.", "How do I {f} in {l}?", "Implement code that can {f}, in {l}.",
                            "Give me a {l} snippet to {f}, with tests."))
                .format(l=rng.choice(LANGS), f=rng.choice(FUNCS)))


def code_fix(rng: random.Random) -> Messages:
    fence = rng.choice(("```\n{0}\n```", "{0}", "```python\n{0}\n```"))
    ask = rng.choice(("This code has a bug, can you fix it?", "Why does this throw an error?",
                      "Explain what this code does.", "Refactor this to be more idiomatic.", "Add type hints and docs:"))
    return user(f"{ask}\n\n" + fence.format(rng.choice(SNIPPETS)))


def code_review(rng: random.Random) -> Messages:
    lang = rng.choice(LANGS)
    return user(f"Review this {lang} change and suggest improvements:\n" + rng.choice(SNIPPETS),
                system=f"You are a senior {lang} engineer doing code review.")


def code_concept(rng: random.Random) -> Messages:
    return user(rng.choice(("What is the difference between a process and a thread in {l}?",
                            "How does garbage collection work in {l}?", "Write a regular expression that matches {f}.",
                            "What's the time complexity of an algorithm to {f}? Show the code.",
                            "My {l} build fails with 'undefined reference to main'. What does the compiler mean?"))
                .format(l=rng.choice(LANGS), f=rng.choice(FUNCS)))


def code_error(rng: random.Random) -> Messages:
    trace = rng.choice((
        "Traceback (most recent call last):\n  File \"app.py\", line 42, in <module>\n    main()\nKeyError: 'user_id'",
        "TypeError: Cannot read properties of undefined (reading 'map')\n    at render (index.js:17:9)",
        "error[E0382]: borrow of moved value: `v`\n --> src/main.rs:5:20",
        "java.lang.NullPointerException\n\tat com.example.Service.run(Service.java:88)",
        "segmentation fault (core dumped) ./a.out"))
    return user(rng.choice(("I get this error, what's wrong?\n{t}", "{t}\n\nHow do I fix this?", "Help me debug:\n{t}"))
                .format(t=trace))


def code_devops(rng: random.Random) -> Messages:
    return user(rng.choice((
        "Write a Dockerfile for a {l} web service.", "What git command undoes my last commit but keeps the changes?",
        "Write a GitHub Actions workflow that runs the {l} tests on every push.",
        "How do I write a unit test that mocks a database call in {l}?",
        "Convert this loop into a list comprehension: for x in xs: if x > 0: out.append(x * 2)",
        "Design the classes and methods for an app that can {f}, in {l}.")).format(l=rng.choice(LANGS), f=rng.choice(FUNCS)))


# reasoning -----------------------------------------------------------------------------------
def reason_word_problem(rng: random.Random) -> Messages:
    name, item = rng.choice(PEOPLE).split()[0], rng.choice(("apples", "tickets", "books", "marbles", "stamps", "cookies"))
    a, b, c = rng.randint(3, 90), rng.randint(2, 9), rng.randint(2, 40)
    return user(rng.choice((
        f"{name} buys {a} {item} and gives away {c}. Then she buys {b} times as many as she has left. "
        "How many does she have now?",
        f"A shop sells {item} at ${b} each. {name} spends ${a * b} and returns {c % a}. How much money did {name} get back?",
        f"If {a} workers finish a job in {b} days, how many days would {c} workers need? Show your reasoning.")))


def reason_logic(rng: random.Random) -> Messages:
    p = pick(rng, PEOPLE, 3)
    return user(rng.choice((
        f"{p[0]} is taller than {p[1]}, and {p[1]} is taller than {p[2]}. Who is the shortest? Explain step by step.",
        f"Exactly one of {p[0]}, {p[1]} and {p[2]} is lying. {p[0]} says {p[1]} lies; {p[1]} says {p[2]} lies. Who lies?",
        "All bloops are razzies and some razzies are lazzies. Must some bloops be lazzies? Justify your answer.")))


def reason_math(rng: random.Random) -> Messages:
    n, m = rng.randint(3, 30), rng.randint(2, 12)
    return user(rng.choice((
        f"Prove that the sum of the first {n} odd numbers is {n}^2.", f"Solve for x: {m}x + {n} = {m * n + n}.",
        f"What is the probability of rolling at least one six in {m} throws of a fair die?",
        f"Find all integers x such that x^2 - {m + n}x + {m * n} = 0.",
        f"How many ways can {n} people sit around a round table? Think carefully.")))


def reason_estimate(rng: random.Random) -> Messages:
    a, b = rng.randint(2, 9), rng.randint(10, 99)
    return user(rng.choice((
        f"A train leaves at {a}:15 going {b} km/h; another leaves {a} hours later at {b + 20} km/h. When does it catch up?",
        f"A tank holds {b * 10} litres and leaks {a} litres per hour while being filled at {a + 3} litres per hour. "
        "How long until it is full if it starts half full?",
        f"The price rose {b % 30}% and then fell {a * 3}%. What is the net change in percent? Work it out.")))


def reason_sequence(rng: random.Random) -> Messages:
    a, d = rng.randint(1, 20), rng.randint(2, 9)
    seq = ", ".join(str(a + d * i * i) for i in range(5))
    return user(rng.choice((f"What number comes next in the sequence {seq}? Explain the pattern.",
                            f"A clock shows {a % 12 + 1}:{d}0. What angle do the hands make? Reason it through.",
                            f"If today is {rng.choice(('Monday', 'Thursday', 'Sunday'))}, "
                            f"what day is it {a * d} days from now?")))


# long context --------------------------------------------------------------------------------
def _document(rng: random.Random, paragraphs: int) -> str:
    out = []
    for i in range(paragraphs):
        topic, org, city = rng.choice(TOPICS), rng.choice(ORGS), rng.choice(CITIES)
        out.append(f"Section {i + 1}. In {rng.randint(1990, 2025)}, {org} in {city} studied {topic}. "
                   f"{rng.choice(PEOPLE)} noted that {topic} changed how staff worked, while the board "
                   f"approved a budget of {rng.randint(1, 90)} million for {rng.choice(TOPICS)}. "
                   f"The report lists {rng.randint(2, 40)} findings and {rng.randint(1, 9)} open questions.")
    return "\n\n".join(out)


def long_qa(rng: random.Random) -> Messages:
    doc = _document(rng, rng.randint(20, 300))
    question = rng.choice(("which organisation approved the largest budget?", "who is quoted in section 7?",
                           "how many findings does the report list in total?"))
    return user(f"{doc}\n\nBased on the document above, {question}")


def long_summary(rng: random.Random) -> Messages:
    doc = _document(rng, rng.randint(20, 300))
    return user(f"Summarise the following report in {rng.randint(3, 10)} bullet points.\n\n{doc}")


def long_transcript(rng: random.Random) -> Messages:
    turns = "\n".join(f"{rng.choice(PEOPLE)}: we should revisit {rng.choice(TOPICS)} before {rng.choice(CITIES)}."
                      for _ in range(rng.randint(80, 900)))
    return user(f"Meeting transcript:\n{turns}\n\nWhat decisions were made, and who owns each action item?",
                system="You answer questions about long documents.")


def long_multi(rng: random.Random) -> Messages:
    docs = "\n\n".join(f"<document id={i}>\n{_document(rng, rng.randint(8, 60))}\n</document>" for i in range(rng.randint(2, 6)))
    return user(f"{docs}\n\nCompare the documents: where do they disagree?")


# agent ---------------------------------------------------------------------------------------
TOOLS = ("get_weather", "search_flights", "lookup_order", "run_sql", "read_file", "send_email", "get_stock_price")


def _tool_turn(rng: random.Random, ask: str) -> Messages:
    tool, call_id = rng.choice(TOOLS), f"call_{rng.randint(1000, 9999)}"
    args = f'{{"query": "{rng.choice(CITIES)}", "limit": {rng.randint(1, 10)}}}'
    result = rng.choice((f'{{"status": "ok", "items": [{rng.randint(1, 500)}, {rng.randint(1, 500)}]}}',
                         f'{{"temperature": {rng.randint(-5, 35)}, "unit": "C"}}', "ERROR: timeout after 30s",
                         f"order {rng.randint(100, 999)} shipped on 2025-0{rng.randint(1, 9)}-1{rng.randint(0, 9)}"))
    return [{"role": "user", "content": ask},
            {"role": "assistant", "content": None,
             "tool_calls": [{"id": call_id, "type": "function", "function": {"name": tool, "arguments": args}}]},
            {"role": "tool", "tool_call_id": call_id, "content": result}]


def agent_result(rng: random.Random) -> Messages:
    return _tool_turn(rng, rng.choice((f"What's the weather in {rng.choice(CITIES)}?", "Where is my order?",
                                       f"Find me a flight to {rng.choice(CITIES)} next week.")))


def agent_followup(rng: random.Random) -> Messages:
    messages = _tool_turn(rng, f"Check the status of {rng.choice(ORGS)}'s account.")
    return [*messages, {"role": "assistant", "content": "Done. Anything else?"},
            {"role": "user", "content": rng.choice(("Now email that to my manager.", "Do the same for last month.",
                                                     "Call the tool again with a bigger limit."))}]


def agent_system(rng: random.Random) -> Messages:
    system = (f"You are an agent with access to the tools {', '.join(pick(rng, TOOLS, 3))}. Call a tool when you "
              "need data, then answer the user.")
    return [{"role": "system", "content": system}, *_tool_turn(rng, f"Plan my trip to {rng.choice(CITIES)}.")]


def agent_multi(rng: random.Random) -> Messages:
    first = _tool_turn(rng, f"Compare prices for {rng.choice(ORGS)} and {rng.choice(ORGS)}.")
    second = _tool_turn(rng, "And the other one?")[1:]
    return [*first, *second]


def agent_legacy(rng: random.Random) -> Messages:
    name = rng.choice(TOOLS)
    return [{"role": "user", "content": f"Use {name} for {rng.choice(CITIES)}."},
            {"role": "assistant", "content": None, "function_call": {"name": name, "arguments": "{}"}},
            {"role": "function", "name": name, "content": f'{{"result": {rng.randint(1, 999)}}}'}]


TEMPLATES: dict[str, tuple[Template, ...]] = {
    "chat": (chat_advice, chat_explain, chat_write, chat_roleplay, chat_smalltalk, chat_opinion),
    "coding": (code_write, code_fix, code_review, code_concept, code_error, code_devops),
    "reasoning": (reason_word_problem, reason_logic, reason_math, reason_estimate, reason_sequence),
    "extraction": (extract_json, extract_list, extract_system, extract_figure, extract_table, extract_instructed,
                   extract_pipeline, extract_form_fill),
    "long-context": (long_qa, long_summary, long_transcript, long_multi),
    "agent": (agent_result, agent_followup, agent_system, agent_multi, agent_legacy),
}
