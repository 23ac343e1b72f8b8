"""The word2vec/GloVe text format: round trips (ours and gensim's readers and writers), and bad
files that name the file and line."""

import numpy as np
import pytest

from keras_bert_lab.errors import ConfigError, DataError
from keras_bert_lab.vectors import WordVectors, read_text
from tests.vectors.helpers import gensim_keyed, numpy_only, random_vectors

pytestmark = numpy_only


def test_round_trip_with_header(tmp_path):
    vectors = random_vectors(count=300, dim=7, seed=2)
    path = tmp_path / "out" / "vectors.txt"
    vectors.write_text(path)
    assert path.read_text().splitlines()[0] == "300 7"
    back = read_text(path)
    assert back.words == vectors.words
    np.testing.assert_array_equal(back.vectors, vectors.vectors)     # exact float32
    assert [p.name for p in path.parent.iterdir()] == ["vectors.txt"]  # no temp file left
    assert len(read_text(path, limit=10)) == 10


def test_gensim_reads_ours_and_we_read_gensims(tmp_path):
    models = pytest.importorskip("gensim.models")
    vectors = random_vectors(count=50, dim=5, seed=4)
    vectors.write_text(tmp_path / "ours.txt")
    theirs = models.KeyedVectors.load_word2vec_format(str(tmp_path / "ours.txt"), binary=False)
    assert theirs.index_to_key == vectors.words
    np.testing.assert_array_equal(theirs.vectors, vectors.vectors)
    gensim_keyed(vectors).save_word2vec_format(str(tmp_path / "gensim.txt"), binary=False)
    back = read_text(tmp_path / "gensim.txt")
    assert back.words == vectors.words
    np.testing.assert_array_equal(back.vectors, vectors.vectors)


def test_glove_style_without_header_and_irregular_spacing(tmp_path):
    path = tmp_path / "glove.txt"
    path.write_text("the 0.1 -0.2 0.3\n, 1e-3 2 3\n\"quoted\" 4 5 6\n")
    vectors = read_text(path)
    assert vectors.words == ["the", ",", '"quoted"']
    np.testing.assert_allclose(vectors.vectors, [[0.1, -0.2, 0.3], [1e-3, 2, 3], [4, 5, 6]])
    # word2vec's C tool ends lines with a space; Windows ends them with \r\n; tabs and
    # double spaces go through the line-by-line reader
    for text in ("2 2\ncat 1 2 \ndog 3 4 \n", "2 2\r\ncat 1 2\r\ndog 3 4\r\n",
                 "cat\t1  2\ndog 3\t4\n"):
        path.write_bytes(text.encode())
        back = read_text(path)
        assert back.words == ["cat", "dog"] and back.vectors.tolist() == [[1, 2], [3, 4]]


@pytest.mark.parametrize("text, message", [
    ("a 1 2 3\nb 1 2\nc 1 2 3\n", "line 2: 2 values where the first vector line has 3"),
    ("3 2\na 1 2\nb 1 x\nc 1 2\n", "line 3: value 'x' is not a number"),
    ("a 1 2\nb 1 2\nc 1 nan\n", "line 3: a value is NaN"),
    ("", "no word vectors \\(the file is empty\\)"),
    ("5 2\n", "empty but for its header"),
    ("3 2\na 1 2\nb 1 2\n", "header promises 3 words but the file holds 2"),
    ("2 3\na 1 2\nb 1 2\n", "line 2: 2 values, but the header says 3"),
    ("a 1 2\nb 3 4\na 5 6\n", "'a' appears twice"),
    ("a\nb 1\n", "line 1: a word with no values"),
])
def test_bad_files_name_the_file_and_line(tmp_path, text, message):
    path = tmp_path / "bad.txt"
    path.write_text(text)
    with pytest.raises(DataError, match=message) as info:
        read_text(path)
    assert str(path) in str(info.value)


def test_missing_file_limit_and_unwritable_words(tmp_path):
    with pytest.raises(DataError, match="No word-vector file"):
        read_text(tmp_path / "nothing.txt")
    (tmp_path / "v.txt").write_text("a 1\n")
    with pytest.raises(ConfigError, match="limit"):
        read_text(tmp_path / "v.txt", limit=0)
    with pytest.raises(DataError, match="whitespace"):
        WordVectors(["new york", "b"], [[1], [2]]).write_text(tmp_path / "w.txt")
    assert not (tmp_path / "w.txt").exists()
