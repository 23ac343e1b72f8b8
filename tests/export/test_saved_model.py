"""``export_saved_model`` / ``kbl export``: a classifier trained on this backend, served by a bare
TensorFlow process.

Two tiny classifiers (one text; a sentence pair) are fine-tuned for a few steps on the current
backend with a 3,000-token slice of the real bert-base-uncased vocabulary (so WordPiece splits
and ``[UNK]`` are frequent), saved as presets and exported once per module — the single one with
the command line, the pair one with the Python API over a copy of the first export
(``overwrite``). A child Python started with ``-I -S`` (no ``.pth`` files, so no editable
keras_bert_lab) and with Keras and tensorflow-text made unimportable loads both SavedModels and
serves 1,000 real sentences (Rotten Tomatoes validation) with ~20 awkward texts and two long ones
that get cut; its answers must equal the Keras model's on the same strings (<= 1e-5 on scores).
"""

import argparse
import importlib.util
import json
import os
import shutil
import subprocess
import sys

import keras
import numpy as np
import pytest
import tensorflow as tf

from keras_bert_lab import BertBackbone, BertClassifier, BertConfig, BertTokenClassifier
from keras_bert_lab.data.labelled import load_dataset
from keras_bert_lab.data.registry import wikitext2_paragraphs
from keras_bert_lab.errors import ConfigError, PresetError
from keras_bert_lab.export import INFO_FILE, export_saved_model, is_export, read_export_info
from keras_bert_lab.export.archive import decode
from keras_bert_lab.export.tokenizer import GraphPreprocessor, GraphWordPiece
from keras_bert_lab.models.bert.preprocessor import BertTextPreprocessor
from keras_bert_lab.preprocessing.wordpiece import WordPieceTokenizer
from keras_bert_lab.commands import export as export_recipe
from keras_bert_lab.tasks.heads import decode_logits
from tests.conftest import locate_or_skip

LENGTH = 32
REAL = 1000  # real sentences served
AWKWARD = [
    "", "   ", "A", "Ångström's café served crème brûlée — naïvely!", "ÉCOLE NORMALE SUPÉRIEURE",
    "Straße & Übermaß", "北京是中国的首都。", "東京タワーに行きました！", "한국어 문장입니다.",
    "Mixed 中文 and English, with 數字 123.", "Emoji 😀 and symbols ©®™ ± § ¶",
    "Punctuation!!! ... ??? (brackets) [square] {curly} <angle> \"quotes\" 'single' --- ;:",
    "tab\tseparated\nnew line\r\ncarriage", "zero\u200bwidth\u00adsoft hyphen\ufeffbom",
    "control \x00\x07\x1b chars", "http://example.com/path?query=1&x=y#frag user@example.com",
    "Numbers: 3.14159, 1,000,000 and -42%.", "Ελληνικά κείμενα και русский текст", "العربية نص",
    "ﬁ ligature ½ fractions ①②③ ＦＵＬＬＷＩＤＴＨ",
    "supercalifragilisticexpialidocious " + "x" * 120 + " antidisestablishmentarianism",
]


@pytest.fixture(scope="module")
def data():
    """1,000 real sentences, the awkward texts, two long ones that get cut; and pairs."""
    locate_or_skip("rotten_tomatoes")
    parts = load_dataset("rotten_tomatoes")
    real = parts["valid"].texts[:REAL]
    assert len(real) == REAL
    long = [" ".join(real[30:40]), " ".join(real[40:50])]
    texts = real[:15] + long + AWKWARD + real[15:]
    pairs = texts[7:] + texts[:7]
    train = parts["train"].subset(range(64))
    return {"texts": texts, "pairs": pairs, "train_texts": train.texts,
            "train_labels": train.labels}


@pytest.fixture(scope="module")
def vocab():
    lines = locate_or_skip("bert_uncased_vocab").read_text(encoding="utf-8").split("\n")
    return lines[:3000]


