"""Synthesised labelled requests for the task types no public set in ``../shared/prompts`` covers
(extraction, long documents, agent turns), and more varied chat, coding and reasoning requests
beside the public ones. Each task has several templates over their own vocabularies; a sample is
``(template id, seed) -> messages``, deterministic, so the corpus splits by template as well as
by seed (``gateway.detect.corpus``)."""

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
WRITING = ("poem", "short story", "blog post", "cover letter", "toast for a wedding", "product description",
           "thank-you note", "limerick", "speech", "haiku", "apology email", "newsletter intro")


def _pick(rng: random.Random, items: tuple[str, ...], k: int = 1) -> list[str]:
    return rng.sample(items, k)


def _user(text: str, system: str | None = None) -> Messages:
    return ([{"role": "system", "content": system}] if system else []) + [{"role": "user", "content": text}]


# chat ----------------------------------------------------------------------------------------
def chat_advice(rng: random.Random) -> Messages:
    topic = rng.choice(TOPICS)
    return _user(rng.choice((f"What are some good tips for {topic}?", f"How do I get started with {topic}?",
                             f"I'm struggling with {topic}. Any advice?", f"Can you give me a few ideas about {topic}?")))


def chat_explain(rng: random.Random) -> Messages:
    topic = rng.choice(TOPICS)
    return _user(rng.choice((f"Explain {topic} to a ten-year-old.", f"Why do people care so much about {topic}?",
                             f"What are the pros and cons of {topic}?", f"Tell me something surprising about {topic}.")))


def chat_write(rng: random.Random) -> Messages:
    kind, topic = rng.choice(WRITING), rng.choice(TOPICS)
    tone = rng.choice(("funny", "heartfelt", "formal", "casual", "persuasive", "short"))
    return _user(f"Write a {tone} {kind} about {topic}.")


def chat_roleplay(rng: random.Random) -> Messages:
    who = rng.choice(("a pirate captain", "a medieval knight", "a tour guide in " + rng.choice(CITIES),
                      "a friendly barista", "a detective", "a space explorer"))
    return _user(f"Pretend you are {who}. How would you introduce yourself to {rng.choice(PEOPLE)}?",
                 system=rng.choice((None, "You are a helpful assistant.", "Stay in character.")))


def chat_smalltalk(rng: random.Random) -> Messages:
    first = rng.choice(("hi!", "Hello there", "good morning", "hey, how are you?", "thanks, that helped a lot"))
    return [{"role": "user", "content": first}, {"role": "assistant", "content": "Hello! How can I help you today?"},
            {"role": "user", "content": rng.choice((f"Recommend a book about {rng.choice(TOPICS)}.",
                                                    f"What should I do this weekend in {rng.choice(CITIES)}?",
                                                    "Can you say that more briefly?", "Tell me a joke."))}]


def chat_opinion(rng: random.Random) -> Messages:
    a, b = _pick(rng, TOPICS, 2)
    return _user(rng.choice((f"Which is more important for a happy life: {a} or {b}? Discuss.",
                             f"Compare {a} and {b} in a short paragraph.",
                             f"Do you think {a} will matter more in ten years?")))


# coding --------------------------------------------------------------------------------------
FUNCS = ("parse a date string", "merge two sorted lists", "count word frequencies in a file", "validate an email",
         "flatten a nested list", "compute a moving average", "deduplicate records by id", "retry an HTTP call",
         "read a CSV into dictionaries", "find the longest palindrome", "debounce a function", "paginate a query")
LANGS = ("Python", "JavaScript", "TypeScript", "Go", "Rust", "Java", "C++", "Bash", "SQL", "Ruby", "C#", "Kotlin")
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
    return _user(rng.choice(("Write a {l} function to {f}.", "How do I {f} in {l}?", "Implement code that can {f}, in {l}.",
                             "Give me a {l} snippet to {f}, with tests."))
                 .format(l=rng.choice(LANGS), f=rng.choice(FUNCS)))


