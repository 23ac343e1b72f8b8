"""Why a BERT-mini step is slower in ``kbl pretrain`` than on a synthetic batch: the same
compiled step on one fixed in-memory batch, in a fresh process, before and after the
masked-LM ``tf.data`` stream has been iterated once — seconds and minor page faults a step.

Usage (alone on the machine; one process per mode)::

    KERAS_BACKEND=tensorflow python benchmarks/stream_page_faults.py fresh
    KERAS_BACKEND=tensorflow python benchmarks/stream_page_faults.py after-stream
    GLIBC_TUNABLES=glibc.malloc.hugetlb=1 KERAS_BACKEND=tensorflow \\
        python benchmarks/stream_page_faults.py after-stream

``fresh`` tokenizes the corpus and builds the stream but never iterates it; ``after-stream``
takes five batches from it first (and drops the iterator). The batch the model steps on is
the same random one in both, so only the process's state differs.
"""

import os
import sys
import time

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import time_to_quality  # noqa: E402  (the benchmark's recipe settings)


def minor_faults():
    with open("/proc/self/stat") as stat:
        return int(stat.read().split()[9])


def main():
    mode = sys.argv[1] if len(sys.argv) > 1 else "after-stream"
    if mode not in ("fresh", "after-stream"):
        raise SystemExit("mode: fresh or after-stream")
    from keras_bert_lab.models.bert.pretrain import BertRecipe

    settings_class, _, overrides = time_to_quality.recipe("bert", "mini")
    settings = settings_class(size="mini", steps=300, **overrides)
    recipe = BertRecipe()
    inputs = recipe.read_inputs(settings, output_dir=None, resume=False)   # kbl pretrain's
    stream = recipe.stream(settings, inputs, phase=1)
    if mode == "after-stream":
        iterator = iter(stream)
        for _ in range(5):
            next(iterator)
        del iterator
    batch, length, masked = (settings.batch_size, settings.sequence_length,
                             settings.mask_selection_length)
    vocabulary = inputs.tokenizer.vocabulary_size
    rng = np.random.default_rng(0)
    x = {"token_ids": rng.integers(1000, vocabulary, (batch, length)).astype("int32"),
         "segment_ids": np.zeros((batch, length), "int32"),
         "padding_mask": np.ones((batch, length), "int32"),
         "mask_positions": np.sort(rng.choice(length, (batch, masked)), axis=1).astype("int32")}
    y = {"mlm": rng.integers(1000, vocabulary, (batch, masked)).astype("int32"),
         "nsp": rng.integers(0, 2, (batch,)).astype("int32")}
    w = {"mlm": np.ones((batch, masked), "float32"), "nsp": np.ones((batch,), "float32")}
    model = recipe.build_model(settings, vocabulary)
    for _ in range(2):
        model.train_on_batch(x, y, w)
    steps, started, faults = 6, time.perf_counter(), minor_faults()
    for _ in range(steps):
        model.train_on_batch(x, y, w)
    print(f"{mode} (GLIBC_TUNABLES={os.environ.get('GLIBC_TUNABLES', '')!r}): "
          f"{(time.perf_counter() - started) / steps:.2f} s a step, "
          f"{(minor_faults() - faults) / steps:,.0f} minor page faults a step; "
          f"load {os.getloadavg()[0]:.1f}", flush=True)


if __name__ == "__main__":
    main()
