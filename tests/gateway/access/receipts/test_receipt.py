"""A request's savings receipt, against figures worked by hand from the step model: standard's
counterfactual of a request standard served is its actual; a fast request's saving is the step
model's difference; a per-token-priced variant is charged its price."""

from __future__ import annotations

import pytest

from gateway.access.receipts.receipt import Receipt, receipt_for, standard_of
from gateway.cost import CHARGEBACK_BATCH, Price, ReplicaCost
from gateway.domain import Variant, VariantKind
from gateway.speed import SpeedPrior

# Standard: 1000 prompt tokens/s, 20 ms per token at batch 1, each sequence adds 2% of that:
# a step of 32 sequences is 0.02 + 0.0004 x 32 = 0.0328 s, so an output token's share is 0.001025 s.
STANDARD_SPEED = SpeedPrior(prefill_tokens_per_s=1000, decode_s_per_token=0.02, decode_slowdown_per_seq=0.02)
# Fast: 2000 prompt tokens/s, 10 ms: a step of 32 is 0.01 + 0.0002 x 32 = 0.0164 s, 0.0005125 s a token.
FAST_SPEED = SpeedPrior(prefill_tokens_per_s=2000, decode_s_per_token=0.01, decode_slowdown_per_seq=0.02)


PRICE = Price(1.0, 2.0)


def variant(name: str, kind: VariantKind, speed: SpeedPrior, cost: ReplicaCost | None,
            price: Price = PRICE) -> Variant:
    return Variant("m", name, kind, f"m-{name}", 4096, True, price, speed, replica_cost=cost)


STANDARD = variant("standard", VariantKind.FULL, STANDARD_SPEED, ReplicaCost(4, 3.6))  # $0.001 per GPU-second
FAST = variant("fast", VariantKind.QUANTIZED, FAST_SPEED, ReplicaCost(1, 3.6))


def test_the_reference_batch_is_the_chargebacks() -> None:
    assert CHARGEBACK_BATCH == 32  # the hand-worked figures above assume it


def test_a_request_standard_served_is_its_own_counterfactual() -> None:
    # 1000 prompt tokens: 1 s; 100 output tokens: 0.1025 s; 4 GPUs: 4.41 GPU-s, $0.00441.
    receipt = receipt_for(STANDARD, STANDARD, "chat", 1000, 100)
    assert receipt == Receipt(4_410_000, 4_410_000, 4_410_000, 4_410_000, fast=False)
    assert receipt.saved_nano_usd == 0


def test_a_fast_requests_saving_is_the_step_models_difference() -> None:
    # Fast: 0.5 s prefill + 100 x 0.0005125 s = 0.55125 s on 1 GPU; standard as above.
    receipt = receipt_for(FAST, STANDARD, "chat", 1000, 100)
    assert receipt == Receipt(551_250, 551_250, 4_410_000, 4_410_000, fast=True)
    assert receipt.saved_nano_usd == 4_410_000 - 551_250
    expected_s = 4 * STANDARD_SPEED.replica_s(1000, 100, "chat", 32) - FAST_SPEED.replica_s(1000, 100, "chat", 32)
    assert (receipt.standard_gpu_us - receipt.gpu_us) / 1e6 == pytest.approx(expected_s, abs=1e-6)


def test_speculation_divides_an_output_tokens_share_by_the_tokens_a_step_yields_on_its_task() -> None:
    speculative = SpeedPrior(prefill_tokens_per_s=1000, decode_s_per_token=0.02, decode_slowdown_per_seq=0.02,
                             tokens_per_step=(("code", 2.0), ("default", 1.0)))
    spec = variant("spec", VariantKind.SPECULATIVE, speculative, ReplicaCost(1, 3.6))
    code, chat = (receipt_for(spec, STANDARD, task, 0, 1000) for task in ("code", "chat"))
    assert (code.gpu_us, chat.gpu_us) == (512_500, 1_025_000)


def test_a_variant_priced_per_token_is_charged_its_price_on_one_gpu() -> None:
    priced = variant("fast", VariantKind.QUANTIZED, FAST_SPEED, None)
    receipt = receipt_for(priced, STANDARD, "chat", 1000, 100)
    assert receipt.gpu_us == 551_250
    assert receipt.nano_usd == 1_200_000  # 1000 x $1/M + 100 x $2/M = $0.0012


def test_a_failed_request_costs_nothing_but_counts_where_it_went() -> None:
    assert receipt_for(FAST, STANDARD, "chat", 0, 0) == Receipt(0, 0, 0, 0, fast=True)


def test_a_model_without_a_standard_variant_is_its_own_counterfactual() -> None:
    receipt = receipt_for(FAST, None, "chat", 1000, 100)
    assert (receipt.standard_gpu_us, receipt.standard_nano_usd) == (receipt.gpu_us, receipt.nano_usd)
    assert standard_of([FAST]) is None and standard_of([FAST, STANDARD]) is STANDARD


def test_the_chargeback_prices_an_output_token_at_the_same_share() -> None:
    price = ReplicaCost(1, 3600.0).chargeback(STANDARD_SPEED)  # $1 per replica-second: prices read as seconds
    assert price == Price(1000.0, 1025.0)
