"""SQuAD windows (vs HF's fast tokenizer) and post-processing (answers from window scores)."""

import numpy as np
import pytest

from keras_bert_lab.data.registry import locate
from keras_bert_lab.data.squad import SquadExample, read_squad
from keras_bert_lab.errors import ConfigError
from keras_bert_lab.preprocessing.span_qa import SpanQAPreprocessor, postprocess, prepare_features
from keras_bert_lab.preprocessing.wordpiece import WordPieceTokenizer
from tests.synthetic_squad import synthetic_squad


@pytest.fixture(scope="module")
def tokenizer():
    return WordPieceTokenizer(locate("bert_uncased_vocab"))


@pytest.fixture(scope="module")
def hf_tokenizer():
    transformers = pytest.importorskip("transformers")
    tok = transformers.BertTokenizerFast(vocab=str(locate("bert_uncased_vocab")),
                                         do_lower_case=True)
    assert len(tok) == 30522
    return tok


# ---- windowing vs transformers -------------------------------------------------------------------
def hf_windows(hf_tokenizer, example, sequence_length, doc_stride):
    """HF's windows (run_qa.py's prepare_train_features), overlap matching ``doc_stride``."""
    room = sequence_length - len(hf_tokenizer(example.question)["input_ids"]) - 1
    encoded = hf_tokenizer(example.question, example.context, truncation="only_second",
                           max_length=sequence_length, stride=room - doc_stride,
                           return_overflowing_tokens=True, return_offsets_mapping=True,
                           padding="max_length")
    windows = []
    for i, ids in enumerate(encoded["input_ids"]):
        sequence_ids = encoded.sequence_ids(i)
        offsets = encoded["offset_mapping"][i]
        context = [t for t, s in enumerate(sequence_ids) if s == 1]
        first, last = context[0], context[-1]
        start = end = 0
        if example.answers:
            text, start_char = example.answers[0]
            end_char = start_char + len(text)
            if offsets[first][0] <= start_char and offsets[last][1] >= end_char:
                start, end = first, last
                while start <= last and offsets[start][0] <= start_char:
                    start += 1
                start -= 1
                while end >= first and offsets[end][1] >= end_char:
                    end -= 1
                end += 1
        windows.append({"token_ids": ids, "segment_ids": encoded["token_type_ids"][i],
                        "padding_mask": encoded["attention_mask"][i],
                        "offsets": [tuple(offsets[t]) if s == 1 else (-1, -1)
                                    for t, s in enumerate(sequence_ids)],
                        "start": start, "end": end})
    return windows


def window_examples():
    examples, _ = read_squad(locate("squad_sample"))
    long = synthetic_squad(3, facts=4, filler=60, seed=5)
    extra, _ = read_squad(long)
    accented = "Ångström lived in Uppsala; the café served crème brûlée. " * 6
    extra.append(SquadExample("acc", "Where did Ångström live?",
                                    accented + "He was born in Lögdö.",
                                    answers=(("Lögdö", len(accented) + 15),)))
    return examples + extra


@pytest.mark.parametrize("sequence_length, doc_stride", [(64, 20), (48, 7), (384, 128)])
def test_windows_match_hf_fast_tokenizer(tokenizer, hf_tokenizer, sequence_length, doc_stride):
    examples = window_examples()
    features = prepare_features(examples, tokenizer, sequence_length=sequence_length,
                                      doc_stride=doc_stride, max_query_length=64)
    row = 0
    for index, example in enumerate(examples):
        expected = hf_windows(hf_tokenizer, example, sequence_length, doc_stride)
        rows = np.flatnonzero(features.example_index == index)
        assert len(rows) == len(expected), example.id
        for r, window in zip(rows, expected):
            for key in ("token_ids", "segment_ids", "padding_mask"):
                np.testing.assert_array_equal(features.inputs[key][r], window[key])
            assert [tuple(o) for o in features.offsets[r].tolist()] == window["offsets"]
            assert (features.start_positions[r], features.end_positions[r]) == \
                (window["start"], window["end"]), example.id
            row += 1
    assert row == len(features)
    # the windows of a long context really do slide, and some answers fall outside a window
    assert len(features) > len(examples) and (features.start_positions == 0).any()


def test_long_questions_keep_their_first_max_query_length_tokens(tokenizer):
    question = "what " * 50 + "is it?"
    example = SquadExample("q", question, "It is a test.", answers=(("a test", 6),))
    features = prepare_features([example], tokenizer, sequence_length=32, max_query_length=8)
    ids = features.inputs["token_ids"][0]
    assert ids[0] == tokenizer.cls_token_id and ids[9] == tokenizer.sep_token_id
    assert list(ids[1:9]) == tokenizer(question)[:8]
    assert tokenizer.detokenize(ids[features.start_positions[0]:features.end_positions[0] + 1]
                                .tolist()) == "a test"
    with pytest.raises(ConfigError, match="no room for context"):
        prepare_features([example], tokenizer, sequence_length=10, max_query_length=8)


