"""GPT-1 BPE: ids equal transformers' OpenAIGPTTokenizer, Python and tf.data paths agree, files."""

import json
import tarfile

import pytest
import tensorflow as tf

from keras_bert_lab.data import registry
from keras_bert_lab.errors import ConfigError, DataError
from keras_bert_lab.preprocessing.bpe import GPT_SPECIAL_TOKENS, BytePairTokenizer
from keras_bert_lab.preprocessing.bpe_files import read_encoder, read_merges
from tests.conftest import locate_or_skip
from tests.markers import backend_independent

pytestmark = backend_independent

transformers = pytest.importorskip("transformers")
tokenizers = pytest.importorskip("tokenizers")

HARD_TEXTS = [
    "Héllo, Ångström! naïve café — “quoted” ‘text’ … 1,234.5 km²",
    "中文字符 and 日本語テキスト mixed, 한국어 too",
    "Ελληνικά Русский עברית العربية हिन्दी ไทย 🙂🚀 ✓",
    "tab\tnew\nline\r\u200bzero\u00a0nbsp\x00nul \ufffd",
    "aaaaaaaaaaaaaaaaa ababababab mississippi " + "x" * 150,
    # Runs of one symbol: the leftmost of equally ranked pairs merges first ("lll" -> "ll l").
    "llla ssso eeeh oooh mmmh ttta ffft 00000 111111 1000000 aaaab ooooooooh",
    "don't can't o'clock e-mail U.S.A. @user #tag http://example.com/a_b?c=d",
    "İstanbul ß ǅ ﬁ Ⅻ ① ½",
    "", "   ", ".", "a",
]


def reference_files(lines, num_merges):
    """A vocabulary and merges learned by `tokenizers` itself, GPT-1 style (``</w>``, <unk>)."""
    from tokenizers import Tokenizer, models, normalizers, pre_tokenizers, trainers

    model = Tokenizer(models.BPE(unk_token="<unk>", end_of_word_suffix="</w>"))
    model.normalizer = normalizers.BertNormalizer(lowercase=True)
    model.pre_tokenizer = pre_tokenizers.BertPreTokenizer()
    trainer = trainers.BpeTrainer(vocab_size=10**6, min_frequency=2, special_tokens=["<unk>"],
                                  end_of_word_suffix="</w>", show_progress=False)
    model.train_from_iterator(lines, trainer)
    data = json.loads(model.to_str())["model"]
    merges = [tuple(m) for m in data["merges"]][:num_merges]
    made = {a + b for a, b in merges}
    kept = sorted((i, t) for t, i in data["vocab"].items()
                  if t == "<unk>" or len(t.replace("</w>", "")) == 1 or t in made)
    return {t: n for n, (_, t) in enumerate(kept)}, merges


def openai_gpt(vocab, merges):
    """transformers 5.x OpenAIGPTTokenizer: vocab= dict and merges= tuples (file kwargs are
    ignored), plus GPT-1's three task tokens as special tokens."""
    reference = transformers.OpenAIGPTTokenizer(vocab=vocab, merges=merges)
    reference.add_special_tokens({"additional_special_tokens": list(GPT_SPECIAL_TOKENS)})
    # What we match: BERT's basic tokenization, not the original's spaCy + ftfy + text_standardize.
    backend = reference.backend_tokenizer
    assert isinstance(backend.normalizer, tokenizers.normalizers.BertNormalizer)
    assert isinstance(backend.pre_tokenizer, tokenizers.pre_tokenizers.BertPreTokenizer)
    return reference


@pytest.fixture(scope="module")
def trained():
    locate_or_skip("wikitext2", "train")
    vocab, merges = reference_files(registry.wikitext2_paragraphs("train")[:3000], 4000)
    return vocab, merges, openai_gpt(vocab, merges)


@pytest.fixture(scope="module")
def valid_lines():
    return [line for line in registry.load("wikitext2", "valid") if line.strip()][:800]


def test_ids_equal_openai_gpt_tokenizer_python_and_tf_data(trained, valid_lines):
    vocab, merges, reference = trained
    texts = valid_lines + HARD_TEXTS
    expected = reference(texts, add_special_tokens=False)["input_ids"]
    ours = BytePairTokenizer(vocab, merges)
    assert ours.vocabulary_size == len(reference)
    assert ours.encode(texts) == expected
    assert ours.tokenize(texts[0]) == reference.tokenize(texts[0])
    dataset = tf.data.Dataset.from_tensor_slices(texts).batch(64).map(ours)
    assert [row for batch in dataset for row in batch.to_list()] == expected
    assert sum(row.count(ours.unk_token_id) for row in expected) > 0  # unknown characters seen


