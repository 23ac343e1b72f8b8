"""Static vs contextual word senses: leave-one-out 1-NN and the majority baseline on feature
sources whose answers are known, and the WordNet example reader on lines in the release format."""

import numpy as np
import pytest

from keras_bert_lab.data import registry
from keras_bert_lab.errors import ConfigError, DataError
from keras_bert_lab.studies import word_sense as ws

# Lines in the WordNet 3.0 release format (data.verb / data.noun: offset, lexicographer file,
# type, word count in hex, words with lex ids, pointers, frames, "| gloss; examples").
DATA_VERB = """\
  1 This software and database is being provided to you, the LICENSEE, by
01614426 35 v 01 stick 9 002 @ 01343892 v 0000 $ 01614581 v 0000 01 + 22 00 | fasten with or \
as with pins or nails; "stick the photo onto the corkboard"
02638845 42 v 02 adhere 2 stick 5 003 @ 02346895 v 0000 + 01212882 n 0103 + 10016103 n 0102 \
01 + 22 00 | be a devoted follower or supporter; "The residents of this village adhered to \
Catholicism"; "She sticks to her principles"
02638630 42 v 02 stick_together 0 stick 0 000 | stay together; "The friends stuck together"
"""
DATA_NOUN = """\
04317420 06 n 02 stick 0 Stick 1 000 | an implement consisting of a length of wood; "he \
collected dry sticks for a campfire"
"""
LEXNAMES = "06\tnoun.artifact\t1\n35\tverb.contact\t2\n42\tverb.stative\t2\n"


@pytest.fixture
def wordnet(tmp_path):
    (tmp_path / "data.verb").write_text(DATA_VERB)
    (tmp_path / "data.noun").write_text(DATA_NOUN)
    (tmp_path / "lexnames").write_text(LEXNAMES)
    (tmp_path / "verb.exc").write_text("stuck stick\nthrew throw\n")
    return tmp_path


def test_reader_finds_the_lemma_of_each_example_by_its_wordnet_base_form(wordnet):
    examples = ws.read_wordnet_examples(wordnet)
    found = [(e.word, e.words[e.index], e.supersense, e.synset) for e in examples]
    assert found == [("stick", "sticks", "noun.artifact", "04317420-n"),
                     ("stick", "stick", "verb.contact", "01614426-v"),
                     ("adhere", "adhered", "verb.stative", "02638845-v"),
                     ("stick", "sticks", "verb.stative", "02638845-v"),
                     ("stick", "stuck", "verb.stative", "02638630-v")]   # verb.exc: stuck
    assert examples[3].words == ("She", "sticks", "to", "her", "principles")
    assert examples[3].definition == "be a devoted follower or supporter"
    with pytest.raises(DataError, match="lexnames"):
        ws.read_wordnet_examples(wordnet / "missing")


def test_base_forms_follow_wordnets_rules():
    exceptions = {"verb": {"stuck": ["stick"]}}
    assert "stick" in ws.base_forms("Stuck", "verb", exceptions)
    assert {"box", "boxe"} <= ws.base_forms("boxes", "noun", {})  # "xes" -> "x" and "s" -> ""
    assert "plan" not in ws.base_forms("planned", "verb", {})      # doubling: only via .exc


def example(word, sense, words=("x",)):
    return ws.SenseExample(word, tuple(words), 0, sense, sense)


def test_select_keeps_words_with_enough_senses_and_drops_rare_senses():
    examples = ([example("a", "s1")] * 3 + [example("a", "s2")] * 3 + [example("a", "s3")] +
                [example("b", "s1")] * 5 + [example("b", "s2")] * 2)
    chosen = ws.select(examples, "synset", min_per_sense=3)
    assert [e.sense("synset") for e in chosen] == ["s1"] * 3 + ["s2"] * 3     # b: one sense left
    assert ws.describe(chosen, "synset") == {"words": 1, "examples": 6, "senses": 2,
                                             "sentences": 1}
    with pytest.raises(ConfigError, match="sense"):
        ws.select(examples, "lemma")