def tiny_classifier(vocab, labels):
    return BertClassifier(BertBackbone(BertConfig.from_size("tiny", vocabulary_size=len(vocab))),
                          labels=labels)


@pytest.fixture(scope="module")
def trained(tmp_path_factory, data, vocab):
    """Two classifiers fine-tuned briefly on this backend, saved as presets."""
    keras.utils.set_random_seed(0)
    root = tmp_path_factory.mktemp("export")
    preprocessor = BertTextPreprocessor(WordPieceTokenizer(vocab), LENGTH)
    texts, labels = data["train_texts"], data["train_labels"]
    partner = texts[5:] + texts[:5]
    pair_labels = [f"both {a}" if a == b else "mixed" for a, b in
                   zip(labels, labels[5:] + labels[:5])]
    out = {}
    for kind, names, x, y in (
            ("single", ["negative", "positive"], preprocessor(texts), labels),
            ("pair", ["both negative", "both positive", "mixed"], preprocessor(texts, partner),
             pair_labels)):
        model = tiny_classifier(vocab, names)
        model.compile(optimizer=keras.optimizers.Adam(1e-3))
        model.fit(x, np.array([names.index(label) for label in y]), epochs=10, batch_size=16,
                  verbose=0)  # enough to tell texts apart (not just the class prior)
        preset = model.save_to_preset(root / f"{kind}_preset", vocabulary=vocab,
                                      preprocessor={"sequence_length": LENGTH,
                                                    "pair": kind == "pair"})
        out[kind] = {"model": model, "preset": preset}
    out["root"] = root
    return out


def parse(*argv):
    parser = argparse.ArgumentParser()
    export_recipe.register(parser.add_subparsers(dest="command"))
    return parser.parse_args(["export", *argv])


@pytest.fixture(scope="module")
def exports(trained):
    """The single model through ``kbl export``; the pair model with the API (given as a model),
    replacing a copy of the first export (``overwrite=True``)."""
    root = trained["root"]
    args = parse(str(trained["single"]["preset"]), "--output", str(root / "single"))
    single = args.func(args)
    shutil.copytree(single, root / "pair")
    model = BertClassifier.from_preset(trained["pair"]["preset"])  # a model, not a directory
    pair = export_saved_model(model, root / "pair", overwrite=True)
    return {"single": single, "pair": pair}


SERVE = r'''
import importlib.abc, importlib.machinery, importlib.util, json, sys

site, texts_file, single_dir, pair_dir, result = sys.argv[1:]
sys.path.append(site)  # TensorFlow and NumPy only: -S skipped every .pth (editable installs)


class Absent(importlib.abc.Loader):
    def create_module(self, spec):
        raise ModuleNotFoundError(f"{spec.name} is not installed here", name=spec.name)

    def exec_module(self, module):
        pass


class Block(importlib.abc.MetaPathFinder):  # as if Keras and tensorflow-text were not installed
    def find_spec(self, name, path=None, target=None):
        if name.split(".")[0] in ("keras", "tensorflow_text", "keras_hub", "keras_nlp"):
            return importlib.machinery.ModuleSpec(name, Absent())


sys.meta_path.insert(0, Block())
out = {"keras_bert_lab_found": importlib.util.find_spec("keras_bert_lab") is not None}
try:
    import keras_bert_lab  # noqa: F401
    out["keras_bert_lab_imported"] = True
except ImportError:
    out["keras_bert_lab_imported"] = False
import tensorflow as tf

texts = json.load(open(texts_file, encoding="utf-8"))
for name, directory in (("single", single_dir), ("pair", pair_dir)):
    model = tf.saved_model.load(directory)
    args = [tf.constant(texts["texts"])] + ([tf.constant(texts["pairs"])] if name == "pair" else [])
    served = model.serve(*args)
    packed = model.preprocess(*args)
    by_ids = model.serve_ids(**packed)
    signature = model.signatures["serving_default"]
    names = sorted(signature.structured_input_signature[1])
    by_signature = signature(**dict(zip(["text_a", "text_b"] if name == "pair" else ["text"],
                                        args)))
    empty = model.serve(*[tf.constant([], tf.string)] * len(args))
    out[name] = {
        "scores": served["scores"].numpy().tolist(),
        "label": [x.decode("utf-8") for x in served["label"].numpy()],
        "label_id": served["label_id"].numpy().tolist(),
        "dtypes": {k: v.dtype.name for k, v in served.items()},
        "packed": {k: v.numpy().tolist() for k, v in packed.items()},
        "ids_scores": by_ids["scores"].numpy().tolist(),
        "signature_scores": by_signature["scores"].numpy().tolist(),
        "signature_inputs": names, "empty_scores_shape": empty["scores"].shape.as_list()}
out["modules"] = sorted(m for m in ("keras", "keras_bert_lab", "tensorflow_text")
                       if m in sys.modules)
json.dump(out, open(result, "w", encoding="utf-8"))
'''


