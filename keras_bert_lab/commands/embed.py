"""``kbl embed``: one vector per text of a file into ``.npy``, and the nearest texts to a query.

Sentence-BERT (Reimers & Gurevych 2019) showed that the mean of BERT's last-layer token vectors
over the real tokens is a better sentence embedding than the ``[CLS]`` state, and models such as
all-MiniLM-L6-v2 (the ``minilm_l6_en_uncased`` preset) are trained for that recipe followed by L2
normalisation, so that the dot product of two embeddings is their cosine similarity. Here:

- ``--pooling mean`` (default, or what the preset records): the mean of ``sequence_output``
  where ``padding_mask`` is 1 (:class:`~keras_bert_lab.models.bert.sentence_embedder.SentenceEmbedder`);
  ``--pooling cls``: the last layer's ``[CLS]`` vector (sentence-transformers' ``cls`` mode);
- ``--normalize`` / ``--no-normalize``: L2 normalisation (default: the preset's recipe — on for
  MiniLM — else off).

Any BERT preset works: a backbone (MiniLM) or a fine-tuned task, whose backbone is used. The
vectors go to ``X.npy`` (float32, one row per text, in file order) and ``X.json`` beside it holds
the ids, the texts and how they were made. ``--query TEXT`` (repeatable) prints the ``-k``
nearest texts by cosine similarity, over the texts just embedded or, with ``--search X.npy``, over
a saved file (the queries are embedded the way the file was).

Example::

    kbl embed minilm_l6_en_uncased --input sentences.txt --output out/sentences.npy
    kbl embed minilm_l6_en_uncased --search out/sentences.npy --query "a film about war" -k 5
"""

import argparse
import json
import pathlib
import sys
import time

import numpy as np

from keras_bert_lab.errors import ConfigError, DataError
from keras_bert_lab.commands import batch_text

FORMAT = "keras_bert_lab.embeddings"
POOLINGS = ("mean", "cls")


def register(subparsers):
    """Add ``kbl embed`` to the top-level sub-commands."""
    p = subparsers.add_parser(
        "embed", help="sentence embeddings of a file's texts (.npy) and nearest-neighbour search",
        description="Embed every text of a plain text file (one text per line) or a CSV/TSV/JSONL "
                    "table with a BERT preset (mean pooling over the real tokens by default) "
                    "into X.npy, with ids and texts in X.json; --query prints the nearest texts "
                    "by cosine similarity.")
    p.add_argument("preset", help="a BERT preset (directory or name), e.g. minilm_l6_en_uncased "
                                  "or a fine-tuned preset (its backbone is used)")
    p.add_argument("--input", default=None,
                   help="texts: .txt (one per line), .csv, .tsv or .jsonl (named columns)")
    p.add_argument("--output", default=None,
                   help="the .npy file (X.json is written beside it); default: the input's name "
                        "with .npy, unless only --query is wanted")
    p.add_argument("--pooling", choices=POOLINGS, default=None,
                   help="mean of the last layer over real tokens, or its [CLS] vector (default: "
                        "the preset's recipe, else mean)")
    p.add_argument("--normalize", action=argparse.BooleanOptionalAction, default=None,
                   help="L2-normalise the vectors (default: the preset's recipe, else off)")
    p.add_argument("--query", action="append", default=[], metavar="TEXT",
                   help="print the texts nearest to TEXT by cosine similarity (repeatable)")
    p.add_argument("-k", type=int, default=5, help="neighbours per query")
    p.add_argument("--search", default=None, metavar="X.npy",
                   help="search a saved embedding file (from an earlier `kbl embed`) instead "
                        "of embedding --input")
    p.add_argument("--text-column", default="text", help="table column of the text")
    batch_text.add_reading_arguments(p)
    p.add_argument("--sequence-length", type=int, default=None,
                   help="tokens per text (default: the preset's, else 128)")
    p.add_argument("--overwrite", action="store_true",
                   help="replace an existing --output file (and its .json)")
    p.add_argument("--quiet", action="store_true", help="no progress bar")
    p.set_defaults(func=run)
    return p


def sidecar(path):
    """``X.json`` beside ``X.npy``: the ids, texts and recipe of the vectors."""
    return pathlib.Path(path).with_suffix(".json")


