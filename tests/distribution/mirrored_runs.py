"""Child process of tests/distribution/test_mirrored.py: ``--data-parallel`` on TensorFlow.

Run as ``python -m tests.distribution.mirrored_runs OUT.json SCRATCH`` with
``KERAS_BACKEND=tensorflow`` and ``KBL_CPU_DEVICES=4`` (logical CPUs are made before TensorFlow's
runtime starts, hence a process of its own). It fine-tunes a dropout-free tiny preset with
``kbl finetune classify`` on one device and under MirroredStrategy, runs ``kbl pretrain`` under it
and resumes that run on one device, and tries a batch that does not split.
"""

import json
import os
import sys
import time

from tests.distribution.cli_runs import (SPECIALS, finetune_classify, kbl, pretrain_args,
                                         rows, write_classification, write_corpus)


def api_losses(config, preset):
    """Three epochs of a dropout-free classifier with plain AdamW (no clipping), on one device
    and under MirroredStrategy over the 4 logical CPUs: the epoch losses."""
    import keras
    import numpy as np
    import tensorflow as tf

    from keras_bert_lab import BertBackbone, BertClassifier
    from keras_bert_lab.commands.mirrored import mirrored

    rng = np.random.default_rng(0)
    x = {"token_ids": rng.integers(5, 300, (32, 16)).astype("int32"),
         "segment_ids": np.zeros((32, 16), "int32"), "padding_mask": np.ones((32, 16), "int32")}
    y = rng.integers(0, 2, 32)
    losses = {}
    for name, scope in (("1 device", tf.distribute.get_strategy().scope), ("mirrored", None)):
        keras.utils.set_random_seed(0)
        with (scope() if scope else mirrored([8])):
            model = BertClassifier(BertBackbone(config), labels=["a", "b"])
            model.compile(optimizer=keras.optimizers.AdamW(1e-3))
        losses[name] = model.fit(x, y, batch_size=8, epochs=3, verbose=0,
                                 shuffle=False).history["loss"]
    return losses


def main(out_path, scratch):
    from keras_bert_lab.models.bert.backbone import BertBackbone
    from keras_bert_lab.models.bert.config import BertConfig
    from keras_bert_lab.commands.mirrored import replica_devices

    # The logical CPUs exist from the start (the one-device runs first just use CPU:0), as in
    # a `kbl … --data-parallel` process, which makes them before TensorFlow starts.
    assert len(replica_devices()) == 4

    corpus, vocab = write_corpus(scratch)
    preset = os.path.join(scratch, "preset")
    config = BertConfig.from_size("tiny", vocabulary_size=300, num_heads=4, max_positions=64,
                                  dropout=0.0, attention_dropout=0.0)
    BertBackbone(config).save_to_preset(preset,
                                        vocabulary=SPECIALS + [f"w{i}" for i in range(295)])
    paths = write_classification(scratch)
    result = {"finetune": {}, "seconds": {}}
    for name, flags in (("1 device", []), ("mirrored", ["--data-parallel"])):
        start = time.time()
        result["finetune"][name] = finetune_classify(scratch, preset, paths, name, flags,
                                                     epochs=2)
        result["seconds"]["classify " + name] = round(time.time() - start, 1)
    start = time.time()
    result["api"] = api_losses(config, preset)
    result["seconds"]["api"] = round(time.time() - start, 1)
    start = time.time()
    out = os.path.join(scratch, "pretrain")
    code, error = kbl(pretrain_args(corpus, vocab, out, steps=4, every=2) + ["--data-parallel"])
    result["pretrain"] = {"code": code, "error": error, "log": rows(os.path.join(out, "log.csv"))
                          if code == 0 else []}
    # --data-parallel is left out: the checkpoint saved under the strategy loads on one device.
    code, error = kbl(pretrain_args(corpus, vocab, out, steps=4, every=2) + ["--resume"])
    result["resumed"] = {"code": code, "error": error,
                         "log": rows(os.path.join(out, "log.csv")) if code == 0 else []}
    code, error = kbl(pretrain_args(corpus, vocab, os.path.join(scratch, "bad"), batch=6)
                      + ["--data-parallel"])
    result["bad_batch"] = {"code": code, "error": error,
                           "wrote": os.path.exists(os.path.join(scratch, "bad"))}
    result["seconds"]["pretrain, resume, bad batch"] = round(time.time() - start, 1)
    with open(out_path, "w") as f:
        json.dump(result, f, indent=1)


if __name__ == "__main__":
    main(sys.argv[1], sys.argv[2])