@pytest.fixture(scope="module")
def served(exports, data, tmp_path_factory):
    """What a bare TensorFlow process answers (no keras_bert_lab, Keras or tensorflow-text)."""
    work = tmp_path_factory.mktemp("serving")
    (work / "serve.py").write_text(SERVE, encoding="utf-8")
    (work / "texts.json").write_text(json.dumps(data), encoding="utf-8")
    site = os.path.dirname(os.path.dirname(importlib.util.find_spec("tensorflow").origin))
    env = {"PATH": os.environ.get("PATH", ""), "TF_CPP_MIN_LOG_LEVEL": "2", "HOME": str(work)}
    run = subprocess.run(
        [sys.executable, "-I", "-S", str(work / "serve.py"), site, str(work / "texts.json"),
         str(exports["single"]), str(exports["pair"]), str(work / "out.json")],
        cwd=work, env=env, capture_output=True, text=True)
    assert run.returncode == 0, run.stderr[-3000:]
    return json.loads((work / "out.json").read_text(encoding="utf-8"))


def keras_answers(trained, data, kind):
    model = trained[kind]["model"]
    preprocessor = BertTextPreprocessor.from_preset(trained[kind]["preset"])
    features = preprocessor(data["texts"], data["pairs"] if kind == "pair" else None)
    return features, model.predict_labels(features)


# ---- the bare process ------------------------------------------------------------------------
def test_serving_process_had_no_library_keras_or_tensorflow_text(served):
    assert not served["keras_bert_lab_found"] and not served["keras_bert_lab_imported"]
    assert served["modules"] == []


@pytest.mark.parametrize("kind", ["single", "pair"])
def test_scores_and_labels_equal_the_keras_model(trained, data, served, kind):
    _, expected = keras_answers(trained, data, kind)
    got = served[kind]
    scores = np.array(got["scores"])
    assert scores.shape == expected["probabilities"].shape == (len(data["texts"]),
                                                               len(trained[kind]["model"].labels))
    np.testing.assert_allclose(scores, expected["probabilities"], atol=1e-5, rtol=0)
    top2 = np.sort(expected["probabilities"], axis=-1)[:, -2:]
    clear = top2[:, 1] - top2[:, 0] > 1e-5  # a near-tie may fall either way
    assert clear.sum() > 0.9 * len(clear)
    assert [g for g, c in zip(got["label"], clear) if c] == \
        [e for e, c in zip(expected["labels"], clear) if c]
    assert got["label"] == [trained[kind]["model"].labels[i] for i in got["label_id"]]
    assert len(set(got["label"])) > 1 and np.ptp(scores, axis=0).min() > 0.1
    assert got["dtypes"] == {"label": "string", "label_id": "int32", "scores": "float32"}


