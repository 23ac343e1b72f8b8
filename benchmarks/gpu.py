"""The GPU check (issues 16, 17): BERT's pretraining step and inference against the peers on one
NVIDIA GPU, fp32 and bf16, on one Keras backend (``KERAS_BACKEND``: jax or torch).

Run by ``benchmarks/gpu.sh`` on a lent GPU machine (a few minutes in all); also runs on CPU with
``--size tiny --steps 2`` to check the script itself.

- ``train``: the same-recipe step of ``benchmarks/train_step.py`` (its builders, its fixed batch,
  its FLOP count): masked LM at ``--masks`` gathered positions + next sentence, AdamW, dropout 0.1
  on hidden states and attention probabilities, each Keras backend's default compilation (XLA on
  JAX, eager on torch), for

  - ``keras_bert_lab``: ``BertPretrainer`` with its default ``compile()``;
  - ``keras_hub``: ``keras_hub.models.BertMaskedLM`` of the same shape, Keras' ``AdamW``;
  - ``hf_gathered`` (torch): transformers' ``BertForPreTraining`` on the GPU, hidden states
    gathered at the masked positions before its MLM head, ``torch.optim.AdamW`` (transformers'
    default attention implementation, recorded in the row);
  - ``keras_bert_lab_fused``: ours with attention dropout 0, which lets attention take
    ``keras.ops.dot_product_attention``'s fused path (not BERT's recipe: a row of its own).

  ``--impls`` picks among these and ``keras_bert_lab_nodrop`` (no dropout at all). Recipes:
  ``fp32`` (each framework's default float32 matmul: JAX/XLA may use TF32 on this GPU, torch
  does not unless told), ``bf16`` (Keras ``mixed_bfloat16``; HF ``torch.autocast``) and
  ``bf16-jit`` (bf16 with ``jit_compile=True``: ``torch.compile`` on torch).
- ``infer``: a backbone's forward pass, ``predict_on_batch`` (ours asked for the sequence and
  pooled outputs, as keras-hub's returns), and transformers' ``BertModel`` under
  ``torch.inference_mode()`` with the output copied to the host, as ``predict_on_batch`` does.

Reported, one JSON line per row (appended to ``--out`` as soon as it is measured, so a run cut
short keeps what it did): sequences/s, tokens/s, and MFU = model FLOP/s ÷ a square matmul of the
same dtype measured in the same process through ``keras.ops`` (``--matmul-n``³, 10 products after
3), and ÷ the datasheet's dense bf16 peak (``--peak-tflops``, 989 for the H100/H200 SXM). Each
figure is the median of ``--repeats`` timings of ``--steps`` steps after ``--warmup`` steps;
every step synchronises (the loss or the output is read back).
"""

import argparse
import gc
import json
import os
import statistics
import sys
import time
import traceback

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

from benchmarks.train_step import (  # noqa: E402
    MAX_POSITIONS, SIZES, VOCAB, hf_stepper, keras_stepper, make_batch, step_flops)


def forward_flops(size, batch, length):
    """Matrix-product FLOPs of one encoder forward pass (as ``benchmarks/inference.py``)."""
    layers, hidden, _ = SIZES[size]
    dense = layers * (4 * hidden * hidden + 8 * hidden * hidden)
    return 2 * dense * batch * length + 4 * layers * batch * length * length * hidden


def matmul_tflops(keras, n, dtype):
    """Square matmul rate of this backend on this device (TFLOP/s), 10 products after 3."""
    import numpy as np

    x = keras.ops.convert_to_tensor(np.random.default_rng(0).normal(size=(n, n)), dtype)
    for _ in range(3):
        keras.ops.convert_to_numpy(keras.ops.matmul(x, x)[0, 0])
    start = time.perf_counter()
    for _ in range(10):
        y = keras.ops.matmul(x, x)
    keras.ops.convert_to_numpy(y[0, 0])
    return 10 * 2 * n ** 3 / (time.perf_counter() - start) / 1e12


def timed(step, args):
    for _ in range(args.warmup):
        step()
    times = []
    for _ in range(args.repeats):
        start = time.perf_counter()
        for _ in range(args.steps):
            step()
        times.append((time.perf_counter() - start) / args.steps)
    return statistics.median(times)


def torch_device():
    import torch

    return "cuda" if torch.cuda.is_available() else "cpu"  # cpu: checking the script only


