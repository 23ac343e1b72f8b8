"""text/tagging: CoNLL reading, alignment against HF's word_ids, entity scores against seqeval."""

import random
import warnings

import numpy as np
import pytest

from keras_bert_lab import datasets
from keras_bert_lab.errors import DataError
from keras_bert_lab.text import tagging
from keras_bert_lab.text.tagging import TaggedSentence
from keras_bert_lab.text.tokenizer import WordPieceTokenizer


# ---- reading ----------------------------------------------------------------------------------
def write(tmp_path, text, name="data.conll"):
    path = tmp_path / name
    path.write_text(text, encoding="utf-8")
    return path


def test_read_conll_docstart_whitespace_separators_and_columns(tmp_path):
    text = ("-DOCSTART- -X- -X- O\n\nEU NNP B-NP B-ORG\nrejects VBZ B-VP O\n \t \n"
            "Peter NNP B-NP B-PER\nBlackburn NNP I-NP I-PER\n-DOCSTART- -X- -X- O\n"
            "BRUSSELS NNP B-NP B-LOC")  # no final newline
    path = write(tmp_path, text)
    got = [(s.words, s.tags) for s in tagging.read_conll(path)]
    assert got == [(["EU", "rejects"], ["B-ORG", "O"]),
                   (["Peter", "Blackburn"], ["B-PER", "I-PER"]), (["BRUSSELS"], ["B-LOC"])]
    chunks = tagging.read_conll(path, token_column=0, tag_column=2)
    assert chunks[1].tags == ["B-NP", "I-NP"]


def test_read_conll_tab_delimiter_keeps_spaces_in_tokens(tmp_path):
    path = write(tmp_path, "New York\tB-LOC\nis\tO\n\n")
    assert tagging.read_conll(path, delimiter="\t")[0].words == ["New York", "is"]


def test_read_conll_errors_name_file_and_line(tmp_path):
    path = write(tmp_path, "EU B-ORG\nrejects O\n\nPeter NNP B-PER\n")
    with pytest.raises(DataError, match=r"data\.conll, line 4: 3 columns .* has 2"):
        tagging.read_conll(path)
    with pytest.raises(DataError, match="line 1: tag_column=5"):
        tagging.read_conll(path, tag_column=5)
    with pytest.raises(DataError, match="does not exist"):
        tagging.read_conll(tmp_path / "missing.conll")
    with pytest.raises(DataError, match="no tagged tokens"):
        tagging.read_conll(write(tmp_path, "\n \n-DOCSTART- O\n", "empty.conll"))


def test_read_wnut16_registry_file():
    path = datasets.locate("wnut16")
    sentences = tagging.read_conll(path, delimiter="\t")
    lines = path.read_text(encoding="utf-8").split("\n")
    token_lines = [line for line in lines if line.strip()]
    assert len(sentences) == 2394
    assert sum(len(s.words) for s in sentences) == len(token_lines)
    assert sentences[0].words[:3] == ["@paulwalk", "It", "'s"]
    labels = tagging.label_list(sentences)
    assert labels[0] == "O" and len(labels) == 21  # O + B/I of 10 types


# ---- labels ----------------------------------------------------------------------------------
def test_label_list_and_unknown_tags():
    train = [TaggedSentence(["a", "b", "c"], ["B-x", "O", "I-y"]), TaggedSentence(["d"], ["MISC"])]
    labels = tagging.label_list(train)
    assert labels == ["O", "B-x", "I-x", "B-y", "I-y", "MISC"]
    dev = [TaggedSentence(["a", "b"], ["B-z", "B-z"]), TaggedSentence(["c"], ["I-q"])]
    with pytest.raises(DataError, match=r"dev file .*'B-z' \(2x\), 'I-q' \(1x\)"):
        tagging.check_labels(dev, labels, where="dev file")


def test_split_sentences_is_seeded_partition():
    items = list(range(101))
    a = tagging.split_sentences(items, (0.8, 0.2), seed=3)
    b = tagging.split_sentences(items, (0.8, 0.2), seed=3)
    assert a == b and len(a[0]) == 81 and sorted(a[0] + a[1]) == items
    assert a != tagging.split_sentences(items, (0.8, 0.2), seed=4)
    with pytest.raises(DataError):
        tagging.split_sentences(items, (0.8, 0.3))


# ---- alignment against Hugging Face's is_split_into_words ------------------------------------
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
    sentences = tagging.read_conll(datasets.locate("wnut16"), delimiter="\t")[:300]
    sentences.append(TaggedSentence(["Don't", "stop", "São", "Paulo", "!!"],
                                    ["O", "O", "B-geo-loc", "I-geo-loc", "O"]))
    labels = tagging.label_list(sentences)
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


# ---- entity scores against seqeval ------------------------------------------------------------
seqeval_metrics = pytest.importorskip("seqeval.metrics")
seqeval_scheme = pytest.importorskip("seqeval.scheme")

