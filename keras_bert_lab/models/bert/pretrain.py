"""The pretraining recipe end to end: raw text → a BERT preset, resumable at any step.

``run(settings, output_dir)`` is what ``kbl pretrain`` calls. It ties the pieces together: the
corpus and tokenizer (:mod:`keras_bert_lab.data`, :mod:`keras_bert_lab.preprocessing`), the
pretraining stream (:mod:`keras_bert_lab.pipelines.pretraining`), the masked-LM + next-sentence
model (:mod:`keras_bert_lab.tasks`), BERT's optimizer, schedule and the resumable training loop
(:mod:`keras_bert_lab.training`), the held-out evaluation and the final preset. Devlin et al.
(2019, App. A.2) pretrain with AdamW (lr 1e-4, β₂ 0.999, decay 0.01), 10,000 warm-up steps then
linear decay, 90 % of the steps at 128 tokens and the rest at 512 (``phase2_steps``); the defaults
here scale that down to a laptop-sized run. The settings also reach the parts of later recipes
(MosaicBERT, Cramming) that change the model or its objective, each off by default: the modern
encoder options of :class:`~keras_bert_lab.models.bert.config.BertConfig` (``--norm-first``,
``--use-bias false``, ``--feedforward geglu``, ``--position-embedding rotary``), ``--dropout 0``,
a higher ``--mask-selection-rate``, ``--next-sentence false`` (masked LM only) with
``--packing true`` (full blocks of text, no padding: ``pairs.packed_rows``), and
``--time-budget 20m`` (the steps and the schedule sized to a wall-clock budget, Cramming's way:
:mod:`keras_bert_lab.training.budget`).

The output directory holds ``settings.json`` (the run's settings: a directory is never reused by a
different run), ``checkpoints/``, ``log.csv`` (train rows every ``log_every`` steps and held-out
rows every ``eval_every``), ``curves.png``, ``metrics.json`` and ``preset/``.

Resuming (``resume=True``) restores weights, optimizer state, dropout RNG state and the step from
the newest checkpoint; the data stream is a pure function of the seed, so it restarts at the batch
where the checkpoint was taken (see :mod:`keras_bert_lab.training.pretrain`). What BERT's run
shares with ELECTRA's (the settings, stream, held-out batches, budget sizing and final
evaluation) is :mod:`keras_bert_lab.pipelines.masked_lm_recipe`; this module adds the model, the
modern options and next-sentence prediction.
"""

import dataclasses

from keras_bert_lab.models.bert.backbone import BertBackbone
from keras_bert_lab.models.bert.config import BertConfig
from keras_bert_lab.models.bert.pretrainer import BertPretrainer
from keras_bert_lab.pipelines.masked_lm_recipe import (  # noqa: F401 - the recipe's API
    MaskedLMRecipe, MaskedLMSettings, heldout_dataset, load_tokenizer, stream_options)


@dataclasses.dataclass
class PretrainSettings(MaskedLMSettings):
    """Everything that defines a BERT pretraining run (stored as ``settings.json``)."""

    CONFIG = BertConfig
    LATER = (*MaskedLMSettings.LATER, "norm_first", "use_bias", "feedforward",
             "position_embedding", "intermediate_size")

    # The modern encoder options (models.bert_config; all off: BERT): pre-LN, biases, GEGLU, rotary
    norm_first: bool = False
    use_bias: bool = True
    feedforward: str = "gelu"
    position_embedding: str = "learned"
    intermediate_size: int | None = None   # None: 4 × hidden; GEGLU at equal weights: 8/3 ×

    @property
    def model_options(self):
        """The ``BertConfig`` fields these settings choose besides the size."""
        options = dict(super().model_options, norm_first=self.norm_first,
                       use_bias=self.use_bias, feedforward=self.feedforward,
                       position_embedding=self.position_embedding)
        if self.intermediate_size is not None:
            options["intermediate_size"] = self.intermediate_size
        return options


def build_model(settings, vocabulary_size):
    """A compiled ``BertPretrainer`` of ``settings.size`` with BERT's optimizer and schedule."""
    return BertRecipe().build_model(settings, vocabulary_size)


class BertRecipe(MaskedLMRecipe):
    """BERT's run (see the module docstring) in :class:`MaskedLMRecipe`'s skeleton.

    Example (a minute on a laptop CPU):
    >>> settings = PretrainSettings(size="tiny", steps=50, batch_size=8,   # doctest: +SKIP
    ...                             sequence_length=64)
    >>> run(settings, "/tmp/kbl-run")["heldout_mlm_accuracy"]             # doctest: +SKIP
    """

    name = "bert"
    curves = tuple((k, k.replace("_", " ")) for k in ("mlm_loss", "mlm_accuracy", "nsp_accuracy"))

    def model(self, settings, vocabulary_size):
        config = settings.model_config(vocabulary_size=vocabulary_size,
                                       max_positions=max(512, settings.longest_sequence))
        return BertPretrainer(BertBackbone(config))

    def extra_metrics(self, model, settings, inputs, metrics):
        return {"nsp_chance": 0.5} if inputs.heldout is not None else {}


run = BertRecipe().run


# What `kbl pretrain --model` builds from its flags (families.Family.recipe).
SETTINGS = PretrainSettings
