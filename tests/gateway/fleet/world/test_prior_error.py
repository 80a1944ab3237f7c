"""The seeded error on the router's speed priors that the replay and duet bench slo give Duet."""

from __future__ import annotations

from gateway.fleet.world.prior_error import PriorError


def test_prior_errors_are_seeded_and_move_rates_and_times_apart():
    draws = [PriorError.draw(["standard", "fast"], 0.3, seed).factors for seed in range(8)]
    assert draws == [PriorError.draw(["standard", "fast"], 0.3, seed).factors for seed in range(8)]
    assert {f for d in draws for pair in d.values() for f in pair} == {0.7, 1.3}
    # any four consecutive seeds err in every combination of directions: together and apart
    directions = {(d["standard"][1] > 1, d["fast"][1] > 1) for d in draws[3:7]}
    assert len(directions) == 4
    speed = {"prefill_tokens_per_s": 1000.0, "decode_s_per_token": 0.01, "frontend_s": 0.002, "max_num_seqs": 8}
    wrong = PriorError({"fast": (2.0, 1.5)}).apply(speed, "fast")
    assert wrong == {"prefill_tokens_per_s": 500.0, "decode_s_per_token": 0.015, "frontend_s": 0.003, "max_num_seqs": 8}
    assert PriorError({"fast": (2.0, 1.5)}).apply(speed, "standard") == speed
