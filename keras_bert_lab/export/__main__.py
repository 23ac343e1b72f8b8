"""``python -m keras_bert_lab.export``: the TensorFlow child process of an export (internal).

:func:`keras_bert_lab.export.export_saved_model` starts it with ``KERAS_BACKEND=tensorflow`` when
the caller runs JAX or PyTorch; users run ``kbl export`` instead.
"""

import sys

from keras_bert_lab.export.saved_model import worker

if __name__ == "__main__":
    if len(sys.argv) != 8 or sys.argv[1] != "--worker":
        sys.exit("internal entry point of keras_bert_lab.export; use `kbl export PRESET --output DIR`")
    sys.exit(worker(sys.argv[2:]))
