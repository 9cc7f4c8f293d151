"""NumPy against ONNX Runtime for the sentence encoder (issue 25): speed, memory and the vectors each gives.

    python bench/semantic_runtimes.py [--model DIR] [--rounds 2] [--queries 200]

skillshelf runs all-MiniLM-L6-v2 in NumPy (skillshelf.library.semantic.encoder). This measures the alternatives:
the same weights as an ONNX graph (no .onnx file ships with the model folder) run by ONNX Runtime, one thread,
the tokenizer, embeddings and pooling unchanged, three ways: the graph built in memory in the process that runs
it (`onnxruntime`); the graph written to a file by this parent and loaded by a process that never imports
`onnx` (`onnxruntime-file`, as a server that shipped the file would); and that file with its weights quantized
to 8 bits per output channel by onnxruntime.quantization (`onnxruntime-int8`: other vectors). Each runtime runs
in a process of its own, in turn, `--rounds` times: it loads the model, embeds the 966 skill texts of
../shared/corpora (name and description, as the server does), then encodes `--queries` new queries one by one;
it reports skills/s, query p50/p95, its RSS at each stage and its peak. The NumPy process also times one read of
every layer weight (a sum over each 8-bit matrix): the memory traffic a query cannot avoid with these weights.
The parent compares every runtime's vectors with NumPy's. Needs `pip install onnxruntime onnx` (not skillshelf
dependencies); figures and the decision in docs/search.md.

    python bench/semantic_runtimes.py --eval-int8 --semantic-model DIR --queries bench/queries/corpora-heldout4.txt

runs bench/eval_corpora.py (every option after --eval-int8 is its own; the graph is made from --model) with the
encoder's layers in ONNX Runtime, 8-bit weights: the held-out quality of those vectors, against the same command
run with eval_corpora.py itself.
"""

from __future__ import annotations

import argparse
import json
import math
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import numpy as np

from skillshelf.library.semantic.encoder import Matrix, SentenceEncoder, read_safetensors

HERE = Path(__file__).resolve().parent
MODEL = HERE.parent / ".cache" / "test-model" / "all-MiniLM-L6-v2"
CORPORA = HERE.parent.parent / "shared" / "corpora"
OPSET = 17  # LayerNormalization is an operator from opset 17; ONNX Runtime fuses the erf GELU by itself
# the graph file each ONNX Runtime variant loads (None: built in memory in the child)
GRAPH_FILES: dict[str, str | None] = {
    "onnxruntime": None,
    "onnxruntime-file": "encoder.onnx",
    "onnxruntime-int8": "encoder-int8.onnx",
}