@pytest.mark.parametrize("kind", ["single", "pair"])
def test_in_graph_preprocessing_equals_the_library_preprocessor(trained, data, served, vocab,
                                                               kind):
    features, _ = keras_answers(trained, data, kind)
    packed = served[kind]["packed"]
    for name in ("token_ids", "segment_ids", "padding_mask"):
        np.testing.assert_array_equal(np.array(packed[name]), features[name], err_msg=name)
    assert (features["padding_mask"].sum(-1) == LENGTH).sum() >= 2  # some texts were cut
    assert (features["token_ids"] == WordPieceTokenizer(vocab).unk_token_id).any()


@pytest.mark.parametrize("kind", ["single", "pair"])
def test_other_endpoints_agree(served, data, kind):
    got = served[kind]
    np.testing.assert_allclose(got["ids_scores"], got["scores"], atol=1e-6)
    np.testing.assert_allclose(got["signature_scores"], got["scores"], atol=1e-6)
    assert got["signature_inputs"] == (["text_a", "text_b"] if kind == "pair" else ["text"])
    assert got["empty_scores_shape"] == [0, 3 if kind == "pair" else 2]


# ---- what the export records; overwrite ----------------------------------------------------
def test_export_info_and_overwrite_of_a_previous_export(trained, exports):
    info = read_export_info(exports["pair"])
    assert info["pair"] and info["sequence_length"] == LENGTH
    assert info["labels"] == ["both negative", "both positive", "mixed"]
    assert info["trained_with_backend"] == keras.backend.backend()
    assert info["signatures"]["serve"]["inputs"] == ["text_a", "text_b"]
    assert read_export_info(exports["single"])["signatures"]["serve"]["inputs"] == ["text"]
    assert is_export(exports["single"]) and is_export(exports["pair"])
    leftovers = [p.name for p in trained["root"].iterdir() if p.name.startswith(".")]
    assert leftovers == []


# ---- refusals (checked before any TensorFlow work) -------------------------------------------
def test_existing_destination_needs_overwrite(trained, exports):
    before = sorted(p.name for p in exports["single"].iterdir())
    with pytest.raises(ConfigError, match="already exists; pass overwrite=True"):
        export_saved_model(trained["single"]["preset"], exports["single"])
    assert sorted(p.name for p in exports["single"].iterdir()) == before


def test_overwrite_never_replaces_a_folder_that_is_not_an_export(trained, tmp_path):
    precious = tmp_path / "thesis"
    precious.mkdir()
    (precious / "chapter1.txt").write_text("years of work")
    args = parse(str(trained["single"]["preset"]), "--output", str(precious), "--overwrite")
    with pytest.raises(ConfigError, match="is not a keras_bert_lab export"):
        args.func(args)
    assert (precious / "chapter1.txt").read_text() == "years of work"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["thesis"]


def test_overwrite_never_deletes_files_added_to_an_export(trained, exports, tmp_path):
    annotated = shutil.copytree(exports["single"], tmp_path / "annotated")
    (annotated / "notes.md").write_text("my notes")
    with pytest.raises(ConfigError, match="also notes.md, which export did not write"):
        export_saved_model(trained["single"]["preset"], annotated, overwrite=True)
    assert (annotated / "notes.md").read_text() == "my notes"


def test_a_preset_that_is_not_a_classifier_is_named(tmp_path, vocab):
    backbone = BertBackbone(BertConfig.from_size("tiny", vocabulary_size=len(vocab)))
    path = backbone.save_to_preset(tmp_path / "backbone", vocabulary=vocab)
    with pytest.raises(ConfigError, match=r"BertBackbone without a task head.*BertClassifier"):
        export_saved_model(path, tmp_path / "out")
    path = BertTokenClassifier(backbone, num_classes=3).save_to_preset(tmp_path / "ner",
                                                                      vocabulary=vocab)
    with pytest.raises(ConfigError, match=r"a token classifier .*\(BertTokenClassifier\).*"
                                          r"BertClassifier presets"):
        export_saved_model(path, tmp_path / "out")
    assert not (tmp_path / "out").exists()


