"""The documents the extraction templates read (``gateway.detect.training.templates.extraction``), each
``(rng) -> text``, and the words only they use: invoices, emails, biographies and financial
statements (``DOCS``) for the first templates; the kinds below ``DOCS`` for the templates whose
instruction is only in the system prompt."""

from __future__ import annotations

import random

from gateway.detect.training.templates.template import CITIES, ORGS, PEOPLE, TOPICS, pick


def invoice(rng: random.Random) -> str:
    lines = [f"INVOICE #{rng.randint(1000, 99999)}", f"Bill to: {rng.choice(ORGS)}, {rng.choice(CITIES)}",
             f"Date: 2025-{rng.randint(1, 12):02d}-{rng.randint(1, 28):02d}"]
    for _ in range(rng.randint(2, 6)):
        lines.append(f"{rng.choice(('Consulting', 'Licenses', 'Support', 'Hardware', 'Travel'))}  "
                     f"{rng.randint(1, 20)} x ${rng.randint(10, 900)}.00")
    return "\n".join(lines + [f"Total due: ${rng.randint(500, 20000)}.00"])


def email(rng: random.Random) -> str:
    a, b = pick(rng, PEOPLE, 2)
    return (f"From: {a}\nTo: {b}\nSubject: meeting in {rng.choice(CITIES)}\n\nHi {b.split()[0]},\n"
            f"Let's meet on {rng.choice(('Monday', 'Tuesday', 'Friday'))} at {rng.randint(8, 17)}:00 with "
            f"{rng.choice(ORGS)} about the contract worth ${rng.randint(5, 500)}k. Call me at "
            f"+1-555-{rng.randint(1000, 9999)}.\nBest,\n{a.split()[0]}")


def bio(rng: random.Random) -> str:
    p = rng.choice(PEOPLE)
    return (f"{p} was born in {rng.choice(CITIES)} in {rng.randint(1950, 2000)}. After studying "
            f"{rng.choice(('law', 'chemistry', 'history', 'economics'))}, {p.split()[0]} joined {rng.choice(ORGS)} "
            f"in {rng.randint(2001, 2020)} and became its {rng.choice(('CEO', 'CFO', 'head of research'))}.")


def statement(rng: random.Random) -> str:
    revenue = rng.randint(500, 25000)
    return (f"{rng.choice(ORGS)} reported revenue of ${revenue} million for fiscal {rng.randint(2018, 2025)}, "
            f"cost of revenue ${revenue // 2} million, operating expenses ${revenue // 6} million and a tax "
            f"charge of ${revenue // 20} million.")


DOCS = (invoice, email, bio, statement)

# More kinds of document, for the templates whose instruction is only in the system prompt (the
# user turn is the document alone): meeting notes, product listings, support tickets, bookings,
# payslips, forms and announcements train; receipts, shipping notices and job adverts are read by
# the validation template (``extraction.extract_form_fill``) only.
PRODUCTS = ("running shoes", "desk lamp", "backpack", "coffee grinder", "rain jacket", "phone case", "yoga mat", "kettle")
ACTIONS = ("send the revised budget", "book the venue", "call the supplier", "update the roadmap", "draft the press release",
           "hire a contractor", "review the safety audit")
WEEKDAYS = ("Monday", "Tuesday", "Wednesday", "Thursday", "Friday")


def meeting_notes(rng: random.Random) -> str:
    people = pick(rng, PEOPLE, 3)
    actions = "\n".join(f"- {p.split()[0]}: {rng.choice(ACTIONS)} by {rng.choice(WEEKDAYS)}" for p in people)
    return (f"Notes - {rng.choice(ORGS)} weekly sync, {rng.randint(1, 28)}/{rng.randint(1, 12)}\n"
            f"Present: {', '.join(people)}\nDiscussed {rng.choice(TOPICS)} and {rng.choice(TOPICS)}; "
            f"agreed to move the launch to {rng.choice(CITIES)}.\nActions:\n{actions}")


def listing(rng: random.Random) -> str:
    price = rng.randint(9, 400)
    return (f"{rng.choice(('Altura', 'Nordkap', 'Velo', 'Kasai'))} {rng.choice(PRODUCTS)} - "
            f"{rng.choice(('black', 'sage green', 'navy', 'sand'))}, size {rng.choice(('S', 'M', 'L', 'one size'))}\n"
            f"Now ${price}.99 (was ${price + rng.randint(5, 60)}.99). {rng.randint(0, 80)} in stock, ships from "
            f"{rng.choice(CITIES)} in {rng.randint(1, 7)} days. Rated {rng.randint(30, 50) / 10} by "
            f"{rng.randint(3, 900)} buyers.")


def ticket(rng: random.Random) -> str:
    return (f"Ticket {rng.randint(10000, 99999)} | priority {rng.choice(('low', 'normal', 'urgent'))}\n"
            f"From: {rng.choice(PEOPLE)} ({rng.choice(ORGS)})\nProduct: {rng.choice(PRODUCTS)}\n\n"
            + rng.choice(("It arrived broken and nobody answers the phone.", "I was charged twice for the same order.",
                          "The replacement you sent is the wrong size.", "Please cancel my subscription before it renews.")))