def memory() -> dict[str, int]:
    """This process's RSS and peak RSS (VmHWM), in MB."""
    lines = Path("/proc/self/status").read_text(encoding="utf-8").splitlines()
    found = {line.split(":")[0]: int(line.split()[1]) // 1024 for line in lines if line.startswith(("VmRSS", "VmHWM"))}
    return {"rss_mb": found["VmRSS"], "peak_mb": found["VmHWM"]}


def onnx_session(encoder: SentenceEncoder, graph_file: Path | None = None) -> Any:
    """An ONNX Runtime session of the encoder layers (one thread, no memory arena), built in memory or read from
    `graph_file`; the NumPy copies of those weights are dropped, as a server using it would."""
    import onnxruntime as ort

    if graph_file is None:
        weights = float_weights(encoder.folder)
        graph: Any = _graph(weights, encoder.layers, encoder.heads, encoder.dimensions, encoder.eps).SerializeToString()
        del weights
    else:
        graph = str(graph_file)
    encoder._layers = {}
    options = ort.SessionOptions()
    options.intra_op_num_threads = 1
    options.inter_op_num_threads = 1
    options.enable_cpu_mem_arena = False
    return ort.InferenceSession(graph, options, providers=["CPUExecutionProvider"])


def write_graphs(model: Path, work: Path) -> None:
    """The encoder graph as a file, and a copy with 8-bit weights (dynamic quantization, per output channel)."""
    import onnx
    from onnxruntime.quantization import QuantType, quantize_dynamic

    encoder = SentenceEncoder(model)
    graph = _graph(float_weights(model), encoder.layers, encoder.heads, encoder.dimensions, encoder.eps)
    onnx.save(graph, work / "encoder.onnx")
    quantize_dynamic(work / "encoder.onnx", work / "encoder-int8.onnx", per_channel=True, weight_type=QuantType.QInt8)


def float_weights(model: Path) -> dict[str, Matrix]:
    """The model's float32 tensors, without a `bert.` prefix (the encoder holds its layers in 8 bits)."""
    tensors = read_safetensors(model / "model.safetensors")
    return {name.removeprefix("bert."): t for name, t in tensors.items() if isinstance(t, np.ndarray)}


def weight_stream_ms(encoder: SentenceEncoder, rounds: int = 50) -> float:
    """Median time to read every layer weight matrix once (a sum over each): a query's unavoidable traffic."""
    layers = [m.values for m in encoder._layers.values()]
    times = []
    for _ in range(rounds):
        started = time.perf_counter()
        for weight in layers:
            weight.sum()
        times.append((time.perf_counter() - started) * 1000)
    return round(statistics.median(times), 2)


def run_in_onnx(encoder: SentenceEncoder, session: Any) -> None:
    """Make `encoder` run its layers in `session`: embeddings and pooling stay NumPy's."""
    w, words = encoder._weights, encoder._words
    assert words is not None

    def forward(ids: Any, mask: Matrix, scratch: Matrix) -> Matrix:
        length = ids.shape[1]
        x = (
            words[ids]
            + w["embeddings.position_embeddings.weight"][:length][None]
            + w["embeddings.token_type_embeddings.weight"][0]
        )
        x = encoder._norm(x, "embeddings.LayerNorm")
        padding = np.ascontiguousarray(((1.0 - mask) * np.float32(-1e9))[:, None, None, :])
        (out,) = session.run(None, {"hidden": np.ascontiguousarray(x, dtype=np.float32), "padding": padding})
        result: Matrix = out
        return result

    encoder._forward = forward  # type: ignore[method-assign]


class _Graph:
    """Nodes and constants of the encoder graph, named after the weights they use."""

    def __init__(self, weights: dict[str, Matrix]) -> None:
        self.weights = weights
        self.nodes: list[Any] = []
        self.constants: list[Any] = []

    def constant(self, name: str, value: Any) -> str:
        from onnx import numpy_helper

        self.constants.append(numpy_helper.from_array(np.asarray(value), name))
        return name

    def node(self, op: str, inputs: list[str], output: str, **attributes: Any) -> str:
        from onnx import helper

        self.nodes.append(helper.make_node(op, inputs, [output], **attributes))
        return output

    def linear(self, x: str, name: str) -> str:
        """x @ W.T + b, W stored transposed (ONNX's MatMul takes (in, out))."""
        weight = self.constant(name + ".weight", np.ascontiguousarray(self.weights[name + ".weight"].T))
        product = self.node("MatMul", [x, weight], name + ".product")
        return self.node("Add", [product, self.constant(name + ".bias", self.weights[name + ".bias"])], name + ".out")

    def norm(self, x: str, name: str, eps: float) -> str:
        scale = self.constant(name + ".weight", self.weights[name + ".weight"])
        shift = self.constant(name + ".bias", self.weights[name + ".bias"])
        return self.node("LayerNormalization", [x, scale, shift], name + ".out", axis=-1, epsilon=eps)

    def heads(self, x: str, name: str, shape: str, perm: list[int]) -> str:
        """A projection split into heads: (batch, heads, length, size), or (batch, heads, size, length)."""
        split = self.node("Reshape", [self.linear(x, name), shape], name + ".split")
        return self.node("Transpose", [split], name + ".heads", perm=perm)

    def layer(self, x: str, n: int, heads: int, width: int, eps: float) -> str:
        p = f"encoder.layer.{n}."
        size = width // heads
        shape = self.constant(p + "split", np.array([0, 0, heads, size], dtype=np.int64))
        query = self.heads(x, p + "attention.self.query", shape, [0, 2, 1, 3])
        key = self.heads(x, p + "attention.self.key", shape, [0, 2, 3, 1])
        value = self.heads(x, p + "attention.self.value", shape, [0, 2, 1, 3])
        scores = self.node("MatMul", [query, key], p + "scores")
        scaled = self.node("Mul", [scores, self.constant(p + "scale", np.float32(1.0 / math.sqrt(size)))], p + "scaled")
        attention = self.node(
            "Softmax", [self.node("Add", [scaled, "padding"], p + "masked")], p + "attention", axis=-1
        )
        context = self.node("MatMul", [attention, value], p + "context")
        moved = self.node("Transpose", [context], p + "context.moved", perm=[0, 2, 1, 3])
        merge = self.constant(p + "merge", np.array([0, 0, width], dtype=np.int64))
        merged = self.node("Reshape", [moved, merge], p + "merged")
        attended = self.node("Add", [self.linear(merged, p + "attention.output.dense"), x], p + "residual1")
        x = self.norm(attended, p + "attention.output.LayerNorm", eps)
        output = self.node(
            "Add",
            [self.linear(self.gelu(self.linear(x, p + "intermediate.dense"), p), p + "output.dense"), x],
            p + "residual2",
        )
        return self.norm(output, p + "output.LayerNorm", eps)

    def gelu(self, x: str, p: str) -> str:
        """0.5 x (1 + erf(x / sqrt 2)), BERT's exact GELU (ONNX Runtime fuses it into one kernel)."""
        erf = self.node(
            "Erf",
            [self.node("Mul", [x, self.constant(p + "root_half", np.float32(1 / math.sqrt(2)))], p + "gelu.in")],
            p + "gelu.erf",
        )
        plus_one = self.node("Add", [erf, self.constant(p + "one", np.float32(1.0))], p + "gelu.plus")
        product = self.node("Mul", [x, plus_one], p + "gelu.product")
        return self.node("Mul", [product, self.constant(p + "half", np.float32(0.5))], p + "gelu")


def _graph(weights: dict[str, Matrix], layers: int, heads: int, width: int, eps: float) -> Any:
    import onnx
    from onnx import TensorProto, helper

    built = _Graph(weights)
    x = "hidden"
    for n in range(layers):
        x = built.layer(x, n, heads, width, eps)
    built.nodes.append(helper.make_node("Identity", [x], ["output"]))
    floats = TensorProto.FLOAT
    graph = helper.make_graph(
        built.nodes,
        "bert-encoder",
        [
            helper.make_tensor_value_info("hidden", floats, ["batch", "length", width]),
            helper.make_tensor_value_info("padding", floats, ["batch", 1, 1, "length"]),
        ],
        [helper.make_tensor_value_info("output", floats, ["batch", "length", width])],
        built.constants,
    )
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", OPSET)])
    model.ir_version = min(model.ir_version, 9)  # what ONNX Runtime releases of the last two years read
    onnx.checker.check_model(model)
    return model


def skill_texts() -> list[str]:
    """What the server embeds for each skill of the corpora (every collection a root)."""
    from skillshelf.library.index.library import LibraryConfig, SkillLibrary

    roots = sorted(p for p in CORPORA.iterdir() if p.is_dir())
    with tempfile.TemporaryDirectory() as index:
        library = SkillLibrary(LibraryConfig(roots=roots, index_dir=Path(index), watch=False))
        library.sync()
        texts = [text for _, text in library._embedding_texts()]
        library.close()
    return texts


def child(runtime: str, model: Path, work: Path, queries: int) -> dict[str, Any]:
    """One runtime in this process: load, embed every text, then encode new queries one by one."""
    sys.path.insert(0, str(HERE))
    from semantic import query_texts

    texts = json.loads((work / "texts.json").read_text(encoding="utf-8"))
    stages = {"start": memory()}
    encoder = SentenceEncoder(model)
    stream_ms = weight_stream_ms(encoder) if runtime == "numpy" else None
    if runtime != "numpy":
        run_in_onnx(encoder, onnx_session(encoder, GRAPH_FILES[runtime] and work / GRAPH_FILES[runtime]))
    stages["loaded"] = memory()
    started = time.perf_counter()
    vectors = np.vstack([encoder.encode(texts[s : s + 64]) for s in range(0, len(texts), 64)])
    rate = len(texts) / (time.perf_counter() - started)
    stages["embedded"] = memory()
    times = []
    for query in query_texts(queries):
        started = time.perf_counter()
        vectors_of_query = encoder.encode([query])
        times.append((time.perf_counter() - started) * 1000)
    stages["queried"] = memory()
    np.save(work / f"{runtime}.npy", np.vstack([vectors, vectors_of_query]))
    ordered = sorted(times)
    return {
        "skills_per_s": round(rate, 1),
        "query_p50_ms": round(ordered[len(ordered) // 2], 2),
        "query_p95_ms": round(ordered[math.ceil(len(ordered) * 0.95) - 1], 2),
        "memory": stages,
        "weight_stream_ms": stream_ms,
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--model", type=Path, default=MODEL)
    parser.add_argument("--rounds", type=int, default=2)
    parser.add_argument("--queries", type=int, default=200)
    parser.add_argument("--child", help=argparse.SUPPRESS)
    parser.add_argument("--work", type=Path, help=argparse.SUPPRESS)
    parser.add_argument(
        "--eval-int8", nargs=argparse.REMAINDER, help="bench/eval_corpora.py, these options, with 8-bit ONNX layers"
    )
    args = parser.parse_args()
    if args.eval_int8 is not None:
        eval_int8(args.model, args.eval_int8)
        return
    if args.child:
        print(json.dumps(child(args.child, args.model, args.work, args.queries)))
        return
    with tempfile.TemporaryDirectory(prefix="skillshelf-runtimes-") as scratch:
        work = Path(scratch)
        (work / "texts.json").write_text(json.dumps(skill_texts()), encoding="utf-8")
        write_graphs(args.model, work)
        runs: dict[str, list[dict[str, Any]]] = {"numpy": [], **{name: [] for name in GRAPH_FILES}}
        for _ in range(args.rounds):
            for runtime, found in runs.items():
                command = [sys.executable, __file__, "--child", runtime, "--model", str(args.model)]
                command += ["--work", str(work), "--queries", str(args.queries)]
                done = subprocess.run(command, capture_output=True, text=True, check=True)
                found.append(json.loads(done.stdout.splitlines()[-1]))
        reference = np.load(work / "numpy.npy")
        agreement = {name: _agreement(reference, np.load(work / f"{name}.npy")) for name in GRAPH_FILES}
    stream = statistics.median(r["weight_stream_ms"] for r in runs["numpy"])
    print(f"reading every layer weight once (NumPy process): {stream:.1f} ms")
    print(
        "| runtime | vectors against NumPy's | embedding (skills/s) | query p50 / p95 (ms) "
        "| RSS loaded / after embedding / peak (MB) |"
    )
    print("|---|---|---|---|---|")
    for runtime, found in runs.items():
        median = {k: statistics.median(r[k] for r in found) for k in ("skills_per_s", "query_p50_ms", "query_p95_ms")}
        last = found[-1]["memory"]
        print(
            f"| {runtime} | {agreement.get(runtime, '-')} | {median['skills_per_s']:.1f} "
            f"| {median['query_p50_ms']:.1f} / {median['query_p95_ms']:.1f} "
            f"| {last['loaded']['rss_mb']} / {last['embedded']['rss_mb']} / {last['queried']['peak_mb']} |"
        )
    print(json.dumps({"runs": runs, "agreement": agreement, "weight_stream_ms": stream}), file=sys.stderr)


def eval_int8(model: Path, eval_args: list[str]) -> None:
    """bench/eval_corpora.py with `eval_args`, every SentenceEncoder running its layers from the 8-bit graph."""
    sys.path.insert(0, str(HERE))
    import eval_corpora
    from semantic import run_layers_in

    with tempfile.TemporaryDirectory(prefix="skillshelf-int8-") as scratch:
        write_graphs(model, Path(scratch))
        run_layers_in(Path(scratch) / "encoder-int8.onnx")
        sys.argv = ["eval_corpora.py", *eval_args]
        eval_corpora.main()


def _agreement(reference: Any, other: Any) -> str:
    """The largest difference of any component and the lowest cosine similarity of a text's two vectors."""
    cosine = float(np.min(np.sum(reference * other, axis=1)))
    return f"max diff {float(np.abs(reference - other).max()):.1e}, min cosine {cosine:.4f}"


if __name__ == "__main__":
    main()
