"""``kbl pretrain``'s command line: one flag per pretraining setting, for every model it trains.

``--model bert`` runs :mod:`keras_bert_lab.recipes.pretrain`; ``gpt``, ``elmo`` and ``awd-lstm``
run their own recipes (:mod:`~keras_bert_lab.recipes.language_model`,
:mod:`~keras_bert_lab.recipes.elmo_pretrain`, :mod:`~keras_bert_lab.recipes.awd_pretrain`). A flag
that belongs to another model is refused with a one-line error rather than silently ignored;
flags left unset take the chosen recipe's defaults. ``--data-parallel`` / ``--model-parallel``
(:mod:`keras_bert_lab.distribution.session`) say how the run trains, not what it is, and stay out
of ``settings.json``.

Example:
>>> import argparse
>>> parser = argparse.ArgumentParser()
>>> add_arguments(parser)
>>> args = parser.parse_args(["--model", "elmo", "--output", "out", "--sampled-softmax", "2048"])
>>> language_model_settings(args).sampled_softmax
2048
"""

import argparse
import dataclasses
import importlib
import json
import logging

from keras_bert_lab.distribution import session
from keras_bert_lab.errors import ConfigError
from keras_bert_lab.models.bert_config import BertConfig
from keras_bert_lab.recipes.mirrored import mirrored
from keras_bert_lab.recipes.pretrain import PretrainSettings, run


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
    parser.add_argument("--model", choices=("bert", "gpt", "elmo", "awd-lstm"), default="bert",
                        help="bert: masked LM + next sentence (this recipe); gpt: a left-to-right "
                             "decoder on contiguous text (recipes.language_model); elmo: the "
                             "biLM, forward and backward word LMs over characters "
                             "(recipes.elmo_pretrain); awd-lstm: ULMFiT's word LM by truncated "
                             "BPTT, from scratch or fine-tuned with --init-preset "
                             "(recipes.awd_pretrain)")
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
        kind = float if "decay" in flag or "mult" in flag else (
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
}
ONLY_FOR = {"bpe_merges": ("gpt",), "output_bias": ("gpt",), "sampled_softmax": ("elmo",),
            "min_count": ("elmo", "awd-lstm"), "init_preset": ("awd-lstm",),
            "max_vocabulary": ("awd-lstm",), "layer_decay": ("awd-lstm",),
            "dropouts": ("awd-lstm",), "drop_mult": ("awd-lstm",),
            "data_parallel": ("bert", "gpt"), "model_parallel": ("bert", "gpt")}  # else: an error


def _refuse_foreign_flags(args):
    for name, models in ONLY_FOR.items():
        if getattr(args, name, None) is not None and args.model not in models:
            raise ConfigError(f"--{name.replace('_', '-')} applies to --model "
                              f"{' or '.join(models)} only; leave it out with --model "
                              f"{args.model}.")


def language_model_settings(args):
    """The settings of ``kbl pretrain --model gpt|elmo`` (``LanguageModelSettings``,
    ``ElmoPretrainSettings``); a BERT-only flag set away from its default is an error rather than
    silently ignored. Flags left unset (``None``) take the recipe's defaults."""
    from keras_bert_lab.recipes import awd_pretrain, elmo_pretrain, language_model

    settings_class = {"elmo": elmo_pretrain.ElmoPretrainSettings,
                      "awd-lstm": awd_pretrain.AwdPretrainSettings}.get(
                          args.model, language_model.LanguageModelSettings)
    names = {f.name for f in dataclasses.fields(settings_class)}
    defaults = PretrainSettings()
    ignored = [f.name for f in dataclasses.fields(PretrainSettings)
               if f.name not in names and getattr(args, f.name) is not None
               and getattr(args, f.name) != getattr(defaults, f.name)]
    if ignored:
        flags = ", ".join("--" + n.replace("_", "-") for n in ignored)
        raise ConfigError(f"{flags} apply to --model bert only; leave them out with --model "
                          f"{args.model}.")
    return settings_class(**{k: v for k, v in vars(args).items() if k in names and v is not None})


def main(args):
    _refuse_foreign_flags(args)
    model, kind = getattr(args, "model", "bert"), session.kind_from_args(args)
    if model != "bert":
        from keras_bert_lab.models.gpt_config import GPTConfig

        settings = language_model_settings(args)
        recipe = importlib.import_module(type(settings).__module__)  # the settings' own recipe
        config = GPTConfig.from_size(settings.size) if model == "gpt" else None
    else:
        if args.time_budget is not None and args.steps is not None:
            raise ConfigError("--time-budget sizes the number of steps to the budget; give "
                              "either --steps or --time-budget, not both.")
        names = {f.name for f in dataclasses.fields(PretrainSettings)}
        settings = PretrainSettings(**{k: v for k, v in vars(args).items()
                                       if k in names and v is not None})
        recipe, config = None, BertConfig.from_size(settings.size)
    logging.basicConfig(level=logging.INFO, format="%(message)s")
    # The distribution is how the run trains, not what it is: it stays out of settings.json.
    metrics = session.run_distributed(recipe.run if recipe else run, settings, args.output, kind,
                                      config, [settings.batch_size], mirrored,
                                      resume=args.resume, overwrite=args.overwrite)
    print(json.dumps(metrics, indent=2))
    return metrics
