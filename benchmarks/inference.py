"""Inference against the peers: BERT-base forward passes, and MiniLM sentence embeddings.

Two measurements, each (task, backend, implementation) in its own subprocess, so that the peak
resident memory reported is that configuration's alone:

1. ``bert-base``: forward passes of a BERT-base backbone (12 × 768, random weights; the same shape
   everywhere) on ``--batches`` batches of ``--batch-size`` × 128 random token ids, every position
   real, after one untimed batch (compilation):

   - ``keras_bert_lab``: ``BertBackbone.predict_on_batch`` (sequence, pooled and every hidden
     state);
   - ``keras_bert_lab_2out``: ``predict_on_batch(..., outputs=("sequence_output",
     "pooled_output"))``, the same backbone asked for what keras-hub's and HF's return by default;
   - ``keras_hub``: ``keras_hub.models.BertBackbone.predict_on_batch`` (sequence and pooled);
   - ``hf`` (torch only): transformers' ``BertModel`` under ``torch.inference_mode()``.

   Reported: sequences/s and MFU = forward FLOP/s ÷ the machine's fp32 matmul ceiling, measured in
   this run before and after the passes (the best square float32 matmul of numpy, torch, jax and
   tensorflow at 2048² and 4096², the higher reading). The FLOPs counted are the matrix products of the
   12 blocks and attention's two batched products (2 FLOPs per multiply-add); the embedding
   lookups, LayerNorms, softmax and GELU are not counted, so MFU < 1 even at full speed.
2. ``minilm``: all-MiniLM-L6-v2 sentence embeddings (mean pooling, L2-normalised) of the first
   ``--sentences`` Rotten Tomatoes test sentences, batches of ``--batch-size``:

   - ``keras_bert_lab``: ``BertTextPreprocessor`` + ``SentenceEmbedder.predict_packed`` of the
     ``minilm_l6_en_uncased`` preset (each batch cut to its longest text);
   - ``hf`` (torch only): the fast tokenizer + ``AutoModel`` from the same installed files, each
     batch padded to its longest text, mean pooling and L2 normalisation written out (what
     sentence-transformers does), under ``torch.inference_mode()``.

   Reported: sentences/s (end to end: tokenizing included), the ratio to HF, and the largest
   ``1 − cos`` between the two implementations' embeddings of the same sentence.

Median of ``--repeats`` timed passes. "busy%" is the machine's CPU use during each configuration
(its own threads included; 100 % = every core).

Usage::

    python benchmarks/inference.py                                    # ~10 min on 2 cores
    python benchmarks/inference.py --backends torch --tasks minilm --sentences 64 --repeats 1
"""

import argparse
import json
import os
import resource
import statistics
import subprocess
import sys
import time

_HERE = os.path.dirname(os.path.abspath(__file__))
sys.path[:] = [p for p in sys.path if os.path.abspath(p or ".") != _HERE]
sys.path.insert(0, os.path.dirname(_HERE))
os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")

BACKENDS = ("tensorflow", "jax", "torch")
TASKS = ("bert-base", "minilm")
LENGTH, VOCAB, LAYERS, HIDDEN, HEADS = 128, 30522, 12, 768, 12
PRESET = "minilm_l6_en_uncased"


def forward_flops(batch, length=LENGTH):
    """Matrix-product FLOPs of one BERT-base forward pass over ``batch`` × ``length`` tokens."""
    tokens, inner = batch * length, 4 * HIDDEN
    per_block = 2 * tokens * (4 * HIDDEN * HIDDEN + 2 * HIDDEN * inner) + 4 * batch * length * \
        length * HIDDEN
    return LAYERS * per_block


def matmul_ceiling():
    """``(GFLOP/s, what)``: the best fp32 square matmul of numpy, torch, jax and tensorflow at
    2048² and 4096² (:func:`benchmarks.machine.matmul_ceilings`), in a process of its own."""
    code = ("import json, sys; sys.path.insert(0, sys.argv[1]); from benchmarks.machine import "
            "matmul_ceilings; print(json.dumps(matmul_ceilings()))")
    done = subprocess.run([sys.executable, "-c", code, os.path.dirname(_HERE)],
                          stdout=subprocess.PIPE, text=True, check=True)
    results = json.loads(done.stdout.strip().splitlines()[-1])
    name = max(results, key=results.get)
    return results[name], name


