"""The settings every pretraining recipe shares (``kbl pretrain --model bert|gpt|elmo|awd-lstm``).

Each recipe's settings are a dataclass deriving from :class:`RunSettings`: it re-declares a shared
field to change its default (its place in ``settings.json`` stays), adds its own fields, names
the extra fields that must be at least 1 in ``AT_LEAST_ONE``, when it has a ``model`` field,
the one value it accepts in ``MODEL``, and in ``LATER`` the fields added after runs were saved
without them (left out of ``settings.json`` at their default, so those runs still resume).
"""

import dataclasses

from keras_bert_lab.errors import ConfigError


@dataclasses.dataclass
class RunSettings:
    """What defines a pretraining run (stored as ``settings.json``)."""

    MODEL = None
    AT_LEAST_ONE = ()
    # Fields added after runs were saved without them: left out of settings.json while at their
    # default (what those runs did), so that such a run still resumes.
    LATER = ()

    corpus: tuple = ("wikitext2",)
    eval_corpus: str | None = "wikitext2:valid"
    vocabulary: str | None = None
    size: str = "mini"
    sequence_length: int = 128
    batch_size: int = 32
    steps: int = 1000
    learning_rate: float | None = 5e-4
    weight_decay: float = 0.01
    checkpoint_every: int = 100
    keep_checkpoints: int = 3
    eval_every: int = 200
    eval_batches: int = 20
    log_every: int = 20
    seed: int = 0

    def __post_init__(self):
        self.corpus = (self.corpus,) if isinstance(self.corpus, str) else tuple(self.corpus)
        if self.MODEL is not None and getattr(self, "model", None) != self.MODEL:
            raise ConfigError(f"--model {getattr(self, 'model', None)!r}: this recipe trains "
                              f"{self.MODEL!r}.")
        for name in ("sequence_length", "batch_size", "steps", "checkpoint_every",
                     "keep_checkpoints", "eval_every", "eval_batches", "log_every",
                     *self.AT_LEAST_ONE):
            if int(getattr(self, name)) < 1:
                raise ConfigError(f"--{name.replace('_', '-')} must be at least 1, got "
                                  f"{getattr(self, name)}.")

    @property
    def total_steps(self):
        """Optimizer steps of the whole run (a recipe with several phases sums them)."""
        return self.steps

    def to_dict(self):
        data = dataclasses.asdict(self)
        data["corpus"] = list(self.corpus)
        defaults = {f.name: f.default for f in dataclasses.fields(self)}
        for name in self.LATER:
            if data[name] == defaults[name]:
                del data[name]
        return data

