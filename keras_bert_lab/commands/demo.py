"""``kbl demo`` (what ``make demo`` runs): five minutes through what the lab is for.

1. The BERT family: every named size with its parameter count.
2. Pretraining from scratch: BERT-mini on WikiText-2 for a couple of minutes — the loss curve and
   held-out masked-LM and next-sentence accuracy against their baselines (always guessing the most
   frequent word; chance).
3. Real weights: the MiniLM preset fine-tuned on a slice of Rotten Tomatoes (``kbl finetune
   classify``), then new sentences classified with the result (``kbl predict``).
4. Sentence embeddings: MiniLM ranks sentences by similarity to a query (``kbl embed``).
5. Where everything was written and what to run next.

Each step prints the command that does it alone, then runs that command in this process. The
output folder holds the demo's marker (``kbl_demo.json``); a later demo replaces only such a
folder, and only the entries it writes — any other folder is refused before anything runs.
"""

import csv
import json
import pathlib
import shutil
import time

from keras_bert_lab.errors import ConfigError, TrainingError

MARKER = "kbl_demo.json"
PARTS = ("pretrain", "sentiment", "new_sentences.txt", "predictions.csv", "sentences.txt",
         "sentences.npy", "sentences.json", MARKER)
PRESET = "minilm_l6_en_uncased"
NEW_SENTENCES = (
    "A warm, funny and beautifully acted film that stays with you.",
    "Two hours of my life I will never get back.",
    "The plot is thin, but the performances make it worth seeing.",
    "Clumsy dialogue, flat characters and an ending that makes no sense.",
    "One of the most moving documentaries of the decade.",
)
SENTENCES = (
    "The striker scored twice in the second half.",
    "The goalkeeper saved a penalty in the final minute.",
    "The central bank raised interest rates again.",
    "Inflation fell for the third month in a row.",
    "The recipe needs two eggs, flour and a little butter.",
    "Bake the bread for forty minutes until golden.",
    "The telescope photographed a distant galaxy.",
    "Astronomers found water vapour on an exoplanet.",
)
QUERIES = ("Who won the football match?", "What happened to prices in the economy?",
           "How do I make a cake?")


def add_arguments(parser):
    parser.add_argument("--size", default="mini", help="BERT size pretrained in step 2")
    parser.add_argument("--steps", type=int, default=90, help="pretraining steps in step 2")
    parser.add_argument("--examples", type=int, default=800,
                        help="Rotten Tomatoes training sentences MiniLM is fine-tuned on")
    parser.add_argument("--output", default="out/demo",
                        help="output folder (a previous demo there is replaced; any other "
                             "non-empty folder is refused)")


def check_output(output):
    """The output folder and whether it holds a previous demo; refuses anything else."""
    path = pathlib.Path(output)
    if path.exists() and not path.is_dir():
        raise ConfigError(f"--output {output} is a file; the demo writes a folder. Choose "
                          "another --output.")
    if not path.is_dir() or not any(path.iterdir()):
        return path, False
    if not (path / MARKER).is_file():
        raise TrainingError(f"--output {output} is not empty and holds no demo run; the demo "
                            "replaces only its own previous run. Choose another --output.")
    foreign = sorted(p.name for p in path.iterdir() if p.name not in PARTS)
    if foreign:
        raise TrainingError(f"--output {output} holds a previous demo but also "
                            f"{', '.join(foreign)}, which the demo did not write; move them out "
                            "or choose another --output.")
    return path, True


def check_inputs(steps, examples):
    """Everything the demo reads, before it writes anything (each error names its install)."""
    from keras_bert_lab.data import registry
    from keras_bert_lab.presets.registry import read_preset

    if steps < 1 or examples < 20:
        raise ConfigError("--steps must be ≥ 1 and --examples ≥ 20.")
    registry.locate("wikitext2")
    registry.locate("rotten_tomatoes")
    read_preset(PRESET)


def step(number, title, command=None):
    print(f"\n{'─' * 100}\n{number}/5  {title}")
    if command:
        print("     $ kbl " + " ".join(command))
    print(flush=True)
    return time.time()


