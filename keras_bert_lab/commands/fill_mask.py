"""Use a preset on your own text: ``kbl predict``, ``kbl embed`` and ``kbl fill-mask``.

Once a model is fine-tuned (``kbl finetune classify | pair``), pretrained (``kbl pretrain``) or
imported (the MiniLM sentence encoder), these commands run it without writing Python:

- ``kbl predict PRESET --input FILE``: a fine-tuned classifier over a file → a label and
  per-class scores per text (:mod:`.predict`);
- ``kbl embed PRESET --input FILE``: sentence embeddings into ``.npy`` and the nearest texts to
  a query (:mod:`.embed`);
- ``kbl fill-mask PRESET "text with [MASK]"``: the masked-LM head's ``k`` most probable tokens
  at each ``[MASK]`` (here).

The masked LM is BERT's first pretraining task (Devlin et al. 2019, §3.1, task #1): the
original token at a masked position is predicted from both sides of its context, by
``dense → GELU → LayerNorm`` and a projection onto the (tied) token embeddings
(:class:`~keras_bert_lab.layers.heads.MaskedLMHead`). Presets that carry that head are those of
``kbl pretrain`` and Hugging Face ``BertForPreTraining`` / ``BertForMaskedLM`` checkpoints imported
with ``kbl preset import-hf`` (a ``BertPretrainer`` task); fine-tuned presets and the MiniLM
sentence encoder do not.

Example::

    kbl pretrain --corpus wikitext2 --output out/pretrain ...
    kbl fill-mask out/pretrain/preset "The capital of France is [MASK]." -k 5
"""

import re

import numpy as np

from keras_bert_lab.errors import ConfigError, DataError, PresetError
from keras_bert_lab.commands import batch_text
from keras_bert_lab.export.saved_model import describe_task

MLM_HEAD = "task/masked_lm_head/"
HOW = ("kbl fill-mask needs a preset with a masked-LM head: the preset/ folder of a `kbl "
       "pretrain` run, or a Hugging Face BertForPreTraining or BertForMaskedLM checkpoint "
       "imported with `kbl preset import-hf` (task BertPretrainer); minilm_l6_en_uncased has none "
       "(it was trained for sentence embeddings)")


def register(subparsers):
    """Add ``kbl fill-mask``."""
    p = subparsers.add_parser(
        "fill-mask", help="the masked-LM head's top-k tokens for each [MASK] in a text",
        description="Print the k most probable tokens, with their probabilities, at each [MASK] "
                    "of each text, from a preset with a masked-LM head (`kbl pretrain`).")
    p.add_argument("preset", help="a preset with a masked-LM head (directory or name)")
    p.add_argument("texts", nargs="+", metavar="TEXT", help="texts with one or more [MASK]")
    p.add_argument("-k", type=int, default=5, help="tokens per [MASK]")
    p.set_defaults(func=run_fill_mask)
    return p


def check_mlm_preset(preset):
    """The checked preset of a ``BertPretrainer`` whose weights hold the masked-LM head."""
    checked = batch_text.check_preset_for(preset, "fill-mask", "kbl fill-mask")
    task = (checked.task or {}).get("class_name")
    if task != checked.family.task("fill_mask").__name__:
        what = (f"a {checked.backbone_class} without a task head" if task is None else
                f"{describe_task(checked)} ({task})")
        raise ConfigError(f"Preset {preset} holds {what}, which has no masked-LM head; {HOW}.")
    import h5py

    with h5py.File(checked.weights_path, "r") as f:
        names = []
        f.visit(names.append)
    if not any(name.startswith(MLM_HEAD) for name in names):
        raise PresetError(f"Preset {preset} is a BertPretrainer but its weights hold no "
                          f"{MLM_HEAD}… tensors (the head was not saved); {HOW}.")
    return checked


def masked_inputs(tokenizer, texts, max_positions):
    """Packed ``[CLS] text [SEP]`` inputs with ``[MASK]`` kept as the mask token (the tokenizer
    would split the string ``"[MASK]"`` like any text), plus ``mask_positions`` ``(N, P)``
    (0-padded) and the number of masks per text."""
    import tensorflow as tf

    pattern = re.compile(re.escape(tokenizer.special_tokens["mask"]), re.IGNORECASE)
    pieces = [pattern.split(text) for text in texts]
    for i, (text, parts) in enumerate(zip(texts, pieces)):
        if len(parts) == 1:
            raise DataError(f"Text {i + 1} ({text!r}) has no {tokenizer.special_tokens['mask']}; "
                            "write [MASK] where a token should be predicted.")
    flat = [part for parts in pieces for part in parts]
    ids = iter(tokenizer(tf.constant(flat, tf.string)).to_list())
    rows = []
    for i, parts in enumerate(pieces):
        row = [tokenizer.cls_token_id]
        for j, _ in enumerate(parts):
            row += ([tokenizer.mask_token_id] if j else []) + list(next(ids))
        rows.append(row + [tokenizer.sep_token_id])
        if len(rows[-1]) > max_positions:
            raise DataError(f"Text {i + 1} has {len(rows[-1])} tokens with [CLS] and [SEP]; this "
                            f"preset reads at most {max_positions}. Shorten it.")
    length = max(len(row) for row in rows)
    token_ids = np.full((len(rows), length), tokenizer.pad_token_id, "int32")
    padding_mask = np.zeros((len(rows), length), "int32")
    for i, row in enumerate(rows):
        token_ids[i, :len(row)], padding_mask[i, :len(row)] = row, 1
    where = [np.flatnonzero(row == tokenizer.mask_token_id) for row in token_ids]
    counts = [len(w) for w in where]
    positions = np.zeros((len(rows), max(counts)), "int32")
    for i, w in enumerate(where):
        positions[i, :len(w)] = w
    return {"token_ids": token_ids, "segment_ids": np.zeros_like(token_ids),
            "padding_mask": padding_mask, "mask_positions": positions}, counts


def run_fill_mask(args):
    """Run ``kbl fill-mask``; returns, per text, per ``[MASK]``, ``[(token, probability)]``."""
    preset = check_mlm_preset(args.preset)
    if args.k < 1:
        raise ConfigError(f"-k {args.k}: give a positive number of tokens.")
    if not all(text.strip() for text in args.texts):
        raise DataError("A text is empty; give texts with [MASK] in them.")

    import keras

    family = preset.family
    tokenizer = family.tokenizer_class.from_preset(preset.directory)
    features, counts = masked_inputs(tokenizer, args.texts,
                                     int(preset.config.get("max_positions", 512)))
    model = family.task("fill_mask").from_preset(preset.directory)
    logits = keras.ops.convert_to_numpy(model.predict_on_batch(features)["mlm"])  # (N, P, V)
    logits = logits.astype("float64")
    probabilities = np.exp(logits - logits.max(-1, keepdims=True))
    probabilities /= probabilities.sum(-1, keepdims=True)
    results = []
    for i, text in enumerate(args.texts):
        guesses = []
        for p in range(counts[i]):
            top = np.argsort(-probabilities[i, p], kind="stable")[:args.k]
            guesses.append([(tokenizer.id_to_token(int(t)), float(probabilities[i, p, t]))
                            for t in top])
        results.append(guesses)
        print(text)
        for p, guess in enumerate(guesses, start=1):
            print(f"  [MASK] {p}: " + ", ".join(f"{token} {prob:.3f}" for token, prob in guess))
        best = iter(guess[0][0] for guess in guesses)
        mask = re.compile(re.escape(tokenizer.special_tokens["mask"]), re.IGNORECASE)
        print("  → " + mask.sub(lambda _: next(best), text))
    return results
