"""A tiny BERT sentence model (random weights, a 40-word vocabulary) for semantic-search tests that need
the machinery, not the meaning. Written in the real formats: config.json, vocab.txt, model.safetensors."""

from __future__ import annotations

import json
import struct
from pathlib import Path

import numpy as np
import numpy.typing as npt

VOCAB = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", ",", ".", "-", ":", "!", "un", "##aff", "##able", "a", "the"]
VOCAB += ["retry", "backoff", "http", "calls", "flaky", "network", "database", "postgres", "security"]
VOCAB += ["row", "level", "tenant", "policy", "write", "tests", "deploy", "cluster", "kubernetes", "cafe"]
VOCAB += ["##s", "##ing", "##ed", "token", "save", "short"]
HIDDEN, HEADS, LAYERS, INNER = 8, 2, 2, 16


def write_safetensors(path: Path, tensors: dict[str, npt.NDArray[np.generic]]) -> None:
    """The safetensors layout: an 8-byte little-endian header size, a JSON header, then the raw data."""
    header: dict[str, object] = {}
    blobs: list[bytes] = []
    offset = 0
    for name, array in tensors.items():
        dtype = {np.dtype(np.float32): "F32", np.dtype(np.float16): "F16", np.dtype(np.int64): "I64"}[array.dtype]
        raw = np.ascontiguousarray(array).tobytes()
        header[name] = {"dtype": dtype, "shape": list(array.shape), "data_offsets": [offset, offset + len(raw)]}
        blobs.append(raw)
        offset += len(raw)
    encoded = json.dumps(header).encode()
    path.write_bytes(struct.pack("<Q", len(encoded)) + encoded + b"".join(blobs))


def tiny_weights(seed: int = 0, prefix: str = "") -> dict[str, npt.NDArray[np.generic]]:
    rng = np.random.default_rng(seed)

    def matrix(*shape: int) -> npt.NDArray[np.float32]:
        return (rng.standard_normal(shape) * 0.5).astype(np.float32)

    weights: dict[str, npt.NDArray[np.generic]] = {
        "embeddings.word_embeddings.weight": matrix(len(VOCAB), HIDDEN),
        "embeddings.position_embeddings.weight": matrix(64, HIDDEN),
        "embeddings.token_type_embeddings.weight": matrix(2, HIDDEN),
        "embeddings.LayerNorm.weight": np.ones(HIDDEN, np.float32),
        "embeddings.LayerNorm.bias": np.zeros(HIDDEN, np.float32),
        "embeddings.position_ids": np.arange(64, dtype=np.int64)[None],
    }
    for n in range(LAYERS):
        layer = f"encoder.layer.{n}."
        for name in ("attention.self.query", "attention.self.key", "attention.self.value", "attention.output.dense"):
            weights[layer + name + ".weight"] = matrix(HIDDEN, HIDDEN)
            weights[layer + name + ".bias"] = matrix(HIDDEN)
        weights[layer + "intermediate.dense.weight"] = matrix(INNER, HIDDEN)
        weights[layer + "intermediate.dense.bias"] = matrix(INNER)
        weights[layer + "output.dense.weight"] = matrix(HIDDEN, INNER)
        weights[layer + "output.dense.bias"] = matrix(HIDDEN)
        for norm in ("attention.output.LayerNorm", "output.LayerNorm"):
            weights[layer + norm + ".weight"] = np.ones(HIDDEN, np.float32)
            weights[layer + norm + ".bias"] = np.zeros(HIDDEN, np.float32)
    return {prefix + name: value for name, value in weights.items()}


def tiny_model(folder: Path, seed: int = 0, prefix: str = "") -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    config = {
        "model_type": "bert",
        "hidden_size": HIDDEN,
        "num_attention_heads": HEADS,
        "num_hidden_layers": LAYERS,
        "intermediate_size": INNER,
        "max_position_embeddings": 64,
        "hidden_act": "gelu",
        "layer_norm_eps": 1e-12,
    }
    (folder / "config.json").write_text(json.dumps(config), encoding="utf-8")
    (folder / "vocab.txt").write_text("\n".join(VOCAB) + "\n", encoding="utf-8")
    write_safetensors(folder / "model.safetensors", tiny_weights(seed, prefix))
    (folder / "1_Pooling").mkdir(exist_ok=True)
    (folder / "1_Pooling" / "config.json").write_text(json.dumps({"pooling_mode_mean_tokens": True}), encoding="utf-8")
    return folder