def run(args, kbl):
    """Run the five steps into ``args.output``; returns the pretraining metrics. ``kbl`` runs a
    command line in this process (``keras_bert_lab.cli.main``) and returns its exit status."""
    from keras_bert_lab.models.bert import pretrain

    output, previous = check_output(args.output)
    check_inputs(args.steps, args.examples)
    if previous:
        for name in PARTS:
            part = output / name
            shutil.rmtree(part) if part.is_dir() else part.unlink(missing_ok=True)
    output.mkdir(parents=True, exist_ok=True)
    (output / MARKER).write_text(json.dumps({"command": "kbl demo", "size": args.size,
                                             "steps": args.steps,
                                             "examples": args.examples}) + "\n")
    began = time.time()

    step(1, "The BERT family: sizes and weights", ["models"])
    kbl(["models"])

    settings = pretrain.PretrainSettings(
        size=args.size, steps=args.steps, eval_every=max(1, args.steps // 3), eval_batches=10,
        checkpoint_every=max(1, args.steps // 3), log_every=10)
    start = step(2, f"Pretraining BERT-{args.size} from scratch on WikiText-2 ({args.steps} steps "
                    f"of {settings.batch_size} × {settings.sequence_length} tokens)",
                 ["pretrain", "--size", args.size, "--steps", str(args.steps), "--output",
                  str(output / "pretrain")])
    metrics = pretrain.run(settings, output / "pretrain", verbose=2)
    print(f"\nheld-out (WikiText-2 valid): masked-word accuracy "
          f"{metrics['heldout_mlm_accuracy']:.3f} vs {metrics['unigram_mlm_accuracy']:.3f} "
          f"always guessing {metrics['unigram_token']!r}; next-sentence accuracy "
          f"{metrics['heldout_nsp_accuracy']:.3f} vs 0.5 chance  ({time.time() - start:.0f} s). "
          "A few minutes of pretraining on two cores learn little: real weights next.")

    sentiment = output / "sentiment"
    command = ["finetune", "classify", "--preset", PRESET, "--dataset", "rotten_tomatoes",
               "--limit", str(args.examples), "--epochs", "1", "--sequence-length", "64",
               "--pooling", "mean", "--learning-rate", "1e-4", "--batch-size", "16",
               "--output", str(sentiment)]
    start = step(3, f"Real weights: {PRESET} fine-tuned on {args.examples} Rotten Tomatoes "
                    "reviews, then new sentences classified", command)
    _must(kbl(command), "fine-tuning")
    scores = json.loads((sentiment / "metrics.json").read_text())
    print(f"accuracy: validation {scores['best']['accuracy']:.3f}, test "
          f"{scores['test']['accuracy']:.3f} (half the reviews are positive)  "
          f"({time.time() - start:.0f} s)")
    texts = output / "new_sentences.txt"
    texts.write_text("\n".join(NEW_SENTENCES) + "\n", encoding="utf-8")
    command = ["predict", str(sentiment / "preset"), "--input", str(texts), "--output",
               str(output / "predictions.csv"), "--quiet"]
    print("\n     $ kbl " + " ".join(command))
    _must(kbl(command), "prediction")
    with open(output / "predictions.csv", newline="", encoding="utf-8") as f:
        for row in csv.DictReader(f):
            print(f"     {row['label']:<9} {float(row['score']):.3f}  {row['text']}")

    texts = output / "sentences.txt"
    texts.write_text("\n".join(SENTENCES) + "\n", encoding="utf-8")
    command = ["embed", PRESET, "--input", str(texts), "--output", str(output / "sentences.npy"),
               "-k", "2", "--quiet"]
    for query in QUERIES:
        command += ["--query", query]
    step(4, "Sentence embeddings: the nearest of 8 sentences to each question", command)
    _must(kbl(command), "embedding")

    step(5, f"Done in {time.time() - began:.0f} s. Outputs in {output}/")
    print(f"""  pretrain/     the from-scratch run: curves.png, log.csv, metrics.json, preset/
  sentiment/    the fine-tuned classifier: metrics.json, predictions, preset/
  predictions.csv, sentences.npy (+ .json)

Next:
  kbl finetune classify --preset {PRESET} --dataset rotten_tomatoes --output out/rt   (all of it)
  kbl export {sentiment}/preset --output out/sentiment_savedmodel   (serve raw text with TensorFlow)
  kbl predict {sentiment}/preset --input reviews.txt                (your own file)
  kbl pretrain --size small --steps 20000 --output out/bert-small   (a real pretraining run)
  kbl --help                                                         (every command)""")
    return metrics


def _must(code, what):
    if code != 0:
        raise TrainingError(f"the demo's {what} step failed (its error is printed above).")


def register(subparsers, kbl):
    """Add ``kbl demo``; ``kbl`` is the command line's ``main`` (each step runs a command)."""
    p = subparsers.add_parser("demo", help="the built-in demo (what `make demo` runs)")
    add_arguments(p)
    p.set_defaults(func=lambda args: run(args, kbl=kbl))
    return p