def _timed(function):
    began = time.perf_counter()
    function()
    return time.perf_counter() - began


def bert_base(impl, args):
    """``(seconds per pass over the batches, sequences per pass)``."""
    import numpy as np

    rng = np.random.default_rng(0)
    ids = rng.integers(1000, VOCAB, size=(args.batches + 1, args.batch_size, LENGTH))
    zeros, ones = np.zeros_like(ids[0]), np.ones_like(ids[0])
    if impl == "hf":
        import torch
        import transformers

        model = transformers.BertModel(transformers.BertConfig()).eval()
        batches = [dict(input_ids=torch.tensor(b), token_type_ids=torch.tensor(zeros),
                        attention_mask=torch.tensor(ones)) for b in ids]

        def run(batch):
            with torch.inference_mode():
                return model(**batch).last_hidden_state
    elif impl == "keras_hub":
        import keras_hub

        model = keras_hub.models.BertBackbone(
            vocabulary_size=VOCAB, num_layers=LAYERS, num_heads=HEADS, hidden_dim=HIDDEN,
            intermediate_dim=4 * HIDDEN, max_sequence_length=512, num_segments=2)
        batches = [{"token_ids": b, "segment_ids": zeros, "padding_mask": ones} for b in ids]
        run = model.predict_on_batch
    else:
        from keras_bert_lab import BertBackbone

        model = BertBackbone("base")
        batches = [{"token_ids": b, "segment_ids": zeros, "padding_mask": ones} for b in ids]
        outputs = ("sequence_output", "pooled_output") if impl == "keras_bert_lab_2out" else None

        def run(batch):
            return model.predict_on_batch(batch, outputs=outputs)
    run(batches[0])                                    # compiles / traces
    times = [_timed(lambda: [run(b) for b in batches[1:]]) for _ in range(args.repeats)]
    return statistics.median(times), args.batches * args.batch_size, {}


def minilm(impl, args):
    import numpy as np

    from keras_bert_lab.data.labelled import load_dataset

    texts = list(load_dataset("rotten_tomatoes")["test"].texts[:args.sentences])
    if impl == "hf":
        import torch
        import transformers

        from keras_bert_lab.data import registry

        folder = registry.locate("all_minilm_l6_v2")
        tokenizer = transformers.AutoTokenizer.from_pretrained(folder)
        model = transformers.AutoModel.from_pretrained(folder).eval()

        def embed():
            out = []
            for start in range(0, len(texts), args.batch_size):
                batch = tokenizer(texts[start:start + args.batch_size], padding=True,
                                  truncation=True, max_length=256, return_tensors="pt")
                with torch.inference_mode():
                    states = model(**batch).last_hidden_state
                    mask = batch["attention_mask"].unsqueeze(-1).to(states.dtype)
                    mean = (states * mask).sum(1) / mask.sum(1).clamp(min=1e-9)
                    out.append(torch.nn.functional.normalize(mean, dim=-1).numpy())
            return np.concatenate(out)
    else:
        from keras_bert_lab.models.bert.preprocessor import BertTextPreprocessor
        from keras_bert_lab.models.bert.sentence_embedder import SentenceEmbedder

        embedder = SentenceEmbedder.from_preset(PRESET)
        preprocessor = BertTextPreprocessor.from_preset(PRESET)

        def embed():
            return np.asarray(embedder.predict_packed(preprocessor(texts),
                                                      batch_size=args.batch_size))
    vectors = embed()                                  # compiles every batch shape
    np.save(args.vectors, vectors.astype("float32"))
    times = [_timed(embed) for _ in range(args.repeats)]
    return statistics.median(times), len(texts), {}


def child(args):
    import keras

    from benchmarks.machine import cpu_jiffies

    start = cpu_jiffies()
    seconds, count, extra = (bert_base if args.task == "bert-base" else minilm)(args.impl, args)
    end = cpu_jiffies()
    busy = None if start is None else (end[0] - start[0]) / max(1, end[1] - start[1])
    print(json.dumps({"task": args.task, "impl": args.impl, "backend": keras.backend.backend(),
                      "per_s": count / seconds, "seconds": seconds, "busy": busy,
                      "rss_mb": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024,
                      **extra}))