def load_embeddings(path):
    """``(vectors, info)`` of a file written by ``kbl embed``; ``DataError`` when it or its
    ``.json`` is missing or they disagree."""
    path = pathlib.Path(path)
    info_path = sidecar(path)
    if path.suffix.lower() != ".npy" or not path.is_file():
        raise DataError(f"--search {path}: no such .npy file; give the --output of an earlier "
                        "`kbl embed` run.")
    if not info_path.is_file():
        raise DataError(f"--search {path} has no {info_path.name} beside it (the ids and texts "
                        "`kbl embed` writes); embed the texts again with --output.")
    try:
        info = json.loads(info_path.read_text(encoding="utf-8"))
        vectors = np.load(path, allow_pickle=False)
    except (ValueError, OSError, UnicodeDecodeError) as error:
        raise DataError(f"--search {path} or {info_path.name} cannot be read ({error}); embed the "
                        "texts again.") from None
    if info.get("format") != FORMAT or vectors.ndim != 2 or len(vectors) != len(info["texts"]):
        raise DataError(f"--search {path}: {info_path.name} is not the description of these "
                        f"{vectors.shape} vectors (format {info.get('format')!r}, "
                        f"{len(info.get('texts', []))} texts); embed the texts again.")
    return vectors, info


def recipe(preset, args, saved=None):
    """``(pooling, normalize)``: the flags, else the saved file's, else the preset's recipe, else
    mean pooling without normalisation. Flags contradicting a ``--search`` file are refused."""
    recorded = saved or preset.sentence_embedding or {}
    if saved:
        for name in ("pooling", "normalize"):
            given = getattr(args, name)
            if given is not None and given != saved[name]:
                flag = "--pooling" if name == "pooling" else \
                    "--normalize" if given else "--no-normalize"
                raise ConfigError(f"--search {args.search} holds vectors made with {name}="
                                  f"{saved[name]}; queries must be embedded the same way: drop "
                                  f"{flag}.")
    pooling = args.pooling or recorded.get("pooling") or "mean"
    normalize = args.normalize if args.normalize is not None else bool(
        recorded.get("normalize", False))
    if pooling not in POOLINGS:
        raise ConfigError(f"pooling {pooling!r}; choose one of {POOLINGS}.")
    return pooling, normalize


def embedding_model(preset, pooling, normalize):
    """A model from packed inputs to ``(B, H)`` float32 vectors on the preset's backbone (the
    ``[CLS]`` model leaves normalisation to :func:`packed_predict`)."""
    import keras

    from keras_bert_lab.presets.registry import read_preset
    from keras_bert_lab.tasks.base import backbone_inputs

    family = read_preset(preset, verify=False).family
    if pooling == "mean":
        return family.task("embed").from_preset(preset, normalize=normalize)
    backbone = family.backbone_class.from_preset(preset)
    inputs = backbone_inputs(backbone)
    vector = keras.ops.cast(backbone(inputs)["sequence_output"][:, 0, :], "float32")  # (B, H)
    return keras.Model(inputs, vector)


