"""``kbl pretrain``'s command line: one flag per pretraining setting, for every model it trains.

``--model NAME`` runs the recipe of that family (the registry's ``recipe``,
``models/<family>/pretrain.py``: BERT's masked LM + next sentence, GPT's left-to-right LM,
ELMo's biLM, the AWD-LSTM of ULMFiT). The flags are BERT's settings plus the other recipes' own;
a flag that belongs to another model is refused with a one-line error rather than silently
ignored; flags left unset take the chosen recipe's defaults. ``--data-parallel`` / ``--model-parallel``
(:mod:`keras_bert_lab.distribution.session`) say how the run trains, not what it is, and stay out
of ``settings.json``.

Example:
>>> import argparse
>>> parser = argparse.ArgumentParser()
>>> add_arguments(parser)
>>> args = parser.parse_args(["--model", "elmo", "--output", "out", "--sampled-softmax", "2048"])
>>> recipe_settings(args).sampled_softmax
2048
"""

import argparse
import dataclasses
import json
import logging

from keras_bert_lab import families
from keras_bert_lab.distribution import session
from keras_bert_lab.commands.mirrored import mirrored
from keras_bert_lab.errors import ConfigError
from keras_bert_lab.models.bert.pretrain import PretrainSettings


def parse_bool(text):
    """``true``/``false`` (also ``1``/``0``, ``yes``/``no``) for a flag; anything else is an
    argparse error, never a silent ``False``."""
    value = {"1": True, "true": True, "yes": True, "0": False, "false": False,
             "no": False}.get(str(text).strip().lower())
    if value is None:
        raise argparse.ArgumentTypeError(f"{text!r} is not a boolean; use true or false.")
    return value


def add_arguments(parser):
    """``kbl pretrain`` options: one per ``PretrainSettings`` field, plus the run controls."""
    defaults = PretrainSettings()
    session.add_arguments(parser)
    parser.add_argument("--corpus", nargs="+", default=list(defaults.corpus),
                        help="named corpora (wikitext2, news) or files/globs/directories")
    parser.add_argument("--output", required=True, help="output directory of the run")
    parser.add_argument("--resume", action="store_true", help="continue the run in --output")
    parser.add_argument("--overwrite", action="store_true", help="replace the run in --output")
    parser.add_argument("--model", choices=[f.cli_name for f in pretrainable()], default="bert",
                        help="bert: masked LM + next sentence (this recipe); electra: a "
                             "generator's masked LM + the discriminator's replaced-token "
                             "detection (models.electra.pretrain); gpt: a left-to-right "
                             "decoder on contiguous text (models.gpt.pretrain); elmo: the "
                             "biLM, forward and backward word LMs over characters "
                             "(models.elmo.pretrain); awd-lstm: ULMFiT's word LM by truncated "
                             "BPTT, from scratch or fine-tuned with --init-preset "
                             "(models.awd_lstm.pretrain)")
    parser.add_argument("--bpe-merges", type=int, default=None,
                        help="gpt (default 8000): merges of the byte-pair vocabulary learned on "
                             "the corpus when --vocabulary (vocab.txt + merges.txt) is not given")
    parser.add_argument("--output-bias", type=parse_bool, nargs="?", const=True, default=None,
                        metavar="{true,false}", help="gpt (default true): an LM-head bias "
                        "started at the log unigram (without it a small GPT collapses to the "
                        "unigram model); false: GPT-1 exactly, exportable to transformers")
    parser.add_argument("--no-output-bias", dest="output_bias", action="store_const", const=False,
                        help="gpt: the same as --output-bias false")
    parser.add_argument("--min-count", type=int, default=None,
                        help="elmo (default 3), awd-lstm (default 2): rarer words are <unk> "
                             "without --vocabulary; awd-lstm with --init-preset: new words added")
    for flag, help_text in MODEL_FLAGS.items():
        kind = float if any(w in flag for w in ("decay", "mult", "size", "weight")) else (
            str if "preset" in flag or "dropouts" in flag else int)
        parser.add_argument(flag, default=None, type=kind, help=help_text)
    for field in dataclasses.fields(PretrainSettings):
        if field.name == "corpus":
            continue
        value = getattr(defaults, field.name)
        flag = "--" + field.name.replace("_", "-")
        # Unset flags stay None: each model's recipe then applies its own default (BERT's below).
        help_text = HELP.get(field.name, f"bert default: {value}")
        if isinstance(value, bool):
            parser.add_argument(flag, type=parse_bool, default=None, metavar="{true,false}",
                                help=help_text)
        else:
            kind = type(value) if value is not None else (
                int if "steps" in field.name or field.name == "intermediate_size" else str)
            parser.add_argument(flag, type=kind, default=None, help=help_text)


HELP = {"dropout": "bert: hidden and attention dropout; gpt: every dropout of the decoder "
                   "(default 0.1 for both; 0 for short runs on little text)",
        "time_budget": "bert: a wall-clock budget (20m, 1h30m, 900s) instead of --steps: the "
                       "step is timed, then the steps and the warm-up/decay schedule are sized "
                       "to end with the budget (training.budget)"}
