"""Word features cached on disk once, so that a tagger trains without running the backbone.

The feature-based study trains many small taggers on the same frozen activations; computing
them once and reading them back is what makes that cheap. A cache directory holds:

``manifest.json``
    ``{"format": "keras_bert_lab.features", "version": 1, "source": {...}, "num_sentences",
    "num_words", "num_layers", "dim", "dtype", "words_sha256", "shards": [{"file", "words"}]}``.
``shard_00000.npy`` …
    ``(words, K, H)`` arrays of whole sentences in order, read memory-mapped: a batch touches
    only its own rows, and a cache larger than memory still trains.
``index.npy``
    ``(N, 3)`` int64: each sentence's shard, first row and word count.

It is written into a temporary sibling and renamed into place (a crash leaves no half cache),
and ``words_sha256`` ties it to the sentences it was computed from: reading it for other
sentences is an error, not a silent misalignment.

:class:`TaggerBatches` pads sentences into tagger batches from a cache or from a source run on
the fly; the two give identical batches (a test checks it).

Shapes: ``N`` sentences, ``W`` words, ``K`` layers, ``H`` width, ``B`` batch.
"""

import hashlib
import json
import math
import pathlib

import keras
import numpy as np

from keras_bert_lab.errors import ConfigError, DataError
from keras_bert_lab.presets.format import atomic_directory

FORMAT = "keras_bert_lab.features"
MANIFEST, INDEX = "manifest.json", "index.npy"
DTYPES = ("float32", "float16")


def words_digest(sentences):
    """sha256 of the sentences' words (what a cache was computed from)."""
    digest = hashlib.sha256()
    for words in sentences:
        digest.update(("\t".join(words) + "\n").encode("utf-8", "surrogatepass"))
    return digest.hexdigest()


def write_cache(directory, source, sentences, dtype="float32", shard_words=20000,
                batch_sentences=256, overwrite=False, progress=True):
    """Run ``source`` over ``sentences`` (lists of words) and write its features to ``directory``.

    Args:
        directory: the cache directory (must not exist unless ``overwrite``).
        source: a feature source (:mod:`keras_bert_lab.features.extract`).
        sentences: list of word lists.
        dtype: ``float32`` (exact) or ``float16`` (half the disk).
        shard_words: words per shard file (memory used while writing is one shard).
        batch_sentences: sentences handed to the source at a time.
        progress: a progress bar in sentences.

    Returns the path of the cache.

    Example:
    >>> import tempfile, os
    >>> from keras_bert_lab.features.extract import StaticWordFeatures
    >>> from keras_bert_lab.vectors import WordVectors
    >>> source = StaticWordFeatures(WordVectors(["a", "b"], [[1.0, 2.0], [3.0, 4.0]]))
    >>> path = write_cache(os.path.join(tempfile.mkdtemp(), "c"), source, [["a", "b"], ["b"]],
    ...                    progress=False)
    >>> cache = FeatureCache(path)
    >>> len(cache), cache.num_layers, cache.dim, cache[1].tolist()
    (2, 1, 2, [[[3.0, 4.0]]])
    """
    if dtype not in DTYPES:
        raise ConfigError(f"Feature cache dtype {dtype!r}; choose one of {DTYPES}.")
    sentences = [list(words) for words in sentences]
    bar = keras.utils.Progbar(len(sentences), unit_name="sentence") if progress else None
    with atomic_directory(directory, overwrite=overwrite) as tmp:
        index, shards, pending, pending_words = [], [], [], 0

        def flush():
            nonlocal pending, pending_words
            if pending:
                name = f"shard_{len(shards):05d}.npy"
                np.save(tmp / name, np.concatenate(pending).astype(dtype))
                shards.append({"file": name, "words": pending_words})
                pending, pending_words = [], 0

        for start in range(0, len(sentences), batch_sentences):
            part = sentences[start:start + batch_sentences]
            for words, features in zip(part, source(part)):
                if features.shape != (len(words), source.num_layers, source.dim):
                    raise DataError(f"The feature source gave {features.shape} for a sentence "
                                    f"of {len(words)} words; expected "
                                    f"({len(words)}, {source.num_layers}, {source.dim}).")
                index.append((len(shards), pending_words, len(words)))
                pending.append(features)
                pending_words += len(words)
                if pending_words >= shard_words:
                    flush()
            if bar is not None:
                bar.add(len(part))
        flush()
        np.save(tmp / INDEX, np.asarray(index, "int64").reshape(-1, 3))
        manifest = {"format": FORMAT, "version": 1, "source": source.describe(),
                    "num_sentences": len(sentences), "num_words": sum(map(len, sentences)),
                    "num_layers": source.num_layers, "dim": source.dim, "dtype": dtype,
                    "missing_words": getattr(source, "missing_words", None),
                    "words_sha256": words_digest(sentences), "shards": shards}
        (tmp / MANIFEST).write_text(json.dumps(manifest, indent=2), encoding="utf-8")
    return pathlib.Path(directory)


