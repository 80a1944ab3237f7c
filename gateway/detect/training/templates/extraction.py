"""Extraction requests: an instruction to pull fields, lists or figures out of a document
(``gateway.detect.training.templates.documents``) or a table, given beside it in the user turn or, for
``extract_system``, ``extract_instructed``, ``extract_pipeline`` and ``extract_form_fill``, only
in the system prompt, the user turn being the document alone."""

from __future__ import annotations

import random

from gateway.detect.training.templates.documents import (
    DOCS,
    booking,
    email,
    invoice,
    job_post,
    listing,
    meeting_notes,
    notice,
    payslip,
    receipt,
    record,
    shipping,
    ticket,
)
from gateway.detect.training.templates.template import CITIES, ORGS, PEOPLE, Messages, pick, user


def extract_json(rng: random.Random) -> Messages:
    fields = ", ".join(pick(rng, ("name", "date", "amount", "company", "city", "phone", "total", "role", "year"), 3))
    return user(f"Extract the following fields as JSON ({fields}) from the text below.\n\n{rng.choice(DOCS)(rng)}")


def extract_list(rng: random.Random) -> Messages:
    what = rng.choice(("all people and organisations", "every date and amount", "the line items", "all phone numbers"))
    return user(f"{rng.choice(DOCS)(rng)}\n\nList {what} mentioned above, one per line.")


def extract_system(rng: random.Random) -> Messages:
    return user(rng.choice(DOCS)(rng), system="You are an information extraction engine. Reply only with a JSON object "
                "with keys: " + ", ".join(pick(rng, ("entity", "value", "date", "currency", "location"), 3)) + ".")


def extract_instructed(rng: random.Random) -> Messages:
    fields = ", ".join(pick(rng, ("sender", "date", "total", "names", "product", "price", "deadline", "company",
                                  "reference", "address", "quantity", "status"), 3))
    role = rng.choice(("", "You are a parser for incoming documents. ", "You work on the back office's intake queue. ",
                       "You structure text for a database. ", "You help the finance team with its paperwork. "))
    verb = rng.choice(("Read the document the user sends and return {0}", "Pull {0} out of the text that follows",
                       "Find {0} in each message", "Capture {0} from whatever the user pastes",
                       "For every item you are given, record {0}", "Turn each document into a record of {0}"))
    output = rng.choice((" as JSON, without commentary.", " as YAML.", ", one key: value per line.", " in a table.",
                         ". Use null for anything missing.", " and nothing else."))
    return user(rng.choice((*DOCS, meeting_notes, listing, ticket, booking, payslip, record, notice))(rng),
                system=role + verb.format(fields) + output)


def extract_pipeline(rng: random.Random) -> Messages:
    system, document = rng.choice((
        ("You parse our accounts-payable inbox. Every message is an invoice: give vendor, number, due date, total.", invoice),
        ("You process meeting notes. List each action item with its owner and deadline, one per line.", meeting_notes),
        ("You read product listings and return title, price, colour, size and stock as JSON.", listing),
        ("You triage support tickets: customer, product, priority and the problem in five words.", ticket),
        ("Each user message is an email. Output sender, recipient, meeting day and any phone number.", email),
        ("You update the travel calendar: from each confirmation take the hotel, city, dates, guests and price.", booking),
        ("Check payslips for the payroll team: return employee, period, gross, deductions and net pay as JSON.", payslip)))
    return user(rng.choice(("", "", "Next one:\n", "Here it is.\n\n")) + document(rng), system=system)


def extract_form_fill(rng: random.Random) -> Messages:
    system = rng.choice(("Fill in this form from the text you receive: who, what, when, where, how much. One per line.",
                         "Act as a data-entry clerk. Copy the key facts of each document into a CSV row with a header.",
                         "Identify every date, amount and organisation in the input and return them as a JSON array."))
    return user(rng.choice((receipt, shipping, job_post, invoice, email))(rng), system=system)


def extract_figure(rng: random.Random) -> Messages:
    what = rng.choice(("the revenue", "the total due", "the tax charge", "the contract value"))
    return user(f"From this statement, what is {what}? Answer with the number only.\n{rng.choice(DOCS)(rng)}")


def extract_table(rng: random.Random) -> Messages:
    rows = "\n".join(f"| {rng.choice(PEOPLE)} | {rng.choice(ORGS)} | {rng.choice(CITIES)} | {rng.randint(20, 90)} |"
                     for _ in range(rng.randint(3, 12)))
    return user(f"| name | employer | city | age |\n|---|---|---|---|\n{rows}\n\n"
                + rng.choice(("Convert this table to CSV.", "Return the rows for people over 40 as JSON.",
                              "Which names work in " + rng.choice(CITIES) + "? Output a list.")))

