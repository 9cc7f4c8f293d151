"""What ONNX Runtime's session options do to a meaning process's memory, against NumPy's encoder (issue 36, H72).

    python bench/meaning_onnx_options.py [--parent SRC] [--texts 320] [--queries 100] [--model DIR]

Needs `pip install onnxruntime onnx` (not skillshelf dependencies). The parent writes the encoder's layers as an
ONNX graph with 8-bit weights (bench/semantic_runtimes.py's, dynamic quantization per output channel), then runs
one process per variant, in turn: NumPy's encoder from this checkout (the layers' matrices in 8 bits), from
`--parent`'s src/ when given (e.g. float32 layers: `git archive <commit> src | tar -x -C /tmp/parent`), and ONNX
Runtime (one thread) under each set of options: the memory arena on or off (`enable_cpu_mem_arena`), memory
patterns on or off (`enable_mem_pattern`), the graph given as bytes or as a file path, weight prepacking on or off
(`session.disable_prepacking`). An ONNX Runtime process loads the encoder without its layers (the tokenizer, the
word and position embeddings, which stay NumPy's), imports onnxruntime, makes the session, encodes `--queries` new
queries one by one, then embeds the first `--texts` skill texts in the server's batches of 64. Each prints its
RSS and peak (VmHWM) after every step as one JSON line. Linux only. Nothing here asserts.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
# (arena, memory patterns, graph from a file path, prepacking off): ONNX Runtime's defaults first
OPTIONS = [
    (True, True, False, False),
    (False, True, True, False),
    (False, False, True, False),
    (False, False, True, True),
]


def memory() -> dict[str, float]:
    lines = Path("/proc/self/status").read_text(encoding="utf-8").splitlines()
    kb = {line.split(":")[0]: int(line.split()[1]) for line in lines if line.startswith(("VmRSS", "VmHWM", "Rss"))}
    return {key: round(value / 1024, 1) for key, value in kb.items()}


def child(variant: dict[str, Any], work: Path, model: Path, queries: int, count: int) -> dict[str, Any]:
    from semantic import query_texts

    import skillshelf.library.semantic.encoder as encoder_module

    texts = json.loads((work / "texts.json").read_text(encoding="utf-8"))[:count]
    found: dict[str, Any] = {"start": memory()}
    if variant["runtime"] == "onnxruntime":  # the model without its layers: they are in the graph
        encoder_module.SentenceEncoder._check_weights = lambda self: None  # type: ignore[method-assign]
        model = work / "no-layers"
    encoder = encoder_module.SentenceEncoder(model)
    if variant["runtime"] == "onnxruntime":
        found["no_layers"] = memory()
        session = onnx_session(variant, work / "encoder-int8.onnx")
        found["onnxruntime_imported"] = _imported.pop("imported")
        from semantic_runtimes import run_in_onnx

        run_in_onnx(encoder, session)
    found["loaded"] = memory()
    times = []
    for query in query_texts(queries):
        started = time.perf_counter()
        encoder.encode([query])
        times.append((time.perf_counter() - started) * 1000)
    found["queried"] = memory()
    for start in range(0, len(texts), 64):
        encoder.encode(texts[start : start + 64])
    found["embedded"] = memory()
    times.sort()
    found["query_p50_ms"] = round(times[len(times) // 2], 2)
    return found


_imported: dict[str, Any] = {}


def onnx_session(variant: dict[str, Any], graph: Path) -> Any:
    import onnxruntime as ort

    _imported["imported"] = memory()
    options = ort.SessionOptions()
    options.intra_op_num_threads = 1
    options.inter_op_num_threads = 1
    options.enable_cpu_mem_arena = variant["arena"]
    options.enable_mem_pattern = variant["patterns"]
    if variant["no_prepacking"]:
        options.add_session_config_entry("session.disable_prepacking", "1")
    source: Any = str(graph) if variant["path"] else graph.read_bytes()
    return ort.InferenceSession(source, options, providers=["CPUExecutionProvider"])


def without_layers(model: Path, folder: Path) -> None:
    """A copy of the model folder whose model.safetensors lacks the layers' tensors."""
    import shutil

    import numpy as np

    from skillshelf.library.semantic.encoder import read_safetensors

    shutil.copytree(model, folder, ignore=shutil.ignore_patterns("model.safetensors"))
    kept = {k: v for k, v in read_safetensors(model / "model.safetensors").items() if "encoder.layer." not in k}
    header: dict[str, Any] = {}
    blobs, offset = [], 0
    for name, tensor in kept.items():
        raw = np.ascontiguousarray(tensor, dtype=np.float32).tobytes()
        header[name] = {"dtype": "F32", "shape": list(tensor.shape), "data_offsets": [offset, offset + len(raw)]}
        blobs.append(raw)
        offset += len(raw)
    encoded = json.dumps(header).encode()
    (folder / "model.safetensors").write_bytes(len(encoded).to_bytes(8, "little") + encoded + b"".join(blobs))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--parent", type=Path, help="another checkout's src/: its NumPy encoder too")
    parser.add_argument("--texts", type=int, default=320)
    parser.add_argument("--queries", type=int, default=100)
    parser.add_argument("--model", type=Path, default=HERE.parent / ".cache" / "test-model" / "all-MiniLM-L6-v2")
    parser.add_argument("--child", help=argparse.SUPPRESS)
    parser.add_argument("--work", type=Path, help=argparse.SUPPRESS)
    args = parser.parse_args()
    sys.path.insert(0, str(HERE))
    if args.child:
        found = child(json.loads(args.child), args.work, args.model, args.queries, args.texts)
        print(json.dumps(found))
        return
    from semantic_runtimes import skill_texts, write_graphs

    variants: list[dict[str, Any]] = [{"runtime": "numpy"}]
    if args.parent:
        variants.append({"runtime": "numpy", "src": str(args.parent)})
    for arena, patterns, path, no_prepacking in OPTIONS:
        options = {"arena": arena, "patterns": patterns, "path": path, "no_prepacking": no_prepacking}
        variants.append({"runtime": "onnxruntime", **options})
    with tempfile.TemporaryDirectory(prefix="skillshelf-onnx-options-") as scratch:
        work = Path(scratch)
        (work / "texts.json").write_text(json.dumps(skill_texts()), encoding="utf-8")
        write_graphs(args.model, work)
        without_layers(args.model, work / "no-layers")
        for variant in variants:
            env = dict(os.environ)
            if "src" in variant:
                env["PYTHONPATH"] = variant["src"]
            command = [sys.executable, __file__, "--child", json.dumps(variant), "--work", str(work)]
            command += ["--model", str(args.model), "--texts", str(args.texts), "--queries", str(args.queries)]
            done = subprocess.run(command, capture_output=True, text=True, check=True, env=env)
            print(json.dumps({"variant": variant, **json.loads(done.stdout.splitlines()[-1])}), flush=True)


if __name__ == "__main__":
    main()
