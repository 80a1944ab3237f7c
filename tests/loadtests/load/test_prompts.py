import pytest
from tokenizers import Tokenizer, models, pre_tokenizers

from gateway.tokens import ApproxTokenCounter
from loadtests.load.prompts import synthesizer


@pytest.mark.parametrize("tokens", [1, 13, 1469, 7437])
@pytest.mark.parametrize("style", ["code", "prose"])
def test_approximate_prompts_count_as_the_gateway_counts(tokens, style):
    text = synthesizer().text(tokens, style, seed=tokens)
    assert ApproxTokenCounter().count_text(text) == tokens


def test_prompts_differ_from_their_first_characters_by_seed():
    synth = synthesizer()
    first, second = synth.text(500, "prose", seed=1), synth.text(500, "prose", seed=2)
    assert first[:16] != second[:16]  # no shared prefix for a replica's prefix cache
    assert synth.text(500, "prose", seed=1) == first  # deterministic


def test_a_tokenizer_json_gives_exact_token_counts(tmp_path):
    # A word-level tokenizer that round-trips its own decoded text, as byte-level BPE does.
    vocab = {"[UNK]": 0, **{w: i + 1 for i, w in enumerate(
        "the system report customer order shipping delay question answer data we should consider whether policy "
        "changes after review of meeting notes please summarize main points and list next steps for team budget "
        "quarter results improved because new process reduced errors [ ] 0 1 2 3 4 5 6 7 8 9".split())}}
    tokenizer = Tokenizer(models.WordLevel(vocab, unk_token="[UNK]"))
    tokenizer.pre_tokenizer = pre_tokenizers.Whitespace()
    path = tmp_path / "tokenizer.json"
    tokenizer.save(str(path))
    synth = synthesizer(str(path))
    for tokens in (5, 120):
        text = synth.text(tokens, "prose", seed=3)
        assert len(tokenizer.encode(text, add_special_tokens=False).ids) == tokens
        assert synth.counter.count_text(text) == tokens
