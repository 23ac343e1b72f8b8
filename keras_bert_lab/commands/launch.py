"""``kbl launch``: run a training command in N processes joined as one JAX job (simulated
hosts), :mod:`keras_bert_lab.distribution.launch`."""

from keras_bert_lab.distribution import launch


def register(subparsers):
    """Add ``kbl launch``."""
    p = subparsers.add_parser("launch", help="run a training command in N processes joined as "
                                             "one JAX job (simulated hosts): kbl launch "
                                             "--processes 2 -- pretrain --data-parallel …")
    launch.add_arguments(p)
    p.set_defaults(func=launch.main)
    return p
