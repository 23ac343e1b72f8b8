"""Class names ↔ ids for classification labels (GLUE-style tables)."""

import numpy as np

from keras_bert_lab.errors import DataError


class LabelVocabulary:
    """Class names ↔ ids (id = position in ``names``).

    Args:
        names: the class names, in id order (converted to ``str``; numbers in a CSV are text).

    Example:
    >>> vocab = LabelVocabulary.fit(["pos", "neg", "pos"])
    >>> vocab.names, vocab.encode(["pos", "neg"]).tolist(), vocab.decode([1, 0])
    (['neg', 'pos'], [1, 0], ['pos', 'neg'])
    >>> vocab.encode(["neutral"], source="dev.csv", lines=[7])
    Traceback (most recent call last):
    ...
    keras_bert_lab.errors.DataError: dev.csv, line 7: label 'neutral' is not in the label set ['neg', 'pos']; fix the label or pass the full label set (--labels neg,pos,...).
    """

    def __init__(self, names):
        names = [label_text(name) for name in names]
        if not names:
            raise DataError("A label vocabulary needs at least one class name.")
        if len(set(names)) != len(names):
            raise DataError(f"Class names must be distinct, got {names}.")
        self.names = names
        self._index = {name: i for i, name in enumerate(names)}

    @classmethod
    def fit(cls, *label_lists):
        """The sorted distinct labels of one or more label lists (lists inside are multi-label
        rows; integer-like names sort numerically, so "10" comes after "9")."""
        seen = set()
        for labels in label_lists:
            for label in labels:
                seen.update(label_text(x) for x in (label if isinstance(label, list) else [label]))
        numeric = all(is_int(name) for name in seen)
        return cls(sorted(seen, key=int if numeric else None))

    def __len__(self):
        return len(self.names)

    def encode(self, labels, source="(labels)", lines=None):
        """Ids (int32 NumPy) of single labels; ``DataError`` naming the first unknown one."""
        ids = np.zeros(len(labels), "int32")
        for i, label in enumerate(labels):
            name = label_text(label)
            if name not in self._index:
                self._unknown(name, source, lines, i)
            ids[i] = self._index[name]
        return ids

    def encode_multi_hot(self, labels, source="(labels)", lines=None):
        """``(N, K)`` float32 multi-hot rows of multi-label rows (each a list of names)."""
        out = np.zeros((len(labels), len(self.names)), "float32")
        for i, row in enumerate(labels):
            for label in (row if isinstance(row, list) else [row]):
                name = label_text(label)
                if name not in self._index:
                    self._unknown(name, source, lines, i)
                out[i, self._index[name]] = 1.0
        return out

    def decode(self, ids):
        return [self.names[int(i)] for i in ids]

    def _unknown(self, name, source, lines, i):
        where = f"{source}, line {lines[i]}" if lines else f"{source}, example {i}"
        raise DataError(f"{where}: label {name!r} is not in the label set {self.names}; fix the "
                        f"label or pass the full label set (--labels {','.join(self.names)},...).")


def label_text(label):
    if isinstance(label, float) and label.is_integer():
        label = int(label)
    return str(label).strip()


def is_int(text):
    try:
        int(text)
        return True
    except ValueError:
        return False


# ---- readers ---------------------------------------------------------------------------------
