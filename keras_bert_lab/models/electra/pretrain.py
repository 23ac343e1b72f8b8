"""ELECTRA's pretraining recipe: raw text → an ELECTRA preset (``kbl pretrain --model electra``).

The run is BERT's masked-LM run (:mod:`keras_bert_lab.pipelines.masked_lm_recipe`:
WordPiece, the document-level stream with new masks every batch, fixed held-out batches,
checkpoints and exact resume, ``--time-budget``, ``log.csv``, ``curves.png``, ``metrics.json``,
``preset/``) with ELECTRA's model and data choices (Clark et al. 2020, §3.1 and App. A, Table 6):

- the model is :class:`~keras_bert_lab.models.electra.pretrainer.ElectraPretrainer`: a generator
  of ``--generator-size`` (default the paper's: 1/4 for Small, 1/3 for Base) sharing the
  discriminator's embeddings, loss ``L_MLM + --discriminator-weight · L_D`` (λ = 50);
- no next-sentence task: full blocks of text (``--packing true``, the default);
- of the selected 15 % of positions, 85 % become ``[MASK]`` and 15 % keep their token — no random
  tokens (the released code's ``pretrain_helpers.mask``): the generator supplies the
  replacements;
- ELECTRA-Small's optimizer: AdamW, learning rate 5e-4, decay 0.01, warm-up then linear decay.

Held-out metrics (``metrics.json``, the log's heldout rows): the generator's masked-LM accuracy
(next to the unigram baseline), the discriminator's accuracy on every token (next to
``all_original_accuracy``, what a discriminator that never says "replaced" scores) and its AUC
on replaced vs original tokens. The preset holds the pretrainer; its backbone is the
discriminator, which ``from_preset`` gives fine-tuning.

Example (a minute on a laptop CPU):
>>> settings = ElectraPretrainSettings(size="tiny", steps=50,           # doctest: +SKIP
...                                    batch_size=8, sequence_length=64)
>>> run(settings, "/tmp/kbl-electra")["heldout_rtd_auc"]               # doctest: +SKIP
"""

import dataclasses

from keras_bert_lab.errors import ConfigError
from keras_bert_lab.models.electra.backbone import ElectraBackbone
from keras_bert_lab.models.electra.config import ElectraConfig
from keras_bert_lab.models.electra.pretrainer import DISCRIMINATOR_WEIGHT, ElectraPretrainer
from keras_bert_lab.pipelines.masked_lm_recipe import MaskedLMRecipe, MaskedLMSettings

LOG_COLUMNS = ("step", "split", "loss", "mlm_loss", "mlm_accuracy", "rtd_loss", "rtd_accuracy",
               "rtd_auc", "replaced_rate", "learning_rate", "tokens_per_s", "elapsed_s")


@dataclasses.dataclass
class ElectraPretrainSettings(MaskedLMSettings):
    """Everything that defines an ELECTRA pretraining run (stored as ``settings.json``)."""

    CONFIG = ElectraConfig
    LATER = ()   # a recipe newer than every field: settings.json holds them all

    size: str = "small"
    next_sentence: bool = False
    packing: bool = True
    generator_size: float | None = None
    discriminator_weight: float = DISCRIMINATOR_WEIGHT

    def __post_init__(self):
        if self.next_sentence:
            raise ConfigError("--next-sentence true: ELECTRA has no next-sentence task (its "
                              "discriminator reads single blocks of text); leave the flag out.")
        super().__post_init__()
        if not self.discriminator_weight > 0:
            raise ConfigError(f"--discriminator-weight {self.discriminator_weight} must be above "
                              "0; the paper's λ is 50.")
        try:
            self.model_config().generator(self.generator_size)
        except ConfigError as error:
            raise ConfigError(f"--generator-size {self.generator_size}: {error}") from None


class ElectraRecipe(MaskedLMRecipe):
    """ELECTRA's run (see the module docstring) in :class:`MaskedLMRecipe`'s skeleton."""

    name = "electra"
    MASK_RATES = (0.85, 0.0)
    log_columns = LOG_COLUMNS
    curves = tuple((k, k.replace("_", " ")) for k in ("mlm_accuracy", "rtd_loss", "rtd_auc"))

    def model(self, settings, vocabulary_size):
        config = settings.model_config(vocabulary_size=vocabulary_size,
                                       max_positions=max(512, settings.longest_sequence))
        return ElectraPretrainer(ElectraBackbone(config), generator_size=settings.generator_size,
                                 discriminator_weight=settings.discriminator_weight,
                                 seed=settings.seed)

    def model_inputs(self, dataset):
        """BERT's ``(features, labels, weights)`` batches → the pretrainer's one input dict (the
        masked tokens' ids and weights are its inputs: the loss is computed inside)."""
        return dataset.map(lambda features, labels, weights: {
            **features, "mask_ids": labels["mlm"], "mask_weights": weights["mlm"]})

    def extra_metrics(self, model, settings, inputs, metrics):
        if "heldout_replaced_rate" not in metrics:
            return {}
        return {"all_original_accuracy": 1.0 - metrics["heldout_replaced_rate"]}


run = ElectraRecipe().run

# What `kbl pretrain --model electra` builds from its flags (families.Family.recipe).
SETTINGS = ElectraPretrainSettings