class FeatureCache:
    """A cache written by :func:`write_cache`, read memory-mapped (``cache[i]`` → ``(W, K, H)``).

    Args:
        directory: the cache directory.
        sentences: optional word lists; when given they must be the ones the cache was
            computed from.
    """

    def __init__(self, directory, sentences=None):
        self.directory = pathlib.Path(directory)
        path = self.directory / MANIFEST
        if not path.is_file():
            raise DataError(f"{self.directory} is not a feature cache (no {MANIFEST}); write one "
                            "with `kbl features extract` or features.write_cache.")
        try:
            manifest = json.loads(path.read_text(encoding="utf-8"))
        except (UnicodeDecodeError, json.JSONDecodeError) as error:
            raise DataError(f"{path} is corrupt ({error}); extract the features again.") from None
        if manifest.get("format") != FORMAT:
            raise DataError(f"{path} is not a {FORMAT} manifest.")
        self.manifest = manifest
        self.num_layers, self.dim = manifest["num_layers"], manifest["dim"]
        try:
            self.index = np.load(self.directory / INDEX)
            self.shards = [np.load(self.directory / s["file"], mmap_mode="r")
                           for s in manifest["shards"]]
        except (OSError, ValueError) as error:
            raise DataError(f"Feature cache {self.directory} is incomplete or corrupt ({error}); "
                            "extract the features again.") from None
        for shard, entry in zip(self.shards, manifest["shards"]):
            if shard.shape != (entry["words"], self.num_layers, self.dim):
                raise DataError(f"{self.directory / entry['file']} has shape {shard.shape}, the "
                                f"manifest says ({entry['words']}, {self.num_layers}, "
                                f"{self.dim}); extract the features again.")
        if len(self.index) != manifest["num_sentences"]:
            raise DataError(f"{self.directory / INDEX} lists {len(self.index)} sentences, the "
                            f"manifest {manifest['num_sentences']}; extract the features again.")
        if sentences is not None and words_digest(sentences) != manifest["words_sha256"]:
            raise DataError(f"Feature cache {self.directory} was computed from other sentences "
                            "than these (words differ); extract features for these sentences "
                            "(--overwrite replaces the cache, --cache DIR writes another).")

    def __len__(self):
        return len(self.index)

    def __getitem__(self, i):
        shard, start, count = self.index[i]
        return np.asarray(self.shards[shard][start:start + count], "float32")

    def get_many(self, indices):
        """The features of several sentences (a list of ``(W, K, H)`` arrays)."""
        return [self[i] for i in indices]

    def lengths(self):
        """Words per sentence."""
        return self.index[:, 2].tolist()


class OnTheFly:
    """A source run on demand for some sentences: the cache's interface without a cache."""

    def __init__(self, source, sentences):
        self.source, self.sentences = source, [list(w) for w in sentences]
        self.num_layers, self.dim = source.num_layers, source.dim

    def __len__(self):
        return len(self.sentences)

    def get_many(self, indices):
        return self.source([self.sentences[i] for i in indices])

    def lengths(self):
        return [len(words) for words in self.sentences]


class TaggerBatches(keras.utils.PyDataset):
    """Padded tagger batches: ``({"features": (B, W, k, H), "word_mask": (B, W)}, labels,
    sample weights)`` for a :class:`~keras_bert_lab.tasks.feature_tagger.FeatureTagger`.

    Args:
        features: a :class:`FeatureCache` or :class:`OnTheFly`.
        labels: per-sentence int label-id arrays (``None`` when only predicting).
        layers: the layer indices to keep (``k`` of the cache's ``K``).
        batch_size: sentences per batch. shuffle: a new order each epoch from ``seed``.
        length_multiple: every batch has ``W`` = the data's longest sentence rounded up to this:
            one shape, so compiled steps (JAX, TensorFlow) compile once and TensorFlow's
            adapter, which fixes the shapes it sees first, takes every batch.
    """

    def __init__(self, features, labels, layers, batch_size=32, shuffle=False, seed=0,
                 length_multiple=8):
        super().__init__()
        self.features, self.labels, self.layers = features, labels, list(layers)
        longest = max([1, *self.features.lengths()])
        self.width = -(-longest // length_multiple) * length_multiple
        self.batch_size, self.shuffle, self.seed, self.epoch = batch_size, shuffle, seed, 0
        self.order = self._order()

    def _order(self):
        order = np.arange(len(self.features))
        if self.shuffle:
            np.random.default_rng([self.seed, self.epoch]).shuffle(order)
        return order

    def __len__(self):
        return math.ceil(len(self.features) / self.batch_size)

    def __getitem__(self, b):
        indices = self.order[b * self.batch_size:(b + 1) * self.batch_size]
        rows = self.features.get_many(indices)
        width = self.width
        x = np.zeros((len(rows), width, len(self.layers), self.features.dim), "float32")
        mask = np.zeros((len(rows), width), "float32")
        y = np.zeros((len(rows), width), "int32")
        for i, (index, row) in enumerate(zip(indices, rows)):
            x[i, :len(row)] = row[:, self.layers]
            mask[i, :len(row)] = 1.0
            if self.labels is not None:
                y[i, :len(row)] = self.labels[index]
        inputs = {"features": x, "word_mask": mask}
        return (inputs, y, mask) if self.labels is not None else (inputs,)

    def on_epoch_end(self):
        self.epoch += 1
        self.order = self._order()
