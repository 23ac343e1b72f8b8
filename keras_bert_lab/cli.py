"""``kbl``: the keras_bert_lab command line.

Each sub-command lives in one function; errors of ours are printed as one readable line
(``kbl: error: …``) with exit status 2, never a traceback.
"""

import argparse
import os
import sys
import time


def _models(args):
    """Print each named BERT size with its parameter count; optionally build and run them."""
    from keras_bert_lab.models.config import SIZES, BertConfig

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

    from keras_bert_lab.models.bert import BertBackbone

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
              f"{len(out['hidden_states'])} hidden states  pooled[0,:3]={np.round(pooled[0, :3], 3)}  "
              f"({time.time() - start:.1f}s)")
        if name == sizes[0]:
            backbone.summary(line_length=100)


def _demo(args):
    """What `make demo` runs: the model family, built and run on this backend."""
    _models(argparse.Namespace(build=args.sizes))


def build_parser():
    parser = argparse.ArgumentParser(prog="kbl", description="keras_bert_lab command line.")
    sub = parser.add_subparsers(dest="command", required=True)
    p = sub.add_parser("models", help="list the named BERT sizes and their parameter counts")
    p.add_argument("--build", nargs="*", default=[], metavar="SIZE",
                   help="also build these sizes and run a forward pass")
    p.set_defaults(func=_models)
    p = sub.add_parser("demo", help="the built-in demo (what `make demo` runs)")
    p.add_argument("--sizes", nargs="+", default=["tiny", "mini", "small", "medium", "base"])
    p.set_defaults(func=_demo)
    return parser


def main(argv=None):
    from keras_bert_lab.errors import KblError

    args = build_parser().parse_args(argv)
    try:
        args.func(args)
    except KblError as error:
        print(f"kbl: error: {error}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        print("kbl: interrupted", file=sys.stderr)
        return 130
    return 0


if __name__ == "__main__":
    os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")
    sys.exit(main())