def test_max_context_marks_each_token_in_exactly_one_window(tokenizer):
    examples, _ = read_squad(synthetic_squad(2, filler=30, seed=1))
    features = prepare_features(examples, tokenizer, sequence_length=64, doc_stride=16)
    for index in range(len(examples)):
        rows = features.example_index == index
        owned = features.max_context[rows].sum()
        assert owned == len(tokenizer(examples[index].context))


# ---- post-processing -----------------------------------------------------------------------------
def long_context_features(tokenizer, version_2=False):
    data = synthetic_squad(1, facts=1, filler=250, seed=7, answer_last=True)
    examples, _ = read_squad(data)
    assert len(tokenizer(examples[0].context)) > 1800        # ~2,000 tokens
    features = prepare_features(examples, tokenizer, sequence_length=384, doc_stride=128)
    return examples, features


def test_answer_in_the_last_window_of_a_long_context_is_found(tokenizer):
    examples, features = long_context_features(tokenizer)
    assert len(features) >= 12
    last = len(features) - 1
    # gold positions only in the last window (the fact is the context's last sentence)
    assert features.start_positions[last] > 0 and not features.start_positions[:last].any()
    rng = np.random.default_rng(0)
    start = rng.normal(size=features.offsets.shape[:2]).astype("float32")
    end = rng.normal(size=features.offsets.shape[:2]).astype("float32")
    s, e = features.start_positions[last], features.end_positions[last]
    start[last, s], end[last, e] = 6.0, 6.0                   # the gold span: score 12
    # decoys that outscore it but must not be chosen
    start[:last, 0] = end[:last, 0] = 50.0                    # [CLS] (v1.1 has no null answer)
    start[0, 1], end[0, 2] = 40.0, 40.0                       # the question
    start[1, 90], end[1, 80] = 40.0, 40.0                     # end before start
    start[2, 60], end[2, 60 + 30] = 40.0, 40.0                # 31 tokens: too long
    start[3, -1], end[3, -1] = 40.0, 40.0                     # padding / [SEP]
    p = int(np.flatnonzero(features.max_context[4])[10])      # a start owned by window 4
    start[4, p], end[4, p + 1] = 5.9, 5.9                     # valid, slightly lower: runner-up
    predictions, n_best = postprocess(examples, features, start, end)
    gold = examples[0].answers[0][0]
    assert predictions[examples[0].id] == gold
    assert len(n_best[examples[0].id]) == 20
    assert n_best[examples[0].id][0]["score"] == pytest.approx(12.0)
    assert n_best[examples[0].id][1]["score"] == pytest.approx(11.8)
    # scores cut to a shorter T (a trimmed batch) give the same answer
    cut = max(int(features.inputs["padding_mask"].sum(1).max()), s + 1)
    assert postprocess(examples, features, start[:, :cut], end[:, :cut])[0] == predictions


def test_a_start_outside_its_max_context_window_is_ignored(tokenizer):
    examples, _ = read_squad(synthetic_squad(1, filler=12, seed=2))
    features = prepare_features(examples, tokenizer, sequence_length=48, doc_stride=12)
    assert len(features) >= 3
    # a token seen in windows 0 and 1 near window 0's end has more context in window 1
    position = int(np.flatnonzero(features.offsets[0, :, 0] >= 0)[-1])     # last context token
    char = features.offsets[0, position, 0]
    other = int(np.flatnonzero(features.offsets[1, :, 0] == char)[0])
    assert not features.max_context[0, position] and features.max_context[1, other]
    start = np.zeros(features.offsets.shape[:2], "float32")
    end = np.zeros_like(start)
    start[0, position], end[0, position] = 10.0, 10.0
    start[1, other], end[1, other] = 8.0, 8.0
    predictions, n_best = postprocess(examples, features, start, end)
    assert n_best[examples[0].id][0]["score"] == pytest.approx(16.0)


def test_null_threshold_for_squad_2(tokenizer):
    example = SquadExample("q", "Who?", "It was made by Ada Lovelace.")
    features = prepare_features([example], tokenizer, sequence_length=32)
    start = np.zeros((1, 32), "float32")
    end = np.zeros_like(start)
    start[0, 8], end[0, 10] = 3.0, 3.0                       # "Ada Lovelace": 6
    start[0, 0], end[0, 0] = 4.0, 4.0                        # null: 8
    run = lambda **kw: postprocess([example], features, start, end, **kw)[0]["q"]  # noqa
    assert run() == "Ada Lovelace"                           # v1.1: never empty
    assert run(version_2=True) == ""                         # 8 - 6 = 2 > 0
    assert run(version_2=True, null_threshold=2.5) == "Ada Lovelace"