def configurations(args):
    for task in args.tasks:
        for backend in args.backends:
            yield task, backend, "keras_bert_lab"
            if task == "bert-base":
                yield task, backend, "keras_bert_lab_2out"
                yield task, backend, "keras_hub"
        if "torch" in args.backends:
            yield task, "torch", "hf"


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--backends", nargs="+", choices=BACKENDS, default=list(BACKENDS))
    parser.add_argument("--tasks", nargs="+", choices=TASKS, default=list(TASKS))
    parser.add_argument("--batch-size", type=int, default=32)
    parser.add_argument("--batches", type=int, default=2, help="bert-base: batches per pass")
    parser.add_argument("--sentences", type=int, default=1000, help="minilm: sentences")
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--child", nargs=2, metavar=("TASK", "IMPL"), help=argparse.SUPPRESS)
    parser.add_argument("--vectors", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        args.task, args.impl = args.child
        return child(args)
    ceiling, where = matmul_ceiling()
    print(f"fp32 matmul ceiling: {ceiling:.0f} GFLOP/s ({where})", flush=True)
    import tempfile

    import numpy as np

    rows = []
    with tempfile.TemporaryDirectory() as scratch:
        for task, backend, impl in configurations(args):
            vectors = os.path.join(scratch, f"{task}-{backend}-{impl}.npy")
            command = [sys.executable, os.path.abspath(__file__), "--child", task, impl,
                       "--vectors", vectors, *[f"--{k.replace('_', '-')}={getattr(args, k)}"
                                               for k in ("batch_size", "batches", "sentences",
                                                         "repeats")]]
            done = subprocess.run(command, env={**os.environ, "KERAS_BACKEND": backend},
                                  stdout=subprocess.PIPE, text=True, check=True)
            row = json.loads(done.stdout.strip().splitlines()[-1])
            if task == "minilm":
                row["vectors"] = np.load(vectors)
            rows.append(row)
            print(f"  {task} {backend} {impl}: {row['per_s']:.1f}/s, peak RSS "
                  f"{row['rss_mb']:,.0f} MB, busy {row['busy']:.0%}", flush=True)
    after, where_after = matmul_ceiling()   # under load one reading is often low
    print(f"fp32 matmul ceiling after: {after:.0f} GFLOP/s ({where_after})", flush=True)
    report(rows, args, max(ceiling, after))


def report(rows, args, ceiling):
    import numpy as np

    if "bert-base" in args.tasks:
        print(f"\nBERT-base forward, {args.batch_size} × {LENGTH} tokens, {args.batches} "
              f"batches a pass, median of {args.repeats}; MFU against {ceiling:.0f} GFLOP/s\n")
        print("| backend | implementation | sequences/s | MFU | ours ÷ this | peak RSS (MB) |")
        print("|---|---|---:|---:|---:|---:|")
        for row in (r for r in rows if r["task"] == "bert-base"):
            ours = next(r for r in rows if r["task"] == "bert-base" and r["backend"] ==
                        row["backend"] and r["impl"] == "keras_bert_lab")
            mfu = row["per_s"] * forward_flops(1) / 1e9 / ceiling
            print(f"| {row['backend']} | {row['impl']} | {row['per_s']:.2f} | {mfu:.0%} | "
                  f"{ours['per_s'] / row['per_s']:.2f} | {row['rss_mb']:,.0f} |")
    minilm_rows = [r for r in rows if r["task"] == "minilm"]
    if minilm_rows:
        hf = next((r for r in minilm_rows if r["impl"] == "hf"), None)
        print(f"\nMiniLM sentence embeddings, {args.sentences} Rotten Tomatoes sentences, batches "
              f"of {args.batch_size}, median of {args.repeats}\n")
        print("| backend | implementation | sentences/s | ÷ HF | max 1 − cos vs HF | "
              "peak RSS (MB) |")
        print("|---|---|---:|---:|---:|---:|")
        for row in minilm_rows:
            ratio = f"{row['per_s'] / hf['per_s']:.2f}" if hf else ""
            gap = f"{np.max(1 - (row['vectors'] * hf['vectors']).sum(-1)):.1e}" \
                if hf and row is not hf else "—"
            print(f"| {row['backend']} | {row['impl']} | {row['per_s']:.1f} | {ratio} | {gap} | "
                  f"{row['rss_mb']:,.0f} |")


if __name__ == "__main__":
    main()