EDGE_CASES = [
    ([["O", "B-PER", "I-PER"]], [["O", "B-PER", "I-PER"]]),                 # entity at the end
    ([["O", "B-PER", "I-PER"]], [["O", "B-PER", "O"]]),
    ([["I-PER", "I-PER", "O", "B-LOC"]], [["B-PER", "I-PER", "O", "I-LOC"]]),  # I- without B-
    ([["B-PER", "B-PER", "I-PER"]], [["B-PER", "I-PER", "I-PER"]]),          # adjacent, same type
    ([["B-PER", "B-LOC", "I-LOC"]], [["B-PER", "I-LOC", "I-LOC"]]),          # adjacent, other type
    ([["B-PER", "I-LOC", "O"]], [["B-PER", "I-PER", "O"]]),                  # type change inside
    ([["O", "O"], ["O"]], [["O", "O"], ["O"]]),                              # all O
    ([["O", "O"]], [["B-X", "O"]]),                                          # no true entity
    ([["B-geo-loc", "I-geo-loc"], ["I-geo-loc"]], [["B-geo-loc", "I-geo-loc"], ["B-geo-loc"]]),
    ([["B-A", "I-A"], ["I-A", "O"]], [["B-A", "O"], ["I-A", "O"]]),          # across sentences
]


def reference(true, pred, mode):
    options = {"mode": "strict", "scheme": seqeval_scheme.IOB2} if mode == "strict" else {}
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        totals = (seqeval_metrics.precision_score(true, pred, **options),
                  seqeval_metrics.recall_score(true, pred, **options),
                  seqeval_metrics.f1_score(true, pred, **options))
        report = seqeval_metrics.classification_report(true, pred, output_dict=True, **options)
    per_type = {k: v for k, v in report.items() if not k.endswith(" avg")}
    return totals, per_type


def assert_same_as_seqeval(true, pred, mode):
    ours = tagging.entity_scores(true, pred, mode=mode)
    (precision, recall, f1), per_type = reference(true, pred, mode)
    assert ours["precision"] == pytest.approx(precision, abs=1e-12)
    assert ours["recall"] == pytest.approx(recall, abs=1e-12)
    assert ours["f1"] == pytest.approx(f1, abs=1e-12)
    assert sorted(ours["per_type"]) == sorted(per_type)
    for kind, row in per_type.items():
        for key, ours_key in (("precision", "precision"), ("recall", "recall"),
                              ("f1-score", "f1"), ("support", "support")):
            assert ours["per_type"][kind][ours_key] == pytest.approx(row[key], abs=1e-12), kind


@pytest.mark.parametrize("mode", ["conlleval", "strict"])
@pytest.mark.parametrize("case", range(len(EDGE_CASES)))
def test_entity_scores_edge_cases_match_seqeval(case, mode):
    true, pred = EDGE_CASES[case]
    assert_same_as_seqeval(true, pred, mode)


@pytest.mark.parametrize("mode", ["conlleval", "strict"])
def test_entities_match_seqeval_on_single_sequences(mode):
    from seqeval.metrics.sequence_labeling import get_entities
    from seqeval.scheme import IOB2, Tokens

    rng = random.Random(0)
    tags = ["O", "B-A", "I-A", "B-B", "I-B", "B-geo-loc", "I-geo-loc"]
    for _ in range(500):
        seq = [rng.choice(tags) for _ in range(rng.randint(0, 12))]
        if mode == "strict":
            expected = [(e.tag, e.start, e.end - 1) for e in Tokens(seq, IOB2).entities]
        else:
            expected = get_entities(seq)
        assert tagging.entities(seq, mode=mode) == expected, seq


@pytest.mark.parametrize("mode", ["conlleval", "strict"])
def test_entity_scores_random_corpora_match_seqeval(mode):
    rng = random.Random(1)
    tags = ["O"] * 4 + ["B-A", "I-A", "B-B", "I-B", "B-C-d", "I-C-d"]
    for _ in range(150):
        true, pred = [], []
        for _ in range(rng.randint(1, 6)):
            n = rng.randint(1, 10)
            t = [rng.choice(tags) for _ in range(n)]
            # predictions: mostly the truth with some tags flipped, sometimes anything
            p = [rng.choice(tags) if rng.random() < 0.3 else tag for tag in t]
            true.append(t)
            pred.append(p)
        assert_same_as_seqeval(true, pred, mode)


def test_strict_mode_rejects_non_iob2_tags_and_unknown_mode():
    with pytest.raises(DataError, match="not IOB2"):
        tagging.entities(["S-PER"], mode="strict")
    with pytest.raises(DataError, match="mode"):
        tagging.entities(["B-PER"], mode="loose")
    with pytest.raises(DataError, match="same number"):
        tagging.entity_scores([["O"]], [["O", "O"]])