def test_nearest_neighbour_and_majority_leave_one_out():
    senses = ["a", "a", "b", "b", "b"]
    vectors = np.array([[1, 0], [2, 0.1], [0, 1], [0.1, 3], [0, 2]], "float32")
    assert ws.nearest_neighbour(vectors, senses) == senses              # separable
    # The others' majority: for a "b", the others are 2 "a" and 2 "b", a tie that goes by name.
    assert ws.majority(senses) == ["b", "b", "a", "a", "a"]
    same = np.ones((5, 2), "float32")                                   # one static vector
    assert ws.nearest_neighbour(same, senses) == ws.majority(senses)
    zeros = np.zeros((5, 2), "float32")                                 # unknown word
    assert ws.nearest_neighbour(zeros, senses) == ws.majority(senses)
    # Two equally near neighbours of different senses: a tied vote goes to the sense more
    # frequent among the other rows ("z", not "y" as the name order would give).
    tied = np.array([[1, 0], [0.6, 0.8], [0.6, -0.8], [0, 1], [-1, 0]], "float32")
    assert ws.nearest_neighbour(tied, ["x", "z", "y", "z", "w"])[0] == "z"
    # ... and three equally near neighbours vote: two "y" win over one "z".
    three = np.array([[1, 0], [0.6, 0.8], [0.6, -0.8], [0.6, -0.8], [-1, 0]], "float32")
    assert ws.nearest_neighbour(three, ["x", "z", "y", "y", "z"])[0] == "y"


class Toy:
    """Layer 0 encodes the sense (the sentence's second word), layer 1 is one constant vector."""

    num_layers, dim = 2, 2

    def __call__(self, sentences):
        code = {"bank": [1.0, 0.0], "river": [0.0, 1.0], "tree": [1.0, 1.0], "verb": [1.0, -1.0]}
        return [np.array([[code[s[1]], [3.0, 1.0]]] * len(s), "float32") for s in sentences]


def test_run_scores_every_layer_and_the_baselines_averaged_over_words():
    examples = ([example("bank", s, ("bank", s)) for s in ["bank"] * 2 + ["river"] * 4] +
                [example("stick", s, ("stick", s)) for s in ["tree"] * 2 + ["verb"] * 2])
    rows = ws.run(examples, {"toy": Toy()}, sense="synset")
    table = {(r["method"], r["layer"]): (r["accuracy"], r["micro_accuracy"]) for r in rows}
    # bank: LOO majority right on the 4 "river" only (4/6); stick: 2 vs 2, the others'
    # majority is always the other sense (0/4). Most frequent sense: 4/6 and 2/4.
    assert table[("majority (LOO)", None)] == (round((4 / 6 + 0) / 2, 4), 0.4)
    assert table[("most frequent sense", None)] == (round((4 / 6 + 2 / 4) / 2, 4), 0.6)
    assert table[("toy", 0)] == (1.0, 1.0)
    assert table[("toy", 1)] == table[("majority (LOO)", None)]
    assert {r["words"] for r in rows} == {2} and {r["examples"] for r in rows} == {10}
    assert "| toy | 0 | 1.0000 | 1.0000 | 2 | 10 |" in ws.format_table(rows)
    with pytest.raises(DataError, match="No examples"):
        ws.run([], {"toy": Toy()})


def test_plot_senses_writes_a_png(tmp_path):
    examples = [example("stick", s, ("stick", s)) for s in ["tree"] * 3 + ["verb"] * 3]
    vectors = ws.target_vectors(Toy(), examples)
    assert vectors.shape == (6, 2, 2)
    path = ws.plot_senses(examples, [("static", vectors[:, 1]), ("layer 0", vectors[:, 0])],
                          ["stick"], tmp_path / "senses.png", sense="synset")
    assert path.read_bytes()[:4] == b"\x89PNG"


def test_the_real_wordnet_examples_hold_the_senses_of_stick():
    if "wordnet" not in registry.SOURCES:
        pytest.skip("the registry has no 'wordnet' source yet")
    from tests.conftest import locate_or_skip

    examples = ws.read_wordnet_examples(locate_or_skip("wordnet", "folder"))
    stick = {(" ".join(e.words), e.supersense) for e in examples if e.word == "stick"}
    assert ("She sticks to her principles", "verb.stative") in stick
    assert ("the kid had a candied apple on a stick", "noun.artifact") in stick
    assert ("The label stuck to the box", "verb.contact") in stick