def booking(rng: random.Random) -> str:
    nights = rng.randint(1, 9)
    return (f"Booking confirmed: {rng.choice(('Hotel Miramar', 'Parkside Inn', 'The Old Mill'))}, {rng.choice(CITIES)}\n"
            f"Guest: {rng.choice(PEOPLE)}, reference {rng.choice('ABCDEFGH')}{rng.randint(10000, 99999)}\n"
            f"Check-in {rng.choice(WEEKDAYS)} from 15:00, {nights} nights, {rng.randint(1, 4)} adults.\n"
            f"Rate ${rng.randint(60, 300)} a night, total ${rng.randint(60, 300) * nights}, free cancellation until 18:00.")


def payslip(rng: random.Random) -> str:
    gross = rng.randint(1800, 9000)
    return (f"PAYSLIP {rng.choice(ORGS)} - period {rng.randint(1, 12):02d}/2025\nEmployee: {rng.choice(PEOPLE)} "
            f"(no. {rng.randint(100, 9999)})\nBasic pay {gross}.00\nOvertime {rng.randint(0, 40)} h {rng.randint(0, 900)}.00\n"
            f"Income tax -{gross // 5}.00\nPension -{gross // 20}.00\nNet pay {gross - gross // 4}.00")


def record(rng: random.Random) -> str:
    """A form as a system prints it: a heading, then label: value lines in any order."""
    fields = [f"Name: {rng.choice(PEOPLE)}", f"Date: {rng.randint(1, 28)} {rng.choice(('March', 'April', 'October'))}",
              f"Location: {rng.choice(CITIES)}", f"Reference: {rng.randint(1000, 99999)}",
              f"Status: {rng.choice(('open', 'closed'))}",
              f"Department: {rng.choice(('sales', 'facilities', 'legal'))}", f"Amount: {rng.randint(10, 5000)}",
              f"Contact: +44 {rng.randint(1000, 9999)} {rng.randint(100000, 999999)}", f"Organisation: {rng.choice(ORGS)}"]
    heading = rng.choice(("INCIDENT REPORT", "Vehicle inspection", "Event registration", "Library loan", "Visitor log"))
    return heading + "\n" + "\n".join(pick(rng, tuple(fields), rng.randint(4, len(fields))))


def notice(rng: random.Random) -> str:
    return (f"{rng.choice(ORGS)} announced on {rng.choice(WEEKDAYS)} that {rng.choice(PEOPLE)} will lead its office in "
            f"{rng.choice(CITIES)} from {rng.randint(2025, 2027)}. The office employs {rng.randint(12, 900)} people and "
            f"opened in {rng.randint(1970, 2020)}; the move follows a {rng.randint(2, 30)}% rise in orders.")


def receipt(rng: random.Random) -> str:
    goods = ("MILK 1L", "BREAD", "APPLES KG", "COFFEE", "SOAP", "RICE 2KG")
    items = [f"{rng.choice(goods)}  {rng.randint(1, 9)}.{rng.randint(0, 99):02d}" for _ in range(rng.randint(2, 7))]
    return (f"{rng.choice(ORGS).upper()} STORE {rng.randint(1, 99)}\n{rng.randint(1, 28):02d}.{rng.randint(1, 12):02d}.2025 "
            f"{rng.randint(7, 21)}:{rng.randint(10, 59)}\n" + "\n".join(items)
            + f"\nVAT {rng.randint(1, 20)}%\nTOTAL {rng.randint(5, 90)}.{rng.randint(0, 99):02d}"
            f"\nCARD ****{rng.randint(1000, 9999)}")


def shipping(rng: random.Random) -> str:
    return (f"Good news, {rng.choice(PEOPLE).split()[0]}! Order {rng.randint(100000, 999999)} is on its way.\n"
            f"Carrier: {rng.choice(('DHL', 'UPS', 'PostNL', 'FedEx'))}, tracking {rng.randint(10**9, 10**10 - 1)}.\n"
            f"Arriving {rng.choice(WEEKDAYS)} between {rng.randint(8, 12)}:00 and {rng.randint(13, 18)}:00 at "
            f"{rng.randint(1, 200)} Harbour Road, {rng.choice(CITIES)}.")


def job_post(rng: random.Random) -> str:
    return (f"{rng.choice(('Senior Accountant', 'Warehouse Lead', 'Nurse', 'Data Analyst', 'Chef'))} - {rng.choice(ORGS)}, "
            f"{rng.choice(CITIES)}\nSalary {rng.randint(30, 120)}k a year, {rng.choice(('full time', 'part time'))}.\n"
            f"You will report to {rng.choice(PEOPLE)}. Apply by {rng.randint(1, 28)} {rng.choice(('May', 'June', 'July'))}.")