def packed_predict(model, normalize=False):
    """``features → (b, H)`` NumPy, each batch cut to its longest text (padding changes no
    vector), L2-normalised here when ``normalize``."""
    import keras

    def predict(features):
        longest = max(1, int(features["padding_mask"].sum(-1).max()))
        length = min(features["padding_mask"].shape[1], -(-longest // 16) * 16)
        out = model.predict_on_batch({k: v[:, :length] for k, v in features.items()})
        out = keras.ops.convert_to_numpy(out).astype("float32")
        if normalize:
            out /= np.maximum(np.linalg.norm(out, axis=-1, keepdims=True), 1e-12)
        return out

    return predict


def run(args):
    """Run ``kbl embed`` from parsed arguments; returns ``{"vectors", "ids", "texts",
    "neighbours"}`` (one list of ``(id, similarity, text)`` per query)."""
    preset = batch_text.check_preset_for(args.preset, "embed", "kbl embed")
    if bool(args.input) == bool(args.search):
        raise ConfigError("Give --input FILE (texts to embed) or --search X.npy (a saved "
                          "`kbl embed` file, with --query), not both or neither.")
    if args.search and not args.query:
        raise ConfigError(f"--search {args.search} needs at least one --query TEXT.")
    if args.k < 1 or args.batch_size < 1:
        raise ConfigError(f"-k {args.k} and --batch-size {args.batch_size} must be positive.")
    saved = load_embeddings(args.search) if args.search else None
    vectors, info = saved or (None, None)
    pooling, normalize = recipe(preset, args, info)
    length = batch_text.sequence_length(preset, args.sequence_length or (
        info or {}).get("sequence_length"))
    output = None
    if args.input and (args.output or not args.query):
        output = batch_text.check_output(
            args.output or pathlib.Path(args.input).with_suffix(".npy"), args.overwrite,
            (".npy",))
        batch_text.check_output(sidecar(output), args.overwrite, (".json",))
    inputs = batch_text.read_inputs(args.input, args.text_column, None, args.id_column,
                                    args.format, args.encoding) if args.input else None
    for i, query in enumerate(args.query):
        if not query.strip():
            raise ConfigError(f"--query {i + 1} is empty; give a text to search for.")

    model = embedding_model(preset.directory, pooling, normalize)
    width = int(model.output.shape[-1])
    if saved and vectors.shape[1] != width:
        raise ConfigError(f"--search {args.search} holds {vectors.shape[1]}-dimensional vectors "
                          f"of preset {info.get('preset')}; {args.preset} gives {width}: embed "
                          "the queries with the preset that made the file.")
    if saved and str(info.get("preset")) != str(args.preset):
        print(f"note: {args.search} was made with preset {info.get('preset')}; the queries are "
              f"embedded with {args.preset}.", file=sys.stderr)
    predict = packed_predict(model, normalize and pooling == "cls")
    preprocessor = preset.family.preprocessor("classify").from_preset(preset.directory, length)
    if inputs is not None:
        started = time.perf_counter()
        vectors, seconds = batch_text.run_batches(predict, preprocessor, inputs.texts, None,
                                                  args.batch_size, args.quiet, "embed")
        vectors = vectors.astype("float32")
        info = {"format": FORMAT, "preset": str(args.preset), "pooling": pooling,
                "normalize": normalize, "sequence_length": length, "count": len(inputs),
                "dim": width, "source": str(args.input), "ids": inputs.ids,
                "texts": inputs.texts}
        if output is not None:
            with batch_text.atomic_file(output, "wb") as f:
                np.save(f, vectors, allow_pickle=False)
            with batch_text.atomic_file(sidecar(output)) as f:
                json.dump(info, f, ensure_ascii=False)
        print(f"embedded {len(inputs):,} texts with {args.preset}: {width} dimensions, "
              f"{pooling} pooling{', L2-normalised' if normalize else ''}")
        print(batch_text.throughput(len(inputs), seconds, started))
        if output is not None:
            print(f"wrote {output} and {sidecar(output).name} (ids and texts)")
    neighbours = []
    if args.query:
        queries = predict(preprocessor(args.query)).astype("float32")
        neighbours = nearest(queries, vectors, info["ids"], info["texts"], args.k)
        for query, found in zip(args.query, neighbours):
            print(f"query: {query}")
            for rank, (ident, similarity, text) in enumerate(found, start=1):
                print(f"  {rank:>2}. {similarity:.4f}  [{ident}]  "
                      f"{text if len(text) <= 90 else text[:87] + '...'}")
    return {"vectors": vectors, "ids": info["ids"], "texts": info["texts"],
            "neighbours": neighbours}


def nearest(queries, vectors, ids, texts, k):
    """The ``k`` rows of ``vectors`` with the highest cosine similarity to each query, as
    ``[(id, similarity, text)]`` per query, most similar first."""
    def unit(x):
        return x / np.maximum(np.linalg.norm(x, axis=-1, keepdims=True), 1e-12)

    similarity = unit(queries.astype("float64")) @ unit(vectors.astype("float64")).T  # (Q, N)
    k = min(k, similarity.shape[1])
    out = []
    for row in similarity:
        top = np.argsort(-row, kind="stable")[:k]
        out.append([(ids[j], float(row[j]), texts[j]) for j in top])
    return out
