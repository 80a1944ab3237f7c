"""The verdict book: one test per (variant, task), conclusions reported once, a lifted revocation
starting a fresh test, and records without text."""

from __future__ import annotations

from gateway.parity.sequential import Conclusion, Design
from gateway.parity.verdicts import OnlineVerdicts, PairRecord

DESIGN = Design(tolerance=0.05)


def pair(task: str = "chat", loss: bool = True, variant: str = "m:fast") -> PairRecord:
    return PairRecord(0.0, variant, task, "r", "s", "c", 1.0, 0.0 if loss else 1.0, "agreement", "F1 0.10", True,
                      12.0, 7.0)


def test_a_conclusion_is_reported_by_the_pair_that_draws_it_only():
    book = OnlineVerdicts()
    seen = [book.add(pair(), DESIGN, allowed_now=True) for _ in range(DESIGN.pairs_to_revoke() + 3)]
    assert seen.index(Conclusion.LOSS) == DESIGN.pairs_to_revoke() - 1
    assert [s for s in seen if s is not None] == [Conclusion.LOSS]
    assert book.add(pair("coding", loss=False), DESIGN, allowed_now=True) is None  # its own test
    rows = {r["task"]: r for r in book.table()}
    assert rows["chat"]["conclusion"] == "loss" and rows["chat"]["evidence_loss"] >= 1.0
    assert rows["coding"]["pairs"] == 1


def test_a_revoked_task_allowed_again_by_an_offline_run_starts_a_fresh_test():
    book = OnlineVerdicts()
    for _ in range(DESIGN.pairs_to_revoke()):
        book.add(pair(), DESIGN, allowed_now=True)
    book.add(pair(loss=False), DESIGN, allowed_now=True)  # a check that ran while the revocation was written
    assert book.state("m:fast", "chat").conclusion is Conclusion.LOSS
    book.acted("m:fast", "chat")
    book.add(pair(loss=False), DESIGN, allowed_now=False)  # pinned traffic while revoked: still revoked
    assert book.state("m:fast", "chat").conclusion is Conclusion.LOSS
    book.add(pair(loss=False), DESIGN, allowed_now=True)
    state = book.state("m:fast", "chat")
    assert state.conclusion is Conclusion.UNDECIDED and state.pairs == 1
    assert book.table()[0]["epoch"] == 1
    assert book.state("m:fast", "chat").pairs == 1


def test_evidence_has_the_test_and_recent_pairs_without_text():
    book = OnlineVerdicts(records_kept=5)
    for _ in range(8):
        book.add(pair(), DESIGN, allowed_now=True)
    evidence = book.evidence("m:fast", "chat")
    assert evidence["design"]["tolerance"] == 0.05 and evidence["state"]["pairs"] == 8
    assert len(evidence["recent_pairs"]) == 5 and all("texts" not in p for p in evidence["recent_pairs"])
