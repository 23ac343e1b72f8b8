"""The prepared GPU check: BERT-base pretraining step and inference in bf16 on one NVIDIA GPU.

Run by ``benchmarks/gpu.sh`` on a lent GPU machine (a few minutes in all); also runs on CPU with
``--size tiny --steps 3`` to check the script itself. For one Keras backend (``KERAS_BACKEND``):

- ``train``: ``BertPretrainer(BertBackbone(size))`` under ``mixed_bfloat16``, AdamW, masked LM
  (gathered positions) + next sentence, ``jit_compile=True`` (XLA on JAX; on torch, Keras'
  ``torch.compile``, skipped with ``--no-torch-compile``) — twice: BERT's recipe (dropout 0.1 on
  hidden states *and* attention probabilities, so attention is computed explicitly) and with
  attention dropout 0, which lets attention take ``keras.ops.dot_product_attention``'s fused path
  (cuDNN flash attention on JAX where it applies; PyTorch's SDPA kernels on torch);
- ``infer``: the backbone's forward pass (``predict_on_batch``), bf16.

Reported: sequences/s, tokens/s, and MFU = model FLOP/s ÷ the bf16 dense peak (``--peak-tflops``,
989 for the H100/H200 SXM datasheet) and ÷ a bf16 matmul measured in the same process (8192³).
FLOPs are counted as ``benchmarks/train_step.py`` counts them (3 × forward for training, the MLM
head at the masked positions only). Each figure is the median of ``--repeats`` timings of
``--steps`` steps after ``--warmup`` steps; the device is synchronised by reading the loss (train)
or converting the output to NumPy (infer).
"""

import argparse
import json
import os
import statistics
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

from benchmarks.train_step import SIZES, make_batch, step_flops  # noqa: E402


def forward_flops(size, batch, length):
    layers, hidden, _ = SIZES[size]
    dense = layers * (4 * hidden * hidden + 8 * hidden * hidden)
    return 2 * dense * batch * length + 4 * layers * batch * length * length * hidden


def matmul_tflops(keras, n):
    """bf16 matmul rate of this backend on this device (TFLOP/s), 10 products after 3."""
    import numpy as np

    x = keras.ops.convert_to_tensor(np.random.default_rng(0).normal(size=(n, n)), "bfloat16")
    for _ in range(3):
        keras.ops.convert_to_numpy(keras.ops.matmul(x, x)[0, 0])
    start = time.perf_counter()
    for _ in range(10):
        y = keras.ops.matmul(x, x)
    keras.ops.convert_to_numpy(y[0, 0])
    return 10 * 2 * n ** 3 / (time.perf_counter() - start) / 1e12


def timed(step, steps, warmup, repeats):
    for _ in range(warmup):
        step()
    times = []
    for _ in range(repeats):
        start = time.perf_counter()
        for _ in range(steps):
            step()
        times.append((time.perf_counter() - start) / steps)
    return statistics.median(times)


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--size", default="base", choices=list(SIZES))
    parser.add_argument("--batch", type=int, default=64)
    parser.add_argument("--length", type=int, default=128)
    parser.add_argument("--masks", type=int, default=20)
    parser.add_argument("--steps", type=int, default=20)
    parser.add_argument("--warmup", type=int, default=3)
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--peak-tflops", type=float, default=989.0)
    parser.add_argument("--matmul-n", type=int, default=8192)
    parser.add_argument("--no-torch-compile", action="store_true")
    parser.add_argument("--out", default=None, help="append JSON lines here")
    args = parser.parse_args()

    import keras

    from keras_bert_lab import BertBackbone, BertConfig, BertPretrainer
    from keras_bert_lab.training.optimizers import adamw

    backend = keras.backend.backend()
    measured = matmul_tflops(keras, args.matmul_n)
    data = make_batch(args.batch, args.length, args.masks)
    x = {k: data[k] for k in ("token_ids", "segment_ids", "padding_mask", "mask_positions")}
    y = {"mlm": data["mask_ids"], "nsp": data["nsp_labels"]}
    sw = {"mlm": data["mask_weights"], "nsp": data["nsp_weights"]}
    jit = not (backend == "torch" and args.no_torch_compile)
    rows = []

    def report(row):
        row.update(backend=backend, keras=keras.__version__, size=args.size, batch=args.batch,
                   length=args.length, matmul_tflops=round(measured, 1))
        seconds = row.pop("seconds")
        row["seq_per_s"] = round(args.batch / seconds, 1)
        row["tokens_per_s"] = round(args.batch * args.length / seconds)
        row["mfu_vs_peak"] = round(row.pop("flops") / seconds / 1e12 / args.peak_tflops, 3)
        row["mfu_vs_matmul"] = round(row["mfu_vs_peak"] * args.peak_tflops / measured, 3)
        rows.append(row)
        print(json.dumps(row), flush=True)

    for recipe, attention_dropout in (("bert_recipe", 0.1), ("fused_attention", 0.0)):
        keras.config.set_dtype_policy("mixed_bfloat16")
        config = BertConfig.from_size(args.size, attention_dropout=attention_dropout)
        model = BertPretrainer(BertBackbone(config))
        model.compile(optimizer=adamw(model, learning_rate=1e-4), jit_compile=jit)
        start = time.perf_counter()
        model.train_on_batch(x, y, sample_weight=sw)
        compile_s = time.perf_counter() - start
        seconds = timed(lambda: float(model.train_on_batch(x, y, sample_weight=sw,
                                                           return_dict=True)["loss"]),
                        args.steps, args.warmup, args.repeats)
        report({"what": "train", "recipe": recipe, "jit_compile": jit, "seconds": seconds,
                "first_step_s": round(compile_s, 1),
                "flops": step_flops(args.size, args.batch, args.length, args.masks)})
        if recipe == "fused_attention":
            backbone = model.backbone
            inputs = {k: x[k] for k in ("token_ids", "segment_ids", "padding_mask")}
            seconds = timed(lambda: keras.ops.convert_to_numpy(
                backbone.predict_on_batch(inputs)["sequence_output"][0, 0, 0]),
                args.steps, args.warmup, args.repeats)
            report({"what": "infer", "recipe": "bf16", "seconds": seconds,
                    "flops": forward_flops(args.size, args.batch, args.length)})
        keras.config.set_dtype_policy("float32")
        del model
    if args.out:
        with open(args.out, "a") as f:
            for row in rows:
                f.write(json.dumps(row) + "\n")


if __name__ == "__main__":
    main()