# Flags of one model only (flag: help).
MODEL_FLAGS = {
    "--sampled-softmax": "elmo (default 0: the full softmax): words sampled per batch for the "
                         "training softmax (bilm-tf's 8192); held-out perplexity stays exact",
    "--init-preset": "awd-lstm: a stage-1 AWD-LSTM preset to fine-tune on --corpus (ULMFiT's "
                     "target-task LM fine-tuning)",
    "--max-vocabulary": "awd-lstm: words kept, most frequent first (default 30000); with "
                        "--init-preset: words added at most",
    "--layer-decay": "awd-lstm: learning-rate factor from each layer group to the one below "
                     "(default 1, or ULMFiT's 1/2.6 with --init-preset)",
    "--dropouts": "awd-lstm: a published dropout set, awd_lstm (Merity's, the default from "
                  "scratch), ulmfit or fastai_lm (lighter, for short runs); default: the size's "
                  "or the --init-preset's rates",
    "--drop-mult": "awd-lstm: multiply the --dropouts set's rates (fastai's drop_mult; default 1)",
    "--generator-size": "electra: the generator's hidden, feed-forward and head counts as a "
                        "fraction of the discriminator's (default: the paper's, 1/4 for small "
                        "and large, 1/3 for base)",
    "--discriminator-weight": "electra: λ, the weight of the discriminator's loss (default: the "
                              "paper's 50)",
}
# Flags that only some recipes take: each applies to the families whose settings have its field
# (the distribution flags: to those that may be spread over devices).
SPECIFIC = ("bpe_merges", "output_bias", "min_count", "sampled_softmax", "init_preset",
            "max_vocabulary", "layer_decay", "dropouts", "drop_mult", "generator_size",
            "discriminator_weight")


def pretrainable():
    """The families ``kbl pretrain --model`` trains (a recipe and a ``--model`` name)."""
    return [f for f in families.FAMILIES if f.recipe and f.cli_name]


def _fields(family):
    return {f.name: f.default for f in dataclasses.fields(family.recipe_module().SETTINGS)}


def _refuse_foreign_flags(args, family):
    """A flag set for a recipe that does not take it is a one-line error, never ignored: a
    recipe-specific flag (:data:`SPECIFIC`, the distribution flags) when the chosen family's
    settings lack it; a flag of another recipe's settings when it differs from that recipe's
    default."""
    own = _fields(family)
    for name in (*SPECIFIC, "data_parallel", "model_parallel"):
        if getattr(args, name, None) is None or name in own and name in SPECIFIC:
            continue
        if name in SPECIFIC:
            takers = [f.cli_name for f in pretrainable() if name in _fields(f)]
        else:
            kind = name.split("_")[0]
            takers = [f.cli_name for f in pretrainable() if kind in f.distribution]
            if family.cli_name in takers:
                continue
        raise ConfigError(f"--{name.replace('_', '-')} applies to --model "
                          f"{' or '.join(takers)} only; leave it out with --model "
                          f"{args.model}.")
    others = {}   # field -> {--model name: default} of the recipes that have it
    for other in pretrainable():
        for name, default in _fields(other).items():
            others.setdefault(name, {})[other.cli_name] = default
    ignored = [name for name, defaults in others.items()
               if name not in own and name not in (*SPECIFIC, "model")
               and getattr(args, name, None) is not None
               and getattr(args, name) not in defaults.values()]
    if ignored:
        flags = ", ".join("--" + n.replace("_", "-") for n in ignored)
        takers = [f.cli_name for f in pretrainable() if any(f.cli_name in others[n]
                                                            for n in ignored)]
        raise ConfigError(f"{flags} apply to --model {' or '.join(takers)} only; leave them out "
                          f"with --model {args.model}.")


def recipe_settings(args, family=None):
    """The settings of the ``--model``'s recipe (its ``SETTINGS`` class: ``PretrainSettings``,
    ``LanguageModelSettings`` …) from parsed flags; flags left unset (``None``) take the recipe's
    defaults, and a flag of another recipe is an error (:func:`_refuse_foreign_flags`)."""
    family = family or families.get(getattr(args, "model", "bert"))
    _refuse_foreign_flags(args, family)
    if getattr(args, "time_budget", None) is not None and getattr(args, "steps", None) is not None:
        raise ConfigError("--time-budget sizes the number of steps to the budget; give "
                          "either --steps or --time-budget, not both.")
    names = set(_fields(family))
    return family.recipe_module().SETTINGS(**{k: v for k, v in vars(args).items()
                                              if k in names and v is not None})


def main(args):
    family = families.get(getattr(args, "model", "bert"))
    settings = recipe_settings(args, family)
    config = family.config_class.from_size(settings.size) if family.layout else None
    logging.basicConfig(level=logging.INFO, format="%(message)s")
    # The distribution is how the run trains, not what it is: it stays out of settings.json.
    metrics = session.run_distributed(family.recipe_module().run, settings, args.output,
                                      session.kind_from_args(args), config,
                                      [settings.batch_size], mirrored, resume=args.resume,
                                      overwrite=args.overwrite)
    print(json.dumps(metrics, indent=2))
    return metrics


def register(subparsers):
    """Add ``kbl pretrain``."""
    p = subparsers.add_parser("pretrain", help="pretrain a model from text: BERT (masked LM + "
                                               "next sentence), ELECTRA, GPT, ELMo or "
                                               "AWD-LSTM")
    add_arguments(p)
    p.set_defaults(func=main)
    return p
