"""Exception types of keras_bert_lab.

Every error says what was wrong and how to fix it. They subclass the built-in type a caller would
expect (``ValueError`` for bad values, ``FileNotFoundError`` for missing files), so ``except
ValueError`` keeps working while ``except keras_bert_lab.errors.KblError`` catches ours alone.
"""


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