def test_offsets_equal_openai_gpt_tokenizer_offset_mapping(trained, valid_lines):
    vocab, merges, reference = trained
    texts = valid_lines[:300] + HARD_TEXTS
    expected = reference(texts, add_special_tokens=False, return_offsets_mapping=True)
    ours = BytePairTokenizer(vocab, merges).encode_with_offsets(texts)
    assert ours["token_ids"] == expected["input_ids"]
    spans = [list(zip(a, b)) for a, b in zip(ours["start_offsets"], ours["end_offsets"])]
    assert spans == [[tuple(span) for span in row] for row in expected["offset_mapping"]]
    # and on plain English each span is its piece's text
    token_of = {i: t for t, i in vocab.items()}
    pieces = [(text[a:b].lower(), token_of[i].removesuffix("</w>"))
              for text, row, ids in zip(valid_lines[:50], spans, ours["token_ids"])
              for (a, b), i in zip(row, ids) if i != vocab["<unk>"]]
    assert len(pieces) > 1000 and all(a == b for a, b in pieces)


def test_special_tokens_follow_the_vocabulary(trained):
    vocab, merges, reference = trained
    ours = BytePairTokenizer(vocab, merges)
    ids = [ours.start_token_id, ours.delimiter_token_id, ours.classify_token_id]
    assert ids == reference.convert_tokens_to_ids(list(GPT_SPECIAL_TOKENS))
    assert ids == [len(vocab), len(vocab) + 1, len(vocab) + 2]
    assert ours.unk_token_id == vocab["<unk>"] == reference.unk_token_id
    body = ours.encode("the lobster")
    assert ours.decode([ids[0], *body, ids[2]]) == "the lobster"
    assert ours.decode(body, skip_special_tokens=False) == "the lobster"
    # Without "<unk>" in the vocabulary it is appended after the task tokens.
    plain = [t for t, _ in sorted(vocab.items(), key=lambda kv: kv[1]) if t != "<unk>"]
    ours = BytePairTokenizer(plain, merges)
    assert ours.start_token_id == len(plain) and ours.unk_token_id == len(plain) + 3
    assert ours.encode("™") == [ours.unk_token_id]


def test_tensor_shapes_and_python_inputs(trained, valid_lines):
    vocab, merges, _ = trained
    ours = BytePairTokenizer(vocab, merges)
    expected = ours.encode(valid_lines[:4])
    assert ours(tf.constant(valid_lines[0])).numpy().tolist() == expected[0]       # scalar
    grid = ours(tf.constant([valid_lines[:2], valid_lines[2:4]]))                   # [2, 2, (T)]
    assert grid.shape[:2] == [2, 2] and grid[1, 0].numpy().tolist() == expected[2]
    assert ours(valid_lines[:4]) == expected and ours(valid_lines[1]) == expected[1]
    assert ours([]) == [] and ours("") == [] and ours.encode("") == []
    assert ours(tf.constant(["", " "])).to_list() == [[], []]


def test_decode_round_trip(trained, valid_lines):
    vocab, merges, _ = trained
    ours = BytePairTokenizer(vocab, merges)
    words = ours.basic.split(valid_lines)
    checked = 0
    for ids, row in zip(ours.encode(valid_lines), words):
        if ours.unk_token_id not in ids:
            assert ours.decode(ids) == " ".join(row)
            checked += 1
    assert checked > 0.9 * len(valid_lines)
    assert ours.decode(tf.constant(ours.encode("Ångström, Sir!"))) == "angstrom , sir !"


def test_save_and_load_round_trip(trained, valid_lines, tmp_path):
    vocab, merges, reference = trained
    ours = BytePairTokenizer(vocab, merges)
    ours.save(tmp_path)
    lines = (tmp_path / "merges.txt").read_text(encoding="utf-8").split("\n")
    assert lines[0].startswith("#version") and lines[1] == " ".join(merges[0]) and lines[-1] == ""
    assert (tmp_path / "vocab.txt").read_text(encoding="utf-8").split("\n")[:-1] == \
        ours.vocabulary
    loaded = BytePairTokenizer.from_directory(tmp_path)
    assert loaded.vocabulary == ours.vocabulary and loaded.merges == ours.merges
    assert loaded.encode(valid_lines[:50]) == ours.encode(valid_lines[:50])
    # The reference library reads our merges.txt as it is.
    (tmp_path / "vocab.json").write_text(json.dumps(vocab), encoding="utf-8")
    _, read = tokenizers.models.BPE.read_file(str(tmp_path / "vocab.json"),
                                              str(tmp_path / "merges.txt"))
    assert [tuple(m) for m in read] == merges
    assert ours.decode(ours(tf.constant(valid_lines[:3]))) == ours.decode(ours.encode(
        valid_lines[:3]))