def test_preprocessor_from_a_preset_windows_and_answers(tmp_path, tokenizer):
    from keras_bert_lab import BertBackbone, BertConfig

    backbone = BertBackbone(BertConfig.from_size("tiny", vocabulary_size=30522, max_positions=32))
    path = backbone.save_to_preset(tmp_path / "p", vocabulary=tokenizer.vocabulary)
    qa = SpanQAPreprocessor.from_preset(path, sequence_length=16, doc_stride=4)
    examples = [SquadExample("q1", "Who?", "It was made by Ada Lovelace in 1843.")]
    features = qa(examples)
    expected = prepare_features(examples, tokenizer, sequence_length=16, doc_stride=4)
    np.testing.assert_array_equal(features.inputs["token_ids"], expected.inputs["token_ids"])
    start, end = np.zeros((len(features), 16)), np.zeros((len(features), 16))
    start[0, 8], end[0, 10] = 5.0, 5.0
    logits = {"start_logits": start, "end_logits": end}
    assert qa.answers(examples, features, logits) == postprocess(
        examples, features, start, end)[0] == {"q1": "Ada Lovelace"}


# ---- GPT rows ------------------------------------------------------------------------------------
@pytest.fixture(scope="module")
def gpt_tokenizer():
    from keras_bert_lab.preprocessing.bpe_trainer import train_bpe

    data = synthetic_squad(40, facts=2, filler=3, seed=5)
    texts = [p["context"] + " " + qa["question"] for a in data["data"] for p in a["paragraphs"]
             for qa in p["qas"]]
    return train_bpe(texts, num_merges=150, min_frequency=2)


def test_gpt_rows_window_the_context_and_put_no_answer_on_the_extract_token(gpt_tokenizer):
    t = gpt_tokenizer
    examples, _ = read_squad(synthetic_squad(6, facts=2, filler=6, seed=6))
    from keras_bert_lab.models.gpt.preprocessor import GPTSpanRows

    features = prepare_features(examples, t, sequence_length=40, doc_stride=10, layout=GPTSpanRows)
    assert len(features) > 2 * len(examples) and "segment_ids" not in features.inputs
    answered = 0
    for row in range(len(features)):
        ids = features.inputs["token_ids"][row]
        length = int(features.inputs["padding_mask"][row].sum())
        example = examples[features.example_index[row]]
        question = t.encode(example.question)
        assert ids[0] == t.start_token_id and ids[len(question) + 1] == t.delimiter_token_id
        assert ids[:len(question) + 1].tolist()[1:] == question
        assert ids[length - 1] == t.classify_token_id and not ids[length:].any()
        assert features.null_positions[row] == length - 1          # the extract token
        context = np.flatnonzero(features.offsets[row, :, 0] >= 0)
        assert context.tolist() == list(range(len(question) + 2, length - 1))
        s, e = features.start_positions[row], features.end_positions[row]
        if s == features.null_positions[row]:
            assert e == s
            continue
        answered += 1
        begin, finish = features.offsets[row, s, 0], features.offsets[row, e, 1]
        assert example.context[begin:finish] == example.answers[0][0]
    assert answered >= len(examples)   # every answer lies wholly inside at least one window

    start = np.zeros((len(features), 40), "float32")
    end = np.zeros_like(start)
    rows = np.arange(len(features))
    start[rows, features.start_positions] = end[rows, features.end_positions] = 5.0
    predictions, _ = postprocess(examples, features, start, end)
    assert predictions == {e.id: e.answers[0][0] for e in examples}
    start[:], end[:] = 0.0, 0.0
    start[rows, features.null_positions] = end[rows, features.null_positions] = 5.0
    assert set(postprocess(examples, features, start, end, version_2=True)[0].values()) == {""}


def test_gpt_preprocessor_from_a_gpt_preset(tmp_path, gpt_tokenizer):
    from keras_bert_lab import GPTBackbone, GPTConfig

    config = GPTConfig.from_size("tiny", vocabulary_size=gpt_tokenizer.vocabulary_size,
                                 max_positions=32)
    path = GPTBackbone(config).save_to_preset(tmp_path / "g", vocabulary=gpt_tokenizer.vocabulary,
                                              merges=gpt_tokenizer.merges)
    from keras_bert_lab.models.gpt.preprocessor import GPTSpanQAPreprocessor, GPTSpanRows

    qa = SpanQAPreprocessor.from_preset(path, sequence_length=32, doc_stride=8)
    assert type(qa) is GPTSpanQAPreprocessor   # the family's own preprocessor
    examples, _ = read_squad(synthetic_squad(3, facts=1, filler=4, seed=7))
    expected = prepare_features(examples, gpt_tokenizer, sequence_length=32, doc_stride=8,
                                layout=GPTSpanRows)
    np.testing.assert_array_equal(qa(examples).inputs["token_ids"],
                                  expected.inputs["token_ids"])