def inference_runner(impl, size, inputs, bf16):
    """A function running one forward pass of ``impl`` on ``inputs`` and reading it back."""
    layers, hidden, heads = SIZES[size]
    if impl == "hf":
        import torch
        import transformers

        config = transformers.BertConfig(
            vocab_size=VOCAB, hidden_size=hidden, num_hidden_layers=layers,
            num_attention_heads=heads, intermediate_size=4 * hidden,
            max_position_embeddings=MAX_POSITIONS)
        device = torch_device()
        model = transformers.BertModel(config).to(device).eval()
        batch = {"input_ids": inputs["token_ids"], "token_type_ids": inputs["segment_ids"],
                 "attention_mask": inputs["padding_mask"]}
        batch = {k: torch.from_numpy(v).long().to(device) for k, v in batch.items()}

        def run():
            with torch.inference_mode(), torch.autocast(device, torch.bfloat16, enabled=bf16):
                return model(**batch).last_hidden_state.cpu()
        return run, model.config._attn_implementation
    import keras

    keras.config.set_dtype_policy("mixed_bfloat16" if bf16 else "float32")
    try:
        if impl == "keras_hub":
            import keras_hub

            model = keras_hub.models.BertBackbone(
                vocabulary_size=VOCAB, num_layers=layers, num_heads=heads, hidden_dim=hidden,
                intermediate_dim=4 * hidden, max_sequence_length=MAX_POSITIONS, num_segments=2)
            return (lambda: model.predict_on_batch(inputs)), None
        from keras_bert_lab import BertBackbone

        model = BertBackbone(size)
        outputs = ("sequence_output", "pooled_output")
        return (lambda: model.predict_on_batch(inputs, outputs=outputs)), None
    finally:
        keras.config.set_dtype_policy("float32")


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--size", default="base", choices=list(SIZES))
    parser.add_argument("--batch", type=int, default=64)
    parser.add_argument("--length", type=int, default=128)
    parser.add_argument("--masks", type=int, default=20)
    parser.add_argument("--steps", type=int, default=20)
    parser.add_argument("--warmup", type=int, default=3)
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--recipes", default="bf16,fp32")
    parser.add_argument("--what", default="train,infer")
    parser.add_argument("--impls", default=None, help="default: ours, keras-hub, HF (torch), "
                        "ours with fused attention; also keras_bert_lab_nodrop (no dropout)")
    parser.add_argument("--peak-tflops", type=float, default=989.0)
    parser.add_argument("--matmul-n", type=int, default=8192)
    parser.add_argument("--out", default=None, help="append JSON lines here")
    args = parser.parse_args()

    import keras

    backend = keras.backend.backend()
    recipes, what = args.recipes.split(","), args.what.split(",")
    dtypes = {"bfloat16" if r.startswith("bf16") else "float32" for r in recipes}
    ceiling = {d: matmul_tflops(keras, args.matmul_n, d) for d in sorted(dtypes)}
    header = {"what": "header", "backend": backend, "keras": keras.__version__,
              "matmul_tflops": {d: round(v, 1) for d, v in ceiling.items()}}
    if backend == "torch":
        import torch

        header.update(torch=torch.__version__, allow_tf32=torch.backends.cuda.matmul.allow_tf32,
                      device=torch.cuda.get_device_name() if torch.cuda.is_available() else "cpu")
    else:
        import jax

        header.update(jax=jax.__version__, device=str(jax.devices()[0]),
                      default_matmul_precision=jax.config.jax_default_matmul_precision)
    data = make_batch(args.batch, args.length, args.masks)
    tokens = args.batch * args.length

    def write(row):
        print(json.dumps(row), flush=True)
        if args.out:
            with open(args.out, "a") as f:
                f.write(json.dumps(row) + "\n")

    def report(row, seconds=None, flops=None):
        row.update(backend=backend, size=args.size, batch=args.batch, length=args.length)
        peak = ceiling["bfloat16" if row["recipe"].startswith("bf16") else "float32"]
        if seconds is not None:
            row.update(seq_per_s=round(args.batch / seconds, 1), tokens_per_s=round(tokens / seconds),
                       ms_per_step=round(1e3 * seconds, 2),
                       mfu_vs_matmul=round(flops / seconds / 1e12 / peak, 3),
                       mfu_vs_peak=round(flops / seconds / 1e12 / args.peak_tflops, 3),
                       matmul_tflops=round(peak, 1))
        write(row)

    def attempt(row, build, flops):
        cuda = backend == "torch" and torch_device() == "cuda"
        if cuda:
            import torch

            torch.cuda.reset_peak_memory_stats()
        try:
            start = time.perf_counter()
            step, info = build()
            step()  # compiles / traces
            row["first_step_s"] = round(time.perf_counter() - start, 1)
            row.update(info)
            seconds = timed(step, args)
            if cuda:
                row["gpu_peak_gib"] = round(torch.cuda.max_memory_allocated() / 2 ** 30, 2)
            report(row, seconds, flops)
        except Exception as error:  # one failed configuration must not cost the others
            traceback.print_exc()
            report(dict(row, error=f"{type(error).__name__}: {error}"[:300]))
        gc.collect()

    write(header)
    peers = ["keras_bert_lab", "keras_hub"] + (["hf_gathered"] if backend == "torch" else [])
    impls = args.impls.split(",") if args.impls else peers + ["keras_bert_lab_fused"]
    train_flops = step_flops(args.size, args.batch, args.length, args.masks)
    infer_flops = forward_flops(args.size, args.batch, args.length)
    for recipe in recipes:
        if "train" in what:
            for impl in impls:
                def build(impl=impl):
                    if impl.startswith("hf"):
                        step, info = hf_stepper(impl, args.size, data, recipe,
                                                 device=torch_device())
                    else:
                        step, info = keras_stepper(impl, args.size, backend, data, recipe)
                    keep = ("jit_compile", "dtype_policy", "attn_implementation", "params")
                    return step, {k: info[k] for k in keep if k in info}
                attempt({"what": "train", "impl": impl, "recipe": recipe}, build, train_flops)
        if "infer" in what:
            inputs = {k: data[k] for k in ("token_ids", "segment_ids", "padding_mask")}
            infer = [i for i in impls if i in ("keras_bert_lab", "keras_hub")]
            for impl in infer + (["hf"] if "hf_gathered" in impls else []):
                def build(impl=impl):
                    run, attention = inference_runner(impl, args.size, inputs,
                                                      recipe.startswith("bf16"))
                    return run, ({"attn_implementation": attention} if attention else {})
                attempt({"what": "infer", "impl": impl, "recipe": recipe}, build, infer_flops)


if __name__ == "__main__":
    main()
