"""Exception types of keras_bert_lab, and the old argument names that still work (:func:`renamed`).

Every error says what was wrong and how to fix it. They subclass the built-in type a caller would
expect (``ValueError`` for bad values, ``FileNotFoundError`` for missing files), so ``except
ValueError`` keeps working while ``except keras_bert_lab.errors.KblError`` catches ours alone.
"""

import warnings


class KblError(Exception):
    """Base class of every error raised on purpose by keras_bert_lab."""


class ConfigError(KblError, ValueError):
    """A model configuration that cannot work (names the field and the allowed values)."""


class InputError(KblError, ValueError):
    """Model inputs of the wrong name, dtype, shape or value range."""


class PresetError(KblError, ValueError):
    """A preset directory or name that is missing, incomplete or corrupt."""


class DataError(KblError, ValueError):
    """A corpus, vocabulary or labelled data file that cannot be used as given."""


class TrainingError(KblError, RuntimeError):
    """A training run that cannot start or cannot continue (names the reason and the way out)."""


class MissingPackageError(KblError, ImportError):
    """Optional data or weights that live in a registry package which is not installed."""


# Arguments renamed to one name per meaning (keras-hub's): the old name -> the new one. An old
# name keeps working for one release with a FutureWarning; one read from a stored file (a
# preset's config.json, a saved model's layer config) is translated silently: the file is not
# the user's to fix.
RENAMED = {"vocab_size": "vocabulary_size"}


def renamed(fields, warn, stacklevel=3):
    """``fields`` (a dict of arguments) with each old name of :data:`RENAMED` under its new
    name; ``warn``: say so with a FutureWarning pointing ``stacklevel`` frames up."""
    fields = dict(fields)
    for old, new in RENAMED.items():
        if old not in fields:
            continue
        if new in fields:
            raise ConfigError(f"Both {old}= and {new}= given; {old} is the old name of {new}: "
                              f"give only {new}.")
        if warn:
            warnings.warn(f"{old}= is now {new}= (one name per meaning); the old name stops "
                          "working in the next release.", FutureWarning, stacklevel=stacklevel)
        fields[new] = fields.pop(old)
    return fields