def test_line_breaks_in_tokens_are_escaped_in_vocab_txt(tmp_path):
    """GPT-1's encoder has a newline token, which basic tokenization can never produce."""
    vocab = {"a": 0, "b": 1, "a</w>": 2, "b</w>": 3, "ab</w>": 4, "\n</w>": 5}
    BytePairTokenizer(vocab, ["a b</w>"]).save(tmp_path)
    assert (tmp_path / "vocab.txt").read_text(encoding="utf-8").split("\n")[5] == "\\n</w>"
    loaded = BytePairTokenizer.from_directory(tmp_path)
    assert loaded.encode("ab a\nb") == [4, 2, 3]  # a line break separates words


def test_gpt_release_files_from_the_allennlp_fixture(tmp_path):
    archive = locate_or_skip("openai_gpt_fixture", "archive")
    with tarfile.open(archive) as tar:
        tar.extractall(tmp_path, filter="data")
    encoder, bpe = tmp_path / "model" / "encoder_bpe.json", tmp_path / "model" / "vocab.bpe"
    raw = read_encoder(encoder)
    merges = read_merges(bpe)  # "#version 0.0", 50 merges, a blank last line
    assert len(raw) == 51 and len(merges) == 50 and merges[0] == ("e", "e</w>")
    gpt = BytePairTokenizer.from_gpt_files(encoder, bpe)
    # The fixture gives "<unk>" the id of "ee</w>" (0), the way GPT-1's code sent unknown pieces
    # to id 0; its merges start from characters that are not themselves in the vocabulary.
    assert gpt.aliases == {"<unk>": 0} and gpt.unk_token_id == 0
    assert gpt.vocabulary_size == 53 and gpt.start_token_id == 50
    # "wowo": w o w o</w> -> "w o</w>" (merge 15) before "w o" (merge 16) -> wo wo</w> -> wowo</w>.
    assert gpt.tokenize("WOWO wow x") == ["wowo</w>", "wow</w>", "<unk>"]
    assert gpt.encode("wowo wow x") == [raw["wowo</w>"], raw["wow</w>"], 0]
    assert gpt(["wowo wow x"]) == [[raw["wowo</w>"], raw["wow</w>"], 0]]
    with pytest.warns(UserWarning, match="aliases"):
        gpt.save(tmp_path / "saved")


@pytest.mark.parametrize("merges, match", [
    ([], "has no merges"),
    (["a b", "ab c d"], "not two symbols"),
    (["ab c"], "neither a character"),
    (["a b", "b</w> c"], "ends a word"),
    (["a b", "ab q</w>"], "not in the vocabulary"),
    (["a b", "a b"], "repeats merge 1"),
])
def test_bad_merges_are_clear_errors(merges, match):
    vocab = ["a", "b", "c", "a</w>", "b</w>", "c</w>", "ab", "abc</w>", "b</w>c"]
    with pytest.raises(DataError, match=match):
        BytePairTokenizer(vocab, merges)


def test_bad_options_are_clear_errors():
    with pytest.raises(ConfigError, match="non-empty strings"):
        BytePairTokenizer(["a", "a</w>"], ["a a</w>"], unk_token=None)


def test_bad_files_are_clear_errors(tmp_path):
    (tmp_path / "empty.bpe").write_text("#version 0.0\n\n", encoding="utf-8")
    with pytest.raises(DataError, match="has no merges"):
        read_merges(tmp_path / "empty.bpe")
    (tmp_path / "gap.json").write_text('{"a": 0, "b": 2}', encoding="utf-8")
    with pytest.raises(DataError, match="without gaps"):
        BytePairTokenizer(tmp_path / "gap.json", ["a b"])
    (tmp_path / "list.json").write_text('["a", "b"]', encoding="utf-8")
    with pytest.raises(DataError, match="not a"):
        read_encoder(tmp_path / "list.json")
    with pytest.raises(DataError, match="does not exist"):
        read_merges(tmp_path / "missing.bpe")
    (tmp_path / "mid.bpe").write_text("#version 0.0\na b\n\nab c\n", encoding="utf-8")
    with pytest.raises(DataError, match="line 3"):
        read_merges(tmp_path / "mid.bpe")
