"""The GPT side of ``kbl finetune classify | pair | choice``: a GPT preset selects it.

The same commands, flags and data readers as BERT's; what changes is GPT-1's recipe (Radford et
al. 2018, §3.3): texts become :class:`~keras_bert_lab.preprocessing.gpt.GPTTaskPacker` rows
(``classify``: ``[start] text [extract]``; ``pair``: ``[start] a [delim] b [extract]``, or both
orders for a similarity score with ``--regression``; ``choice``: one row per option), the model is
:class:`~keras_bert_lab.tasks.gpt_classifier.GPTClassifier` or ``GPTMultipleChoice``, and
``--lm-loss-weight`` adds GPT-1's auxiliary language-modelling loss (λ = 0.5 in the paper).
"""

from keras_bert_lab.errors import ConfigError
from keras_bert_lab.presets import registry as presets
from keras_bert_lab.tasks.gpt_classifier import GPTClassifier, GPTMultipleChoice

GPT_BACKBONES = ("GPTBackbone",)


def is_gpt(preset):
    """Whether ``preset`` (a name or a directory) holds a GPT backbone."""
    return presets.read_preset(preset, verify=False).backbone_class in GPT_BACKBONES


def add_arguments(parser):
    parser.add_argument("--lm-loss-weight", type=float, default=0.0,
                        help="GPT presets: weight λ of the auxiliary language-modelling loss "
                             "(GPT-1: 0.5; 0 = off)")


def refuse_gpt_flags(args):
    """A GPT-only flag given with a BERT preset is an error, not silently ignored."""
    if args.lm_loss_weight:
        raise ConfigError("--lm-loss-weight applies to GPT presets (GPT-1's auxiliary LM loss); "
                          "leave it out with a BERT preset.")


def classification(settings, args, problem, num_classes, splits):
    """``(model, {split: (features, None)})`` for ``classify`` / ``pair`` with a GPT preset;
    the caller adds the targets."""
    from keras_bert_lab.preprocessing.bpe import BytePairTokenizer
    from keras_bert_lab.preprocessing.gpt import GPTTaskPacker

    if problem == "multi_label":
        raise ConfigError("--multi-label is not available for GPT presets (GPT-1's head is one "
                          "softmax); use a BERT preset.")
    _refuse_pooling(args)
    similarity = args.pair and problem == "regression"
    model = GPTClassifier.from_preset(settings.preset, num_classes=num_classes,
                                      num_sequences=2 if similarity else 1,
                                      lm_loss_weight=args.lm_loss_weight, dropout=args.dropout)
    packer = GPTTaskPacker(BytePairTokenizer.from_preset(settings.preset), settings.sequence_length)

    def pack(part):
        if not args.pair:
            return packer.single(part.texts)
        return (packer.similarity if similarity else packer.pair)(part.texts, part.texts_pair)

    return model, {name: pack(part) for name, part in splits.items() if part is not None}


def _refuse_pooling(args):
    if getattr(args, "pooling", "cls") != "cls":
        raise ConfigError("--pooling applies to BERT presets; a GPT head reads the extract token.")


def choice(settings, args, splits):
    """``(model, {split: features})`` for ``choice`` with a GPT preset."""
    from keras_bert_lab.preprocessing.bpe import BytePairTokenizer
    from keras_bert_lab.preprocessing.gpt import GPTTaskPacker

    _refuse_pooling(args)
    model = GPTMultipleChoice.from_preset(settings.preset, lm_loss_weight=args.lm_loss_weight,
                                          dropout=args.dropout)
    packer = GPTTaskPacker(BytePairTokenizer.from_preset(settings.preset), settings.sequence_length)
    return model, {name: packer.choices(part.contexts, part.choices)
                   for name, part in splits.items() if part is not None}
