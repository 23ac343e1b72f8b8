"""``kbl models``: the model families, and the named BERT sizes with their parameter counts
(``--build``: built and run on a padded batch)."""

import time

from keras_bert_lab import families


def register(subparsers):
    """Add ``kbl models``."""
    p = subparsers.add_parser("models", help="list the model families and the named BERT sizes "
                                             "with their parameter counts")
    p.add_argument("--build", nargs="*", default=[], metavar="SIZE",
                   help="also build these sizes and run a forward pass")
    p.set_defaults(func=_models)
    return p


def _models(args):
    """Print the families, then each named BERT size with its parameter count; optionally build
    and run them."""
    from keras_bert_lab.models.bert.config import SIZES, BertConfig

    print(f"{'family':<10}{'tasks':<44}about")
    for family in families.FAMILIES:
        tasks = ", ".join(k for k in family.tasks if k not in ("pretrain", "fill_mask"))
        print(f"{family.name:<10}{tasks or '-':<44}{family.title}")
    print()
    print(f"{'size':<8}{'layers':>7}{'hidden':>8}{'heads':>7}{'ffn':>7}{'parameters':>14}")
    for name in SIZES:
        c = BertConfig.from_size(name)
        print(f"{name:<8}{c.num_layers:>7}{c.hidden_size:>8}{c.num_heads:>7}"
              f"{c.intermediate_size:>7}{c.num_parameters():>14,}")
    if args.build:
        _forward_demo(args.build)


def _forward_demo(sizes):
    import keras
    import numpy as np

    from keras_bert_lab.models.bert.backbone import BertBackbone

    rng = np.random.default_rng(0)
    print(f"\nBuilding and running on KERAS_BACKEND={keras.backend.backend()} "
          "(a padded batch of 2 sentence pairs, 16 tokens):")
    for name in sizes:
        start = time.time()
        backbone = BertBackbone(name)
        token_ids = rng.integers(1000, 30000, size=(2, 16)).astype("int32")
        token_ids[:, 0] = 101
        segment_ids = np.zeros((2, 16), "int32")
        segment_ids[:, 8:] = 1
        padding_mask = np.ones((2, 16), "int32")
        padding_mask[1, 12:] = 0
        out = backbone({"token_ids": token_ids, "segment_ids": segment_ids,
                        "padding_mask": padding_mask})
        pooled = keras.ops.convert_to_numpy(out["pooled_output"])
        print(f"  {name:<7} {backbone.count_params():>12,} weights  "
              f"sequence_output {tuple(out['sequence_output'].shape)}  "
              f"{len(out['hidden_states'])} hidden states  "
              f"pooled[0,:3]={np.round(pooled[0, :3], 3)}  "
              f"({time.time() - start:.1f}s)")
        if name == sizes[0]:
            backbone.summary(line_length=100)