def code_fix(rng: random.Random) -> Messages:
    fence = rng.choice(("```\n{0}\n```", "{0}", "```python\n{0}\n```"))
    ask = rng.choice(("This code has a bug, can you fix it?", "Why does this throw an error?",
                      "Explain what this code does.", "Refactor this to be more idiomatic.", "Add type hints and docs:"))
    return _user(f"{ask}\n\n" + fence.format(rng.choice(SNIPPETS)))


def code_review(rng: random.Random) -> Messages:
    lang = rng.choice(LANGS)
    return _user(f"Review this {lang} change and suggest improvements:\n" + rng.choice(SNIPPETS),
                 system=f"You are a senior {lang} engineer doing code review.")


def code_concept(rng: random.Random) -> Messages:
    return _user(rng.choice(("What is the difference between a process and a thread in {l}?",
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
    return _user(rng.choice(("I get this error, what's wrong?\n{t}", "{t}\n\nHow do I fix this?", "Help me debug:\n{t}"))
                 .format(t=trace))


def code_devops(rng: random.Random) -> Messages:
    return _user(rng.choice((
        "Write a Dockerfile for a {l} web service.", "What git command undoes my last commit but keeps the changes?",
        "Write a GitHub Actions workflow that runs the {l} tests on every push.",
        "How do I write a unit test that mocks a database call in {l}?",
        "Convert this loop into a list comprehension: for x in xs: if x > 0: out.append(x * 2)",
        "Design the classes and methods for an app that can {f}, in {l}.")).format(l=rng.choice(LANGS), f=rng.choice(FUNCS)))


# reasoning -----------------------------------------------------------------------------------
def reason_word_problem(rng: random.Random) -> Messages:
    name, item = rng.choice(PEOPLE).split()[0], rng.choice(("apples", "tickets", "books", "marbles", "stamps", "cookies"))
    a, b, c = rng.randint(3, 90), rng.randint(2, 9), rng.randint(2, 40)
    return _user(rng.choice((
        f"{name} buys {a} {item} and gives away {c}. Then she buys {b} times as many as she has left. "
        "How many does she have now?",
        f"A shop sells {item} at ${b} each. {name} spends ${a * b} and returns {c % a}. How much money did {name} get back?",
        f"If {a} workers finish a job in {b} days, how many days would {c} workers need? Show your reasoning.")))


def reason_logic(rng: random.Random) -> Messages:
    p = _pick(rng, PEOPLE, 3)
    return _user(rng.choice((
        f"{p[0]} is taller than {p[1]}, and {p[1]} is taller than {p[2]}. Who is the shortest? Explain step by step.",
        f"Exactly one of {p[0]}, {p[1]} and {p[2]} is lying. {p[0]} says {p[1]} lies; {p[1]} says {p[2]} lies. Who lies?",
        "All bloops are razzies and some razzies are lazzies. Must some bloops be lazzies? Justify your answer.")))


def reason_math(rng: random.Random) -> Messages:
    n, m = rng.randint(3, 30), rng.randint(2, 12)
    return _user(rng.choice((
        f"Prove that the sum of the first {n} odd numbers is {n}^2.", f"Solve for x: {m}x + {n} = {m * n + n}.",
        f"What is the probability of rolling at least one six in {m} throws of a fair die?",
        f"Find all integers x such that x^2 - {m + n}x + {m * n} = 0.",
        f"How many ways can {n} people sit around a round table? Think carefully.")))


def reason_estimate(rng: random.Random) -> Messages:
    a, b = rng.randint(2, 9), rng.randint(10, 99)
    return _user(rng.choice((
        f"A train leaves at {a}:15 going {b} km/h; another leaves {a} hours later at {b + 20} km/h. When does it catch up?",
        f"A tank holds {b * 10} litres and leaks {a} litres per hour while being filled at {a + 3} litres per hour. "
        "How long until it is full if it starts half full?",
        f"The price rose {b % 30}% and then fell {a * 3}%. What is the net change in percent? Work it out.")))


def reason_sequence(rng: random.Random) -> Messages:
    a, d = rng.randint(1, 20), rng.randint(2, 9)
    seq = ", ".join(str(a + d * i * i) for i in range(5))
    return _user(rng.choice((f"What number comes next in the sequence {seq}? Explain the pattern.",
                             f"A clock shows {a % 12 + 1}:{d}0. What angle do the hands make? Reason it through.",
                             f"If today is {rng.choice(('Monday', 'Thursday', 'Sunday'))}, "
                             f"what day is it {a * d} days from now?")))


# extraction ----------------------------------------------------------------------------------
def _invoice(rng: random.Random) -> str:
    lines = [f"INVOICE #{rng.randint(1000, 99999)}", f"Bill to: {rng.choice(ORGS)}, {rng.choice(CITIES)}",
             f"Date: 2025-{rng.randint(1, 12):02d}-{rng.randint(1, 28):02d}"]
    for _ in range(rng.randint(2, 6)):
        lines.append(f"{rng.choice(('Consulting', 'Licenses', 'Support', 'Hardware', 'Travel'))}  "
                     f"{rng.randint(1, 20)} x ${rng.randint(10, 900)}.00")
    return "\n".join(lines + [f"Total due: ${rng.randint(500, 20000)}.00"])


def _email(rng: random.Random) -> str:
    a, b = _pick(rng, PEOPLE, 2)
    return (f"From: {a}\nTo: {b}\nSubject: meeting in {rng.choice(CITIES)}\n\nHi {b.split()[0]},\n"
            f"Let's meet on {rng.choice(('Monday', 'Tuesday', 'Friday'))} at {rng.randint(8, 17)}:00 with "
            f"{rng.choice(ORGS)} about the contract worth ${rng.randint(5, 500)}k. Call me at "
            f"+1-555-{rng.randint(1000, 9999)}.\nBest,\n{a.split()[0]}")


def _bio(rng: random.Random) -> str:
    p = rng.choice(PEOPLE)
    return (f"{p} was born in {rng.choice(CITIES)} in {rng.randint(1950, 2000)}. After studying "
            f"{rng.choice(('law', 'chemistry', 'history', 'economics'))}, {p.split()[0]} joined {rng.choice(ORGS)} "
            f"in {rng.randint(2001, 2020)} and became its {rng.choice(('CEO', 'CFO', 'head of research'))}.")


def _statement(rng: random.Random) -> str:
    revenue = rng.randint(500, 25000)
    return (f"{rng.choice(ORGS)} reported revenue of ${revenue} million for fiscal {rng.randint(2018, 2025)}, "
            f"cost of revenue ${revenue // 2} million, operating expenses ${revenue // 6} million and a tax "
            f"charge of ${revenue // 20} million.")


DOCS = (_invoice, _email, _bio, _statement)

# More kinds of document, for the templates whose instruction is only in the system prompt (the
# user turn is the document alone): meeting notes, product listings, support tickets, bookings,
# payslips, forms and announcements train; receipts, shipping notices and job adverts are read by
# the validation template (``extract_form_fill``) only.
PRODUCTS = ("running shoes", "desk lamp", "backpack", "coffee grinder", "rain jacket", "phone case", "yoga mat", "kettle")
ACTIONS = ("send the revised budget", "book the venue", "call the supplier", "update the roadmap", "draft the press release",
           "hire a contractor", "review the safety audit")
WEEKDAYS = ("Monday", "Tuesday", "Wednesday", "Thursday", "Friday")


def _meeting_notes(rng: random.Random) -> str:
    people = _pick(rng, PEOPLE, 3)
    actions = "\n".join(f"- {p.split()[0]}: {rng.choice(ACTIONS)} by {rng.choice(WEEKDAYS)}" for p in people)
    return (f"Notes - {rng.choice(ORGS)} weekly sync, {rng.randint(1, 28)}/{rng.randint(1, 12)}\n"
            f"Present: {', '.join(people)}\nDiscussed {rng.choice(TOPICS)} and {rng.choice(TOPICS)}; "
            f"agreed to move the launch to {rng.choice(CITIES)}.\nActions:\n{actions}")


def _listing(rng: random.Random) -> str:
    price = rng.randint(9, 400)
    return (f"{rng.choice(('Altura', 'Nordkap', 'Velo', 'Kasai'))} {rng.choice(PRODUCTS)} - "
            f"{rng.choice(('black', 'sage green', 'navy', 'sand'))}, size {rng.choice(('S', 'M', 'L', 'one size'))}\n"
            f"Now ${price}.99 (was ${price + rng.randint(5, 60)}.99). {rng.randint(0, 80)} in stock, ships from "
            f"{rng.choice(CITIES)} in {rng.randint(1, 7)} days. Rated {rng.randint(30, 50) / 10} by "
            f"{rng.randint(3, 900)} buyers.")


def _ticket(rng: random.Random) -> str:
    return (f"Ticket {rng.randint(10000, 99999)} | priority {rng.choice(('low', 'normal', 'urgent'))}\n"
            f"From: {rng.choice(PEOPLE)} ({rng.choice(ORGS)})\nProduct: {rng.choice(PRODUCTS)}\n\n"
            + rng.choice(("It arrived broken and nobody answers the phone.", "I was charged twice for the same order.",
                          "The replacement you sent is the wrong size.", "Please cancel my subscription before it renews.")))


def _booking(rng: random.Random) -> str:
    nights = rng.randint(1, 9)
    return (f"Booking confirmed: {rng.choice(('Hotel Miramar', 'Parkside Inn', 'The Old Mill'))}, {rng.choice(CITIES)}\n"
            f"Guest: {rng.choice(PEOPLE)}, reference {rng.choice('ABCDEFGH')}{rng.randint(10000, 99999)}\n"
            f"Check-in {rng.choice(WEEKDAYS)} from 15:00, {nights} nights, {rng.randint(1, 4)} adults.\n"
            f"Rate ${rng.randint(60, 300)} a night, total ${rng.randint(60, 300) * nights}, free cancellation until 18:00.")


def _payslip(rng: random.Random) -> str:
    gross = rng.randint(1800, 9000)
    return (f"PAYSLIP {rng.choice(ORGS)} - period {rng.randint(1, 12):02d}/2025\nEmployee: {rng.choice(PEOPLE)} "
            f"(no. {rng.randint(100, 9999)})\nBasic pay {gross}.00\nOvertime {rng.randint(0, 40)} h {rng.randint(0, 900)}.00\n"
            f"Income tax -{gross // 5}.00\nPension -{gross // 20}.00\nNet pay {gross - gross // 4}.00")


def _record(rng: random.Random) -> str:
    """A form as a system prints it: a heading, then label: value lines in any order."""
    fields = [f"Name: {rng.choice(PEOPLE)}", f"Date: {rng.randint(1, 28)} {rng.choice(('March', 'April', 'October'))}",
              f"Location: {rng.choice(CITIES)}", f"Reference: {rng.randint(1000, 99999)}",
              f"Status: {rng.choice(('open', 'closed'))}",
              f"Department: {rng.choice(('sales', 'facilities', 'legal'))}", f"Amount: {rng.randint(10, 5000)}",
              f"Contact: +44 {rng.randint(1000, 9999)} {rng.randint(100000, 999999)}", f"Organisation: {rng.choice(ORGS)}"]
    heading = rng.choice(("INCIDENT REPORT", "Vehicle inspection", "Event registration", "Library loan", "Visitor log"))
    return heading + "\n" + "\n".join(_pick(rng, tuple(fields), rng.randint(4, len(fields))))


def _notice(rng: random.Random) -> str:
    return (f"{rng.choice(ORGS)} announced on {rng.choice(WEEKDAYS)} that {rng.choice(PEOPLE)} will lead its office in "
            f"{rng.choice(CITIES)} from {rng.randint(2025, 2027)}. The office employs {rng.randint(12, 900)} people and "
            f"opened in {rng.randint(1970, 2020)}; the move follows a {rng.randint(2, 30)}% rise in orders.")


def _receipt(rng: random.Random) -> str:
    goods = ("MILK 1L", "BREAD", "APPLES KG", "COFFEE", "SOAP", "RICE 2KG")
    items = [f"{rng.choice(goods)}  {rng.randint(1, 9)}.{rng.randint(0, 99):02d}" for _ in range(rng.randint(2, 7))]
    return (f"{rng.choice(ORGS).upper()} STORE {rng.randint(1, 99)}\n{rng.randint(1, 28):02d}.{rng.randint(1, 12):02d}.2025 "
            f"{rng.randint(7, 21)}:{rng.randint(10, 59)}\n" + "\n".join(items)
            + f"\nVAT {rng.randint(1, 20)}%\nTOTAL {rng.randint(5, 90)}.{rng.randint(0, 99):02d}"
            f"\nCARD ****{rng.randint(1000, 9999)}")


def _shipping(rng: random.Random) -> str:
    return (f"Good news, {rng.choice(PEOPLE).split()[0]}! Order {rng.randint(100000, 999999)} is on its way.\n"
            f"Carrier: {rng.choice(('DHL', 'UPS', 'PostNL', 'FedEx'))}, tracking {rng.randint(10**9, 10**10 - 1)}.\n"
            f"Arriving {rng.choice(WEEKDAYS)} between {rng.randint(8, 12)}:00 and {rng.randint(13, 18)}:00 at "
            f"{rng.randint(1, 200)} Harbour Road, {rng.choice(CITIES)}.")


def _job_post(rng: random.Random) -> str:
    return (f"{rng.choice(('Senior Accountant', 'Warehouse Lead', 'Nurse', 'Data Analyst', 'Chef'))} - {rng.choice(ORGS)}, "
            f"{rng.choice(CITIES)}\nSalary {rng.randint(30, 120)}k a year, {rng.choice(('full time', 'part time'))}.\n"
            f"You will report to {rng.choice(PEOPLE)}. Apply by {rng.randint(1, 28)} {rng.choice(('May', 'June', 'July'))}.")


def extract_json(rng: random.Random) -> Messages:
    fields = ", ".join(_pick(rng, ("name", "date", "amount", "company", "city", "phone", "total", "role", "year"), 3))
    return _user(f"Extract the following fields as JSON ({fields}) from the text below.\n\n{rng.choice(DOCS)(rng)}")


def extract_list(rng: random.Random) -> Messages:
    what = rng.choice(("all people and organisations", "every date and amount", "the line items", "all phone numbers"))
    return _user(f"{rng.choice(DOCS)(rng)}\n\nList {what} mentioned above, one per line.")


def extract_system(rng: random.Random) -> Messages:
    return _user(rng.choice(DOCS)(rng), system="You are an information extraction engine. Reply only with a JSON object "
                 "with keys: " + ", ".join(_pick(rng, ("entity", "value", "date", "currency", "location"), 3)) + ".")


def extract_instructed(rng: random.Random) -> Messages:
    fields = ", ".join(_pick(rng, ("sender", "date", "total", "names", "product", "price", "deadline", "company",
                                   "reference", "address", "quantity", "status"), 3))
    role = rng.choice(("", "You are a parser for incoming documents. ", "You work on the back office's intake queue. ",
                       "You structure text for a database. ", "You help the finance team with its paperwork. "))
    verb = rng.choice(("Read the document the user sends and return {0}", "Pull {0} out of the text that follows",
                       "Find {0} in each message", "Capture {0} from whatever the user pastes",
                       "For every item you are given, record {0}", "Turn each document into a record of {0}"))
    output = rng.choice((" as JSON, without commentary.", " as YAML.", ", one key: value per line.", " in a table.",
                         ". Use null for anything missing.", " and nothing else."))
    return _user(rng.choice((*DOCS, _meeting_notes, _listing, _ticket, _booking, _payslip, _record, _notice))(rng),
                 system=role + verb.format(fields) + output)


def extract_pipeline(rng: random.Random) -> Messages:
    system, document = rng.choice((
        ("You parse our accounts-payable inbox. Every message is an invoice: give vendor, number, due date, total.", _invoice),
        ("You process meeting notes. List each action item with its owner and deadline, one per line.", _meeting_notes),
        ("You read product listings and return title, price, colour, size and stock as JSON.", _listing),
        ("You triage support tickets: customer, product, priority and the problem in five words.", _ticket),
        ("Each user message is an email. Output sender, recipient, meeting day and any phone number.", _email),
        ("You update the travel calendar: from each confirmation take the hotel, city, dates, guests and price.", _booking),
        ("Check payslips for the payroll team: return employee, period, gross, deductions and net pay as JSON.", _payslip)))
    return _user(rng.choice(("", "", "Next one:\n", "Here it is.\n\n")) + document(rng), system=system)


def extract_form_fill(rng: random.Random) -> Messages:
    system = rng.choice(("Fill in this form from the text you receive: who, what, when, where, how much. One per line.",
                         "Act as a data-entry clerk. Copy the key facts of each document into a CSV row with a header.",
                         "Identify every date, amount and organisation in the input and return them as a JSON array."))
    return _user(rng.choice((_receipt, _shipping, _job_post, _invoice, _email))(rng), system=system)


def extract_figure(rng: random.Random) -> Messages:
    what = rng.choice(("the revenue", "the total due", "the tax charge", "the contract value"))
    return _user(f"From this statement, what is {what}? Answer with the number only.\n{rng.choice(DOCS)(rng)}")


def extract_table(rng: random.Random) -> Messages:
    rows = "\n".join(f"| {rng.choice(PEOPLE)} | {rng.choice(ORGS)} | {rng.choice(CITIES)} | {rng.randint(20, 90)} |"
                     for _ in range(rng.randint(3, 12)))
    return _user(f"| name | employer | city | age |\n|---|---|---|---|\n{rows}\n\n"
                 + rng.choice(("Convert this table to CSV.", "Return the rows for people over 40 as JSON.",
                               "Which names work in " + rng.choice(CITIES) + "? Output a list.")))


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
    return _user(f"{doc}\n\nBased on the document above, {question}")


def long_summary(rng: random.Random) -> Messages:
    doc = _document(rng, rng.randint(20, 300))
    return _user(f"Summarise the following report in {rng.randint(3, 10)} bullet points.\n\n{doc}")


def long_transcript(rng: random.Random) -> Messages:
    turns = "\n".join(f"{rng.choice(PEOPLE)}: we should revisit {rng.choice(TOPICS)} before {rng.choice(CITIES)}."
                      for _ in range(rng.randint(80, 900)))
    return _user(f"Meeting transcript:\n{turns}\n\nWhat decisions were made, and who owns each action item?",
                 system="You answer questions about long documents.")


def long_multi(rng: random.Random) -> Messages:
    docs = "\n\n".join(f"<document id={i}>\n{_document(rng, rng.randint(8, 60))}\n</document>" for i in range(rng.randint(2, 6)))
    return _user(f"{docs}\n\nCompare the documents: where do they disagree?")


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
    system = (f"You are an agent with access to the tools {', '.join(_pick(rng, TOOLS, 3))}. Call a tool when you "
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