def test_a_missing_preset_file_is_named(trained, tmp_path):
    broken = shutil.copytree(trained["single"]["preset"], tmp_path / "broken")
    (broken / "vocab.txt").unlink()
    with pytest.raises(PresetError, match="lacks vocab.txt"):
        export_saved_model(broken, tmp_path / "out")
    with pytest.raises(PresetError, match="does not exist"):
        export_saved_model(tmp_path / "nowhere", tmp_path / "out")


def test_single_or_pair_must_be_known(trained, tmp_path, vocab):
    model = trained["single"]["model"]
    path = model.save_to_preset(tmp_path / "unrecorded", vocabulary=vocab,
                                preprocessor={"sequence_length": LENGTH})
    with pytest.raises(ConfigError, match="one text or a sentence pair.*--single.*--pair"):
        export_saved_model(path, tmp_path / "out")
    with pytest.raises(ConfigError, match="sequence_length=513 is out of range"):
        export_saved_model(path, tmp_path / "out", pair=False, sequence_length=513)
    with pytest.raises(SystemExit):
        parse(str(path), "--output", "x", "--pair", "--single")


def test_the_old_spelling_of_output_still_works_with_a_warning():
    with pytest.warns(FutureWarning, match="--out is now --output"):
        args = parse("preset", "--out", "x")
    assert args.output == "x"


# ---- the in-graph pieces, in this process -----------------------------------------------------
def test_graph_wordpiece_equals_the_library_tokenizer_on_wikitext_and_edge_cases():
    tokenizer = WordPieceTokenizer(locate_or_skip("bert_uncased_vocab"))
    locate_or_skip("wikitext2", "valid")
    texts = wikitext2_paragraphs("valid") + AWKWARD + [
        "a" * 100, "a" * 101, "é" * 100 + " " + "é" * 101, "unaffable xyzzyq telecommunications"]
    graph = tf.function(GraphWordPiece(tokenizer).tokenize,
                        input_signature=[tf.TensorSpec([None], tf.string)])
    assert graph(tf.constant(texts)).to_list() == tokenizer(tf.constant(texts)).to_list()
    raw = tf.constant([b"bad \xff\xfe utf-8 \xc3", b"\xe4\xb8\xad\xe6\x96\x87"])
    assert graph(raw).to_list() == tokenizer(raw).to_list()
    cased = WordPieceTokenizer(tokenizer.vocabulary, lowercase=False)
    assert GraphWordPiece(cased).tokenize(tf.constant(AWKWARD)).to_list() == \
        cased(tf.constant(AWKWARD)).to_list()


def test_graph_preprocessor_packs_like_the_library(data, vocab):
    tokenizer = WordPieceTokenizer(vocab)
    graph = GraphPreprocessor(tokenizer, 16)
    expected = BertTextPreprocessor(tokenizer, 16)(data["texts"], data["pairs"])
    got = graph(tf.constant(data["texts"]), tf.constant(data["pairs"]))
    for name, value in expected.items():
        np.testing.assert_array_equal(got[name].numpy(), value, err_msg=name)


@pytest.mark.parametrize("problem", ["single_label", "multi_label", "regression"])
def test_decode_equals_decode_logits(problem):
    rng = np.random.default_rng(0)
    k = 1 if problem == "regression" else 4
    logits = rng.normal(size=(6, k)).astype("float32") * 3
    names = None if problem == "regression" else ["a", "b", "c", "d"]
    got = {key: value.numpy() for key, value in decode(tf.constant(logits), problem,
                                                        names).items()}
    expected = decode_logits(logits, problem, names)
    if problem == "regression":
        assert set(got) == {"scores"}
        np.testing.assert_allclose(got["scores"][:, 0], expected["scores"], atol=1e-6)
        return
    np.testing.assert_allclose(got["scores"], expected["probabilities"], atol=1e-6)
    if problem == "single_label":
        assert [x.decode() for x in got["label"]] == expected["labels"]
    else:
        assert [np.flatnonzero(row).tolist() for row in got["active"]] == expected["ids"]
        assert got["label_id"].tolist() == expected["probabilities"].argmax(-1).tolist()
