"""Sentence embeddings from a BERT-family sentence-transformers model, in NumPy alone.

Semantic search is optional (`semantic_model` in the config): the same model the popular
`sentence-transformers/all-MiniLM-L6-v2` packages ship, read from its folder (`config.json`,
`vocab.txt`, `model.safetensors`), with no PyTorch, no tokenizers library and no download. The
forward pass is the standard BERT encoder followed by the mean pooling and normalisation that the
model's `modules.json` declares; the tokenizer is BERT's uncased WordPiece.

Checked once against sentence-transformers 6.2.0 on PyTorch 2.13 (CPU) with all-MiniLM-L6-v2: on 181
corpus descriptions within 128 word pieces the vectors differ by at most 1.2e-7. The layers' matrices are now
held in 8 bits (Int8Rows, a quarter of the memory): each vector's cosine with that float32 one is at least 0.999.

Only NumPy is needed (`pip install 'skillshelf[semantic]'`, which adds threadpoolctl to keep NumPy's BLAS to
one thread); this module imports it, so nothing imports this module unless semantic search is on.

Speed and memory (docs/search.md, issue 25): one BLAS thread, texts batched by length, the word-embedding
table read by row from the file, the layers' matrices in 8 bits (issue 36). ONNX Runtime was measured against
this (bench/semantic_runtimes.py, bench/meaning_onnx_options.py): a faster query, but its own machinery takes
more memory than this whole encoder; NumPy stays.
"""

from __future__ import annotations

import hashlib
import json
import logging
import math
import os
import struct
import threading
import unicodedata
import weakref
from collections.abc import Callable
from pathlib import Path
from typing import Any, BinaryIO

import numpy as np
import numpy.typing as npt

from skillshelf.errors import ErrorCode, SkillshelfError

logger = logging.getLogger(__name__)
Matrix = npt.NDArray[np.float32]
WORDS = "embeddings.word_embeddings.weight"
# Longer text is cut here: the length all-MiniLM-L6-v2 was trained on, and half the cost of 256, where
# sentence-transformers cuts it. Within 128 word pieces the vectors equal sentence-transformers' (below).
MAX_TOKENS = 128
_DTYPES = {"F32": np.float32, "F16": np.float16}
_INV_SQRT2 = 1.0 / math.sqrt(2.0)  # a Python float: a NumPy float64 scalar would promote float32 arrays
# Padded word pieces per forward pass. Larger batches run BLAS faster per piece (a 12-piece query's products
# run at a fifth of the speed of 512 pieces'), but every layer's temporaries grow with them: 1,024 pieces peaked
# 36 MB higher in an embedding pass than 256, and 256 embed as fast as 512 within the noise of the 2-core machine.
BATCH_TOKENS = 256
BLAS_THREADS = 1  # see limit_blas_threads
LAYER_WEIGHTS = "int8 rows"  # how the layers' matrices are held (Int8Rows); part of the fingerprint
FEW_ROWS = 64  # see SentenceEncoder._linear
GELU_ROWS = 128  # 128 x 1536 float32: 768 KB, within a core's cache


class ModelError(SkillshelfError):
    def __init__(self, folder: Path, problem: str) -> None:
        super().__init__(
            ErrorCode.VALIDATION_ERROR,
            f"semantic_model {str(folder)!r} is not usable: {problem}. Point it at a sentence-transformers "
            "BERT model folder (config.json, vocab.txt, model.safetensors; see docs/search.md), or remove the "
            "setting to search by words alone.",
        )


def _safetensors_header(handle: BinaryIO, size: int) -> tuple[dict[str, Any], int]:
    """The header of an open .safetensors file and where its data starts."""
    start = handle.read(8)
    if len(start) < 8:
        raise ValueError("the file is too short for a safetensors header")
    (header_size,) = struct.unpack("<Q", start)
    if header_size > min(size - 8, 100_000_000):
        raise ValueError("the header size is larger than the file")
    header: Any = json.loads(handle.read(header_size))
    if not isinstance(header, dict):
        raise ValueError("the header is not a JSON object")
    return header, 8 + header_size


