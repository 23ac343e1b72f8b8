"""Word tagging inputs: alignment against HF's word_ids, and tags back from predictions."""

import numpy as np
import pytest

from keras_bert_lab.data import registry as datasets
from keras_bert_lab.data.conll import TaggedSentence, label_list, read_conll
from keras_bert_lab.errors import DataError
from keras_bert_lab.preprocessing import tagging
from keras_bert_lab.preprocessing.wordpiece import WordPieceTokenizer


@pytest.fixture(scope="module")
def tokenizers():
    transformers = pytest.importorskip("transformers")
    model_dir = datasets.locate("all_minilm_l6_v2", "model")
    hf = transformers.BertTokenizerFast.from_pretrained(str(model_dir))
    assert len(hf) == 30522
    return WordPieceTokenizer(datasets.locate("bert_uncased_vocab")), hf


def hf_alignment(hf, sentences, labels, length, label_all_pieces):
    """HF run_ner.py's tokenize_and_align_labels (labels -100 off the first piece, or
    label_all_tokens with B- turned into I-)."""
    index = {label: i for i, label in enumerate(labels)}
    b_to_i = {i: index.get("I-" + label[2:], i) if label.startswith("B-") else i
              for i, label in enumerate(labels)}
    enc = hf([s.words for s in sentences], is_split_into_words=True, truncation=True,
             max_length=length, padding="max_length")
    rows = []
    for row, sentence in enumerate(sentences):
        word_ids, previous, out = enc.word_ids(row), None, []
        for word in word_ids:
            if word is None:
                out.append(-100)
            elif word != previous:
                out.append(index[sentence.tags[word]])
            else:
                out.append(b_to_i[index[sentence.tags[word]]] if label_all_pieces else -100)
            previous = word
        rows.append(out)
    return np.array(enc["input_ids"]), np.array(enc["attention_mask"]), np.array(rows)


@pytest.mark.parametrize("label_all_pieces", [False, True])
def test_align_matches_hf_word_ids(tokenizers, label_all_pieces):
    ours_tokenizer, hf = tokenizers
    sentences = read_conll(datasets.locate("wnut16"), delimiter="\t")[:300]
    sentences.append(TaggedSentence(["Don't", "stop", "São", "Paulo", "!!"],
                                    ["O", "O", "B-geo-loc", "I-geo-loc", "O"]))
    labels = label_list(sentences)
    length = 24  # short: many tweets are truncated
    data = tagging.align(sentences, ours_tokenizer, labels, length, label_all_pieces)
    ids, mask, hf_labels = hf_alignment(hf, sentences, labels, length, label_all_pieces)
    np.testing.assert_array_equal(data.features["token_ids"], ids)
    np.testing.assert_array_equal(data.features["padding_mask"], mask)
    np.testing.assert_array_equal(data.sample_weight, (hf_labels != -100).astype("float32"))
    np.testing.assert_array_equal(data.labels, np.where(hf_labels == -100, 0, hf_labels))
    assert data.truncated_words > 0
    # Decoding the gold labels gives the gold tags back, except truncated words (-> "O").
    decoded = tagging.decode(data.labels, data.word_index, data.num_words, labels)
    for sentence, tags, row in zip(sentences, decoded, data.word_index):
        kept = set(row[row >= 0].tolist())
        assert tags == [t if i in kept else "O" for i, t in enumerate(sentence.tags)]
    assert len(kept) == 5  # "Don't" is three pieces of one input word; the words keep their tags


def test_align_handles_words_without_pieces(tokenizers):
    tokenizer, _ = tokenizers
    sentences = [TaggedSentence(["a", "\u200b", "b"], ["O", "B-x", "I-x"])]
    data = tagging.align(sentences, tokenizer, ["O", "B-x", "I-x"], 8)
    assert data.empty_words == 1
    assert data.word_index[0].tolist()[:4] == [-1, 0, 2, -1]
    with pytest.raises(DataError, match="at least 3"):
        tagging.align(sentences, tokenizer, ["O", "B-x", "I-x"], 2)


def test_preprocessor_round_trip_from_a_tagger_preset(tmp_path, tokenizers):
    from keras_bert_lab import BertBackbone, BertConfig, BertTokenClassifier

    labels = ["O", "B-PER", "I-PER"]
    backbone = BertBackbone(BertConfig.from_size("tiny", vocabulary_size=30522, max_positions=32))
    path = BertTokenClassifier(backbone, labels=labels).save_to_preset(
        tmp_path / "tagger", vocabulary=tokenizers[0].vocabulary,
        preprocessor={"sequence_length": 16})
    preprocessor = tagging.TaggingPreprocessor.from_preset(path)
    assert preprocessor.labels == labels and preprocessor.sequence_length == 16
    data = preprocessor([["Ada", "Lovelace", "wrote", "notes"]])
    logits = np.zeros((1, 16, 3), "float32")
    logits[0, :, 0] = 1.0
    logits[0, 1, 1] = logits[0, 2, 2] = 5.0        # "ada" B-PER, "love…" I-PER
    assert preprocessor.decode(logits, data) == [["B-PER", "I-PER", "O", "O"]]
    with pytest.raises(DataError, match="no tag labels"):
        tagging.TaggingPreprocessor.from_preset(backbone.save_to_preset(
            tmp_path / "plain", vocabulary=tokenizers[0].vocabulary))
