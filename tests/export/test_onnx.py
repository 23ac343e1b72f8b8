"""``export_onnx`` / ``kbl export --format onnx``: a classifier trained on this backend, run by
onnxruntime.

A tiny sentence-pair classifier is trained for a few steps on the current backend and exported
(through TensorFlow: in this process or a child one). onnxruntime must give the Keras model's
logits on real text packed two ways — by our tokenizer and by a Hugging Face fast tokenizer built
from the exported ``vocab.txt`` — for any batch size and length.
"""

import json

import keras
import numpy as np
import pytest

from keras_bert_lab import BertBackbone, BertClassifier, BertConfig
from keras_bert_lab.cli import main
from keras_bert_lab.data.registry import wikitext2_paragraphs
from keras_bert_lab.errors import ConfigError
from keras_bert_lab.export import export_onnx, onnx_export
from keras_bert_lab.models.bert.preprocessor import BertTextPreprocessor
from keras_bert_lab.preprocessing.wordpiece import WordPieceTokenizer
from tests.conftest import locate_or_skip

onnxruntime = pytest.importorskip("onnxruntime")
tokenizers = pytest.importorskip("tokenizers")

LENGTH = 32


@pytest.fixture(scope="module")
def exported(tmp_path_factory):
    """(Keras model, tokenizer, texts, export directory) of a trained tiny pair classifier."""
    words = locate_or_skip("bert_uncased_vocab").read_text(encoding="utf-8").split("\n")[:3000]
    tokenizer = WordPieceTokenizer(words, lowercase=True)
    texts = [p[:300] for p in wikitext2_paragraphs("valid")[:24]]
    config = BertConfig.from_size("tiny", vocabulary_size=len(words), num_heads=2,
                                  max_positions=LENGTH)
    model = BertClassifier(BertBackbone(config), labels=["no", "yes"])
    packed = BertTextPreprocessor(tokenizer, LENGTH)(texts[:12], texts[12:])
    model.compile()
    model.fit(packed, np.arange(12) % 2, epochs=2, batch_size=6, verbose=0)
    out = export_onnx(model, tmp_path_factory.mktemp("onnx") / "pair.onnx", pair=True,
                      sequence_length=LENGTH, vocabulary=words)
    return model, tokenizer, texts, out


def run_onnx(directory, inputs):
    session = onnxruntime.InferenceSession(str(directory / onnx_export.MODEL_FILE),
                                           providers=["CPUExecutionProvider"])
    (logits,) = session.run(["logits"], {k: np.asarray(v, "int32") for k, v in inputs.items()})
    return logits


def test_onnxruntime_gives_the_keras_logits_on_real_text(exported):
    model, tokenizer, texts, directory = exported
    info = json.loads((directory / onnx_export.INFO_NAME).read_text())
    assert info["labels"] == ["no", "yes"] and info["pair"] is True
    assert info["trained_with_backend"] == keras.backend.backend()
    assert sorted(p.name for p in directory.iterdir()) == sorted(onnx_export.ENTRIES)
    for count, length in ((12, LENGTH), (5, 17), (1, 9)):   # batch and length are free
        packed = BertTextPreprocessor(tokenizer, length)(texts[:count], texts[12:12 + count])
        expected = keras.ops.convert_to_numpy(model.predict_on_batch(packed))
        np.testing.assert_allclose(run_onnx(directory, packed), expected, atol=1e-5, rtol=0)


def test_the_exported_vocabulary_packs_like_ours_in_a_hugging_face_tokenizer(exported):
    model, tokenizer, texts, directory = exported
    fast = tokenizers.BertWordPieceTokenizer(str(directory / "vocab.txt"), lowercase=True)
    fast.enable_truncation(LENGTH, strategy="longest_first")
    fast.enable_padding(length=LENGTH)
    encoded = fast.encode_batch(list(zip(texts[:12], texts[12:])))
    theirs = {"token_ids": [e.ids for e in encoded], "segment_ids": [e.type_ids for e in encoded],
              "padding_mask": [e.attention_mask for e in encoded]}
    ours = BertTextPreprocessor(tokenizer, LENGTH)(texts[:12], texts[12:])
    for name, value in theirs.items():
        np.testing.assert_array_equal(np.asarray(value), keras.ops.convert_to_numpy(ours[name]))
    np.testing.assert_allclose(run_onnx(directory, theirs),
                               keras.ops.convert_to_numpy(model.predict_on_batch(ours)),
                               atol=1e-5, rtol=0)


def test_command_line_refuses_a_folder_that_is_no_onnx_export(exported, tmp_path, capsys):
    *_, directory = exported
    preset = tmp_path / "preset"
    exported[0].save_to_preset(preset, vocabulary=exported[1].vocabulary)
    other = tmp_path / "notes"
    other.mkdir()
    (other / "keep.txt").write_text("mine")
    code = main(["export", str(preset), "--output", str(other), "--format", "onnx", "--overwrite",
                 "--pair"])
    assert code == 2 and "not a keras_bert_lab export (onnx" in capsys.readouterr().err
    assert (other / "keep.txt").read_text() == "mine"
    # A SavedModel export is not an ONNX one either way round.
    with pytest.raises(ConfigError, match=r"not a keras_bert_lab export \(saved_model"):
        from keras_bert_lab.export import export_saved_model

        export_saved_model(preset, directory, overwrite=True, pair=True)


def test_missing_onnx_packages_are_named_with_the_install_command(monkeypatch):
    import importlib.util

    real = importlib.util.find_spec
    monkeypatch.setattr(importlib.util, "find_spec",
                        lambda name, *a: None if name == "tf2onnx" else real(name, *a))
    with pytest.raises(ConfigError, match=r"tf2onnx not installed.*pip install"):
        onnx_export.check_installed()