def read_safetensors(
    path: Path, on_disk: frozenset[str] = frozenset(), narrow: Callable[[str], bool] = lambda name: False
) -> dict[str, Matrix | StoredRows | Int8Rows]:
    """The floating-point tensors of a .safetensors file as float32 arrays; a float32 matrix with a name in
    `on_disk` stays in the file, its rows read when asked (StoredRows); a matrix whose name `narrow` accepts is
    held in 8 bits (Int8Rows), made as it is read, so the float32 copies are never all in memory at once."""
    size = path.stat().st_size
    with path.open("rb") as handle:
        header, base = _safetensors_header(handle, size)
        tensors: dict[str, Matrix | StoredRows | Int8Rows] = {}
        for name, info in header.items():
            if name == "__metadata__" or info["dtype"] not in _DTYPES:
                continue  # e.g. int64 position ids, which the forward pass does not need
            first, end = info["data_offsets"]
            if not 0 <= first <= end <= size - base:
                raise ValueError(f"tensor {name!r} lies outside the file")
            dtype = np.dtype(_DTYPES[info["dtype"]])
            if name in on_disk and dtype == np.float32 and len(info["shape"]) == 2:
                tensors[name] = StoredRows(path, base + first, (int(info["shape"][0]), int(info["shape"][1])))
                continue
            # read into aligned memory: offsets in the file need not be 4-byte aligned, and BLAS would
            # copy an unaligned matrix on every multiplication (4x slower per query)
            handle.seek(base + first)
            raw = np.fromfile(handle, dtype=dtype, count=(end - first) // dtype.itemsize)
            tensor = raw.astype(np.float32, copy=False).reshape(info["shape"])
            tensors[name] = Int8Rows(tensor) if tensor.ndim == 2 and narrow(name) else tensor
    return tensors


class Int8Rows:
    """A float32 matrix held as 8-bit integers with a scale per row (the row's largest magnitude / 127): a
    quarter of the memory. The encoder's layer weights are 42 MB as float32, 0.42x a whole words server, and
    every query reads all of them (issue 36). A product widens the integers into a float32 scratch matrix (no
    allocation: the caller's) and scales the product's columns, not the weights: 1-2 ms a query for the six
    layers, and the widened matrix stays in the CPU's cache where the float32 weights came from memory. On
    all-MiniLM-L6-v2 a vector's cosine with the float32 weights' is at least 0.999 (docs/performance.md)."""

    def __init__(self, matrix: Matrix) -> None:
        top = np.abs(matrix).max(axis=1)
        self.scale: Matrix = np.where(top > 0, top / np.float32(127), np.float32(1)).astype(np.float32)
        self.values = np.rint(matrix / self.scale[:, None]).astype(np.int8)
        self.shape: tuple[int, int] = (int(matrix.shape[0]), int(matrix.shape[1]))

    def widened(self, scratch: Matrix) -> Matrix:
        """The integers as float32 (not yet scaled), in the front of `scratch` (at least as many elements)."""
        wide = scratch[: self.values.size].reshape(self.shape)
        np.copyto(wide, self.values, casting="unsafe")
        return wide


class StoredRows:
    """A float32 matrix left in its file, rows read when asked: the word embeddings (30,522 x 384, 47 MB), of
    which a text needs a few dozen rows. Mapped instead, the rows a library's texts touch stayed resident:
    40 MB more after one embedding pass. The file stays open, so a model folder replaced while the process
    runs (`model fetch` moves the new files in) goes on giving the rows of the model that was loaded."""

    def __init__(self, path: Path, offset: int, shape: tuple[int, int]) -> None:
        self.path, self.offset, self.shape = path, offset, shape
        self._fd = os.open(path, os.O_RDONLY | getattr(os, "O_BINARY", 0))
        weakref.finalize(self, os.close, self._fd)
        self._lock = threading.Lock()  # where os.pread is missing (Windows), a seek and a read go together

    def __getitem__(self, ids: npt.NDArray[np.int64]) -> Matrix:
        unique, inverse = np.unique(ids, return_inverse=True)
        row_bytes = self.shape[1] * 4
        chunks = []
        for row in unique.tolist():
            if not 0 <= row < self.shape[0]:
                raise IndexError(f"row {row} is outside the {self.shape[0]} rows of the table")
            chunks.append(self._read(self.offset + row * row_bytes, row_bytes))
        rows = np.frombuffer(b"".join(chunks), dtype=np.float32).reshape(len(unique), self.shape[1])
        found: Matrix = rows[inverse.reshape(ids.shape)]
        return found

    def _read(self, offset: int, size: int) -> bytes:
        if hasattr(os, "pread"):
            return os.pread(self._fd, size, offset)
        with self._lock:
            os.lseek(self._fd, offset, os.SEEK_SET)
            return os.read(self._fd, size)


class WordPiece:
    """BERT's uncased tokenizer: lower-case, strip accents, split on spaces and punctuation, then the
    longest vocabulary pieces (continuations prefixed `##`)."""

    def __init__(self, vocab_file: Path) -> None:
        words = vocab_file.read_text(encoding="utf-8").split("\n")
        self.ids = {word: number for number, word in enumerate(words) if word}
        self.cls, self.sep, self.unknown = self.ids["[CLS]"], self.ids["[SEP]"], self.ids["[UNK]"]

    def encode(self, text: str, max_tokens: int = MAX_TOKENS) -> list[int]:
        pieces = [self.cls]
        # a word piece is at least one character, so a long text's tail never matters: not split at all
        for word in self._words(text[: max_tokens * 100]):
            pieces.extend(self._pieces(word))
            if len(pieces) >= max_tokens - 1:
                break
        return [*pieces[: max_tokens - 1], self.sep]

    @staticmethod
    def _words(text: str) -> list[str]:
        decomposed = unicodedata.normalize("NFD", text.lower())
        words: list[str] = []
        current: list[str] = []
        for char in decomposed:
            category = unicodedata.category(char)
            if category == "Mn":
                continue  # an accent, stripped
            if char.isspace() or category in ("Cc", "Cf") or char == "\ufffd":
                words.append("".join(current))
                current = []
            elif _is_punctuation(char) or _is_cjk(char):
                words += ["".join(current), char]
                current = []
            else:
                current.append(char)
        words.append("".join(current))
        return [word for word in words if word]

    def _pieces(self, word: str) -> list[int]:
        if len(word) > 100:
            return [self.unknown]
        found: list[int] = []
        start = 0
        while start < len(word):
            end = len(word)
            while end > start:
                piece = word[start:end] if start == 0 else "##" + word[start:end]
                if piece in self.ids:
                    found.append(self.ids[piece])
                    break
                end -= 1
            else:
                return [self.unknown]  # no piece fits: the whole word is unknown, as BERT does
            start = end
        return found


def _batches(encoded: list[list[int]], budget: int) -> list[list[int]]:
    """Row numbers of `encoded` grouped by length, each group at most `budget` padded pieces (one long
    text alone may exceed it)."""
    batches: list[list[int]] = []
    current: list[int] = []
    for row in sorted(range(len(encoded)), key=lambda r: len(encoded[r])):
        # sorted by length: this row is the longest so far, so it sets the padded width
        if current and (len(current) + 1) * len(encoded[row]) > budget:
            batches.append(current)
            current = []
        current.append(row)
    return [*batches, current] if current else batches


def _is_punctuation(char: str) -> bool:
    code = ord(char)
    if 33 <= code <= 47 or 58 <= code <= 64 or 91 <= code <= 96 or 123 <= code <= 126:
        return True
    return unicodedata.category(char).startswith("P")


def _is_cjk(char: str) -> bool:
    code = ord(char)
    return 0x4E00 <= code <= 0x9FFF or 0x3400 <= code <= 0x4DBF or 0xF900 <= code <= 0xFAFF


class SentenceEncoder:
    """Unit-length sentence vectors: BERT encoder, mean pooling over the real tokens, L2 normalisation."""

    def __init__(self, folder: Path) -> None:
        self.folder = folder
        config = _read_config(folder)
        self.layers = int(config["num_hidden_layers"])
        self.heads = int(config["num_attention_heads"])
        self.dimensions = int(config["hidden_size"])
        self.eps = float(config.get("layer_norm_eps", 1e-12))
        self.max_positions = int(config.get("max_position_embeddings", 512))
        try:
            self.tokenizer = WordPiece(folder / "vocab.txt")
        except (OSError, UnicodeDecodeError, KeyError) as exc:
            raise ModelError(folder, f"vocab.txt is missing or not a BERT vocabulary ({exc})") from exc
        try:
            tensors = _read_bert(folder / "model.safetensors")
        except (OSError, ValueError, KeyError, TypeError) as exc:
            raise ModelError(folder, f"model.safetensors is missing or unreadable ({exc})") from exc
        words = tensors.pop(WORDS, None)  # never narrowed (_layer_matrix): left on disk, read by row
        self._words = None if isinstance(words, Int8Rows) else words
        self._weights: dict[str, Matrix] = {k: v for k, v in tensors.items() if isinstance(v, np.ndarray)}
        self._layers = {k: v for k, v in tensors.items() if isinstance(v, Int8Rows)}  # the layers' matrices
        self._check_weights()
        self._scratch = max((m.values.size for m in self._layers.values()), default=0)  # elements: the largest
        self._spare: list[Matrix] = []  # scratch matrices no forward pass is using (one per pass at once)
        self.fingerprint = _fingerprint(folder)
        limit_blas_threads()

    def _check_weights(self) -> None:
        needed = ["embeddings.position_embeddings.weight"]
        needed += [f"encoder.layer.{n}.output.dense.weight" for n in range(self.layers)]
        missing = [name for name in needed if name not in self._weights and name not in self._layers]
        if self._words is None or missing:
            raise ModelError(self.folder, f"model.safetensors lacks BERT weights such as {(missing or [WORDS])[0]!r}")
        width = self._words.shape[1]
        if width != self.dimensions or self.dimensions % self.heads:
            raise ModelError(self.folder, f"hidden_size {self.dimensions} does not match the weights ({width})")

    def encode(self, texts: list[str]) -> Matrix:
        """One unit vector per text (float32, shape (len(texts), dimensions)), in the order given.

        Texts are encoded in batches of similar length (sorted by word pieces, each batch padded to its
        longest, the padding masked out), at most BATCH_TOKENS padded pieces a batch: the matrices stay
        big enough for BLAS to run near its peak and small enough to keep the memory flat. A text's
        vector does not depend on its batch (tests/library/test_semantic.py)."""
        limit = min(MAX_TOKENS, self.max_positions)
        encoded = [self.tokenizer.encode(text, limit) for text in texts]
        unit: Matrix = np.zeros((len(texts), self.dimensions), dtype=np.float32)
        for rows in _batches(encoded, BATCH_TOKENS):
            unit[rows] = self._encode_batch([encoded[row] for row in rows])
        return unit

    def _encode_batch(self, encoded: list[list[int]]) -> Matrix:
        length = max(len(ids) for ids in encoded)
        ids = np.zeros((len(encoded), length), dtype=np.int64)
        mask = np.zeros((len(encoded), length), dtype=np.float32)
        for row, token_ids in enumerate(encoded):
            ids[row, : len(token_ids)] = token_ids
            mask[row, : len(token_ids)] = 1.0
        try:  # list.pop and append are atomic: the query workers and the embedding pass each take their own
            scratch = self._spare.pop()
        except IndexError:
            scratch = np.empty(self._scratch, dtype=np.float32)
        try:
            hidden = self._forward(ids, mask, scratch)
        finally:
            self._spare.append(scratch)
        pooled = (hidden * mask[..., None]).sum(axis=1) / mask.sum(axis=1, keepdims=True)
        norms = np.linalg.norm(pooled, axis=1, keepdims=True)
        unit: Matrix = (pooled / np.maximum(norms, 1e-12)).astype(np.float32)
        return unit

    def _forward(self, ids: npt.NDArray[np.int64], mask: Matrix, scratch: Matrix) -> Matrix:
        w = self._weights
        batch, length = ids.shape
        assert self._words is not None  # _check_weights
        x = (
            self._words[ids]
            + w["embeddings.position_embeddings.weight"][:length][None]
            + w["embeddings.token_type_embeddings.weight"][0]
        )
        x = self._norm(x, "embeddings.LayerNorm")
        heads, size = self.heads, self.dimensions // self.heads
        padding = ((1.0 - mask) * np.float32(-1e9))[:, None, None, :]
        scale = np.float32(1.0 / math.sqrt(size))
        for n in range(self.layers):
            layer = f"encoder.layer.{n}."

            def split(t: Matrix) -> Matrix:
                return t.reshape(batch, length, heads, size).transpose(0, 2, 1, 3)

            query = split(self._linear(x, layer + "attention.self.query", scratch))
            key = split(self._linear(x, layer + "attention.self.key", scratch))
            value = split(self._linear(x, layer + "attention.self.value", scratch))
            scores = query @ key.transpose(0, 1, 3, 2) * scale + padding
            scores = np.exp(scores - scores.max(axis=-1, keepdims=True))
            scores /= scores.sum(axis=-1, keepdims=True)
            context = (scores @ value).transpose(0, 2, 1, 3).reshape(batch, length, self.dimensions)
            attended = self._linear(context, layer + "attention.output.dense", scratch) + x
            x = self._norm(attended, layer + "attention.output.LayerNorm")
            inner = _gelu(self._linear(x, layer + "intermediate.dense", scratch))  # a new array, changed in place
            x = self._norm(self._linear(inner, layer + "output.dense", scratch) + x, layer + "output.LayerNorm")
        return x

    def _linear(self, x: Matrix, name: str, scratch: Matrix) -> Matrix:
        # 2-D operands so NumPy calls BLAS (a batched 3-D matmul with a transposed operand does not)
        stored, bias = self._layers[name + ".weight"], self._weights[name + ".bias"]
        weight = stored.widened(scratch)
        rows = x.reshape(-1, x.shape[-1])
        # a query's few rows: OpenBLAS takes about a fifth less time with the weights as the left operand
        flat = (weight @ rows.T).T if len(rows) <= FEW_ROWS else rows @ weight.T
        flat *= stored.scale  # each output column's row scale (Int8Rows)
        return (flat + bias).reshape(*x.shape[:-1], weight.shape[0])

    def _norm(self, x: Matrix, name: str) -> Matrix:
        mean = x.mean(axis=-1, keepdims=True)
        variance = ((x - mean) ** 2).mean(axis=-1, keepdims=True)
        normed = (x - mean) / np.sqrt(variance + np.float32(self.eps))
        scaled: Matrix = normed * self._weights[name + ".weight"] + self._weights[name + ".bias"]
        return scaled


def _gelu(x: Matrix) -> Matrix:
    """BERT's exact (erf) GELU, in place, a block of rows at a time (a block stays in the CPU's cache
    through the formula's dozen passes; the whole (tokens, 1536) matrix would go to memory and back on
    each). erf by Abramowitz and Stegun 7.1.26 (error under 1.5e-7)."""
    flat = x.reshape(-1, x.shape[-1])  # a view, or a copy when x's layout needs one: either way, returned
    for start in range(0, flat.shape[0], GELU_ROWS):
        _gelu_block(flat[start : start + GELU_ROWS])
    return flat.reshape(x.shape)


def _gelu_block(x: Matrix) -> None:
    z = np.abs(x)
    z *= np.float32(_INV_SQRT2)
    t = z * np.float32(0.3275911)
    t += np.float32(1.0)
    np.reciprocal(t, out=t)
    poly = t * np.float32(1.061405429)
    for coefficient in (-1.453152027, 1.421413741, -0.284496736, 0.254829592):
        poly += np.float32(coefficient)
        poly *= t
    np.square(z, out=z)
    np.negative(z, out=z)
    np.exp(z, out=z)
    poly *= z  # 1 - erf(|x| / sqrt 2)
    np.subtract(np.float32(1.0), poly, out=poly)
    np.copysign(poly, x, out=poly)  # erf(x / sqrt 2)
    poly += np.float32(1.0)
    x *= poly
    x *= np.float32(0.5)


def limit_blas_threads() -> None:
    """Let BLAS use BLAS_THREADS threads in this process (threadpoolctl, the documented control).

    NumPy's OpenBLAS starts a thread per core for every matrix product. In a server that answers calls on
    threads of its own and embeds in the background, those threads fight over the cores: on a busy 2-core
    machine one query took p50 76 ms / p95 730 ms with 2 BLAS threads and 17 / 81 ms with one
    (docs/search.md). OpenBLAS's thread count is one for the whole process (a per-call limit would race
    between a query and the embedding pass, each restoring the other's), so it is set once, when a model
    loads: one thread, for queries and for the embedding pass alike, which leaves the other cores to
    answer calls while a library is embedded."""
    try:
        from threadpoolctl import threadpool_limits  # type: ignore[import-untyped,unused-ignore]
    except ImportError:  # an install without the extra's threadpoolctl: BLAS keeps its own default
        logger.warning("threadpoolctl is missing: searches by meaning may be slow on a busy machine")
        return
    threadpool_limits(limits=BLAS_THREADS, user_api="blas")


def _read_bert(path: Path) -> dict[str, Matrix | StoredRows | Int8Rows]:
    """A BERT checkpoint's tensors without the `bert.` prefix some carry; the word embeddings stay on disk, the
    layers' matrices are held in 8 bits."""
    tensors = read_safetensors(path, on_disk=frozenset({WORDS, "bert." + WORDS}), narrow=_layer_matrix)
    prefix = "bert." if "bert." + WORDS in tensors else ""
    return {name.removeprefix(prefix): tensor for name, tensor in tensors.items()}


def _layer_matrix(name: str) -> bool:
    return name.removeprefix("bert.").startswith("encoder.layer.")


def _read_config(folder: Path) -> dict[str, Any]:
    if not folder.is_dir():
        raise ModelError(folder, "no such folder")
    try:
        config = json.loads((folder / "config.json").read_text(encoding="utf-8"))
    except (OSError, ValueError) as exc:
        raise ModelError(folder, f"config.json is missing or not JSON ({exc})") from exc
    if not isinstance(config, dict) or config.get("model_type") != "bert":
        raise ModelError(folder, "config.json does not describe a BERT model (model_type must be 'bert')")
    if config.get("hidden_act", "gelu") != "gelu":
        raise ModelError(folder, f"hidden_act {config.get('hidden_act')!r} is not supported (only 'gelu')")
    for key in ("num_hidden_layers", "num_attention_heads", "hidden_size"):
        if not isinstance(config.get(key), int):
            raise ModelError(folder, f"config.json has no integer {key!r}")
    pooling = folder / "1_Pooling" / "config.json"
    if pooling.is_file():
        try:
            modes = json.loads(pooling.read_text(encoding="utf-8"))
        except (OSError, ValueError) as exc:
            raise ModelError(folder, f"1_Pooling/config.json is not JSON ({exc})") from exc
        if not modes.get("pooling_mode_mean_tokens", False):
            raise ModelError(folder, "its pooling is not mean pooling, the only kind supported")
    return config


def _fingerprint(folder: Path) -> str:
    """Which model made a vector: stored vectors from another model are recomputed, never mixed. The way the
    weights are held is part of it: vectors made with the float32 layers differ slightly from the 8-bit ones."""
    digest = hashlib.sha256(LAYER_WEIGHTS.encode())
    for name in ("config.json", "vocab.txt", "model.safetensors"):
        with (folder / name).open("rb") as handle:
            while chunk := handle.read(1 << 20):
                digest.update(chunk)
    return digest.hexdigest()[:16]
