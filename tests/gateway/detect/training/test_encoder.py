"""The numpy BERT encoder on a tiny random model: unit vectors, and a text's vector the same
alone as in a batch beside a longer one (padding masked out: the bug a tokenizer file that pads
to 128 by itself once caused)."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest
from tokenizers import Tokenizer, models, normalizers, pre_tokenizers
from tokenizers.processors import TemplateProcessing

from gateway.detect.training.encoder import SentenceEncoder

WORDS = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "the", "cat", "sat", "on", "mat", "a", "dog", "ran", "##s", "."]
HIDDEN, INNER, LAYERS, POSITIONS = 24, 48, 2, 32


def _safetensors(path: Path, tensors: dict[str, np.ndarray]) -> None:
    header, blobs, offset = {}, [], 0
    for name, array in tensors.items():
        data = array.astype("<f4").tobytes()
        header[name] = {"dtype": "F32", "shape": list(array.shape), "data_offsets": [offset, offset + len(data)]}
        blobs.append(data)
        offset += len(data)
    encoded = json.dumps(header).encode()
    path.write_bytes(len(encoded).to_bytes(8, "little") + encoded + b"".join(blobs))


@pytest.fixture()
def tiny(tmp_path: Path) -> Path:
    rng = np.random.default_rng(7)
    t: dict[str, np.ndarray] = {
        "embeddings.word_embeddings.weight": rng.normal(size=(len(WORDS), HIDDEN)),
        "embeddings.position_embeddings.weight": rng.normal(size=(POSITIONS, HIDDEN)),
        "embeddings.token_type_embeddings.weight": rng.normal(size=(2, HIDDEN)),
        "embeddings.LayerNorm.weight": np.ones(HIDDEN), "embeddings.LayerNorm.bias": np.zeros(HIDDEN)}
    for n in range(LAYERS):
        p = f"encoder.layer.{n}."
        for name, (rows, cols) in {"attention.self.query": (HIDDEN, HIDDEN), "attention.self.key": (HIDDEN, HIDDEN),
                                   "attention.self.value": (HIDDEN, HIDDEN), "attention.output.dense": (HIDDEN, HIDDEN),
                                   "intermediate.dense": (INNER, HIDDEN), "output.dense": (HIDDEN, INNER)}.items():
            t[p + name + ".weight"], t[p + name + ".bias"] = rng.normal(size=(rows, cols)) * 0.2, rng.normal(size=rows) * 0.1
        for norm in ("attention.output.LayerNorm", "output.LayerNorm"):
            t[p + norm + ".weight"], t[p + norm + ".bias"] = np.ones(HIDDEN), np.zeros(HIDDEN)
    _safetensors(tmp_path / "model.safetensors", t)
    tokenizer = Tokenizer(models.WordPiece({w: i for i, w in enumerate(WORDS)}, unk_token="[UNK]"))
    tokenizer.normalizer = normalizers.BertNormalizer(lowercase=True)
    tokenizer.pre_tokenizer = pre_tokenizers.BertPreTokenizer()
    tokenizer.enable_padding(length=POSITIONS)  # as the shipped file does: the encoder must undo it
    tokenizer.post_processor = TemplateProcessing(single="[CLS] $A [SEP]", special_tokens=[("[CLS]", 2), ("[SEP]", 3)])
    tokenizer.save(str(tmp_path / "tokenizer.json"))
    return tmp_path


def test_vectors_are_unit_length_and_do_not_depend_on_their_batch(tiny: Path) -> None:
    encoder = SentenceEncoder(tiny)
    alone = encoder.encode(["the cat sat"])
    beside = encoder.encode(["the cat sat", "a dog ran on the mat . the dogs ran on the mat ."])
    assert np.allclose(np.linalg.norm(beside, axis=1), 1.0, atol=1e-5)
    assert np.allclose(alone[0], beside[0], atol=1e-5)
    assert not np.allclose(beside[0], beside[1], atol=1e-2)
    assert encoder.token_ids(["the cats"])[0] == [2, 4, 5, 12, 3]
