"""``kbl generate``: continue prompts with a GPT preset (greedy, top-k or nucleus sampling).

The prompts are byte-pair encoded with the preset's own tokenizer, continued by
:meth:`~keras_bert_lab.models.gpt.causal_lm.GPTCausalLM.generate` (a key/value cache, one compiled
loop where the backend allows it) and decoded back to text (lower-cased, as GPT-1 reads it).

Example::

    kbl generate --preset out/gpt/preset --prompt "the history of the" --strategy top_p \\
        --top-p 0.9 --max-length 64 --seed 0
"""

from keras_bert_lab import families
from keras_bert_lab.errors import ConfigError
from keras_bert_lab.models.gpt.causal_lm import STRATEGIES


def register(subparsers):
    p = subparsers.add_parser("generate", help="continue prompts with a GPT preset")
    p.add_argument("--preset", required=True, help="a GPT preset (directory or name)")
    p.add_argument("--prompt", action="append", required=True,
                   help="a prompt (repeat for several: they run as one batch)")
    p.add_argument("--max-length", type=int, default=64, help="tokens per row, prompt included")
    p.add_argument("--strategy", choices=STRATEGIES, default="top_k")
    p.add_argument("--top-k", type=int, default=40)
    p.add_argument("--top-p", type=float, default=0.9)
    p.add_argument("--temperature", type=float, default=1.0)
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--no-cache", action="store_true",
                   help="recompute every position each step (same tokens, slower)")
    p.add_argument("--truncate", action="store_true",
                   help="cut a prompt that leaves no room to its last tokens, with a warning")
    p.set_defaults(func=run)
    return p


def run(args):
    """Print each prompt's continuation; returns the texts."""
    from keras_bert_lab.presets.registry import read_preset

    family = read_preset(args.preset, verify=False).family
    if not family.has_task("generate"):
        able = [f.label for f in families.FAMILIES if f.has_task("generate")]
        raise ConfigError(f"--preset {args.preset} is a {family.label} preset; generation needs a "
                          f"left-to-right decoder ({', '.join(able)}; e.g. the preset of `kbl "
                          "pretrain --model gpt`).")
    tokenizer = family.tokenizer_class.from_preset(args.preset, task_tokens=False)
    model = family.task("generate").from_preset(args.preset)
    prompts = [tokenizer.encode(text) for text in args.prompt]
    empty = [i for i, ids in enumerate(prompts) if not ids]
    if empty:
        raise ConfigError(f"Prompt {empty[0] + 1} ({args.prompt[empty[0]]!r}) has no tokens; "
                          "give some text to continue.")
    out = model.generate(prompts, max_length=args.max_length, strategy=args.strategy,
                         top_k=args.top_k, top_p=args.top_p, temperature=args.temperature,
                         seed=args.seed, use_cache=not args.no_cache, truncate=args.truncate)
    texts = [tokenizer.decode(row[mask > 0].tolist())
             for row, mask in zip(out["token_ids"], out["padding_mask"])]
    for prompt, text in zip(args.prompt, texts):
        print(f"> {prompt}\n{text}\n")
    return texts
