"""Numerical parity with Hugging Face ``transformers``, per Keras backend: the figures the tests bound.

What is measured (max |ours − transformers| over every element, float32):

- ``bert``: a 3-layer, 4-head ``BertForPreTraining`` with every tensor random (biases and
  LayerNorms too), its weights converted into our ``BertPretrainer``; a padded batch of three
  sentence pairs: every hidden state, the pooled output (real tokens), the MLM logits at three
  positions, the NSP logits;
- ``minilm``: the real all-MiniLM-L6-v2 weights (the ``minilm_l6_en_uncased`` preset against
  ``transformers.BertModel`` on the package's files), four sentences tokenized by our preprocessor
  and by HF's fast tokenizer (the token ids must be equal): last hidden state over real tokens,
  pooled output, normalised mean-pooled embeddings.

Usage::

    python benchmarks/parity.py                      # every backend, one subprocess each
    KERAS_BACKEND=jax python benchmarks/parity.py --here
"""

import argparse
import json
import os
import subprocess
import sys

SENTENCES = ["A man is eating food.", "A man is riding a white horse on an enclosed ground.",
             "Ångström units, naïve café — 3.5 % and 中文!", "Short."]


def measure():
    import keras
    import numpy as np
    import torch
    import transformers

    from keras_bert_lab import BertBackbone, BertConfig, BertPretrainer, SentenceEmbedder
    from keras_bert_lab.data.registry import locate
    from keras_bert_lab.models.bert.preprocessor import BertTextPreprocessor
    from keras_bert_lab.models.bert.hf_weights import config_to_hf, load_hf_weights

    def err(a, b):
        return float(np.max(np.abs(np.asarray(a, "float64") - np.asarray(b, "float64"))))

    out = {"backend": keras.backend.backend()}
    # -- random BERT with heads
    torch.manual_seed(0)
    config = BertConfig.from_size("tiny", num_layers=3, num_heads=4)
    hf = transformers.BertForPreTraining(transformers.BertConfig(**config_to_hf(config))).eval()
    with torch.no_grad():
        for name, param in hf.named_parameters():
            if param.ndim == 1:
                param.normal_(mean=1.0 if name.endswith("LayerNorm.weight") else 0.0, std=0.1)
    ours = BertPretrainer(BertBackbone(config))
    load_hf_weights(ours, {k: v.numpy() for k, v in hf.state_dict().items()})
    rng = np.random.default_rng(0)
    lengths, firsts = (24, 17, 9), (10, 6, 4)
    x = {k: np.zeros((3, 24), "int32") for k in ("token_ids", "segment_ids", "padding_mask")}
    for row, (length, a) in enumerate(zip(lengths, firsts)):
        x["token_ids"][row, :length] = rng.integers(103, 30522, size=length)
        x["token_ids"][row, [0, a + 1, length - 1]] = [101, 102, 102]
        x["segment_ids"][row, a + 2:length] = 1
        x["padding_mask"][row, :length] = 1
    positions = np.array([[1, 2, 3]] * 3, "int32")
    with torch.no_grad():
        ref = hf(input_ids=torch.tensor(x["token_ids"]).long(),
                 token_type_ids=torch.tensor(x["segment_ids"]).long(),
                 attention_mask=torch.tensor(x["padding_mask"]).long(),
                 output_hidden_states=True)
        pooled = hf.bert.pooler(ref.hidden_states[-1]).numpy()
    got = ours.backbone(x)
    heads = ours(dict(x, mask_positions=positions))
    out["bert"] = {
        "hidden_states": max(err(keras.ops.convert_to_numpy(a), b.numpy())
                             for a, b in zip(got["hidden_states"], ref.hidden_states)),
        "pooled_output": err(keras.ops.convert_to_numpy(got["pooled_output"]), pooled),
        "mlm_logits": err(keras.ops.convert_to_numpy(heads["mlm"]),
                          np.take_along_axis(ref.prediction_logits.numpy(),
                                             positions[..., None], 1)),
        "nsp_logits": err(keras.ops.convert_to_numpy(heads["nsp"]),
                          ref.seq_relationship_logits.numpy())}
    # -- real MiniLM
    model_dir = str(locate("all_minilm_l6_v2"))
    hf_model = transformers.BertModel.from_pretrained(model_dir).eval()
    hf_tok = transformers.BertTokenizerFast.from_pretrained(model_dir)
    embedder = SentenceEmbedder.from_preset("minilm_l6_en_uncased")
    preprocessor = BertTextPreprocessor.from_preset("minilm_l6_en_uncased")
    features = preprocessor(SENTENCES)
    length = int(features["padding_mask"].sum(1).max())
    features = {k: v[:, :length] for k, v in features.items()}
    enc = hf_tok(SENTENCES, padding=True, return_tensors="np")
    ids_equal = enc["input_ids"].tolist() == features["token_ids"].tolist()
    with torch.no_grad():
        ref = hf_model(input_ids=torch.tensor(enc["input_ids"]),
                       token_type_ids=torch.tensor(enc["token_type_ids"]),
                       attention_mask=torch.tensor(enc["attention_mask"]))
    hidden = ref.last_hidden_state.numpy()
    mask = enc["attention_mask"][..., None]
    mean = (hidden * mask).sum(1) / mask.sum(1)
    embedding = mean / np.linalg.norm(mean, axis=1, keepdims=True)
    got = embedder.backbone(features)
    real = enc["attention_mask"].astype(bool)
    out["minilm"] = {
        "token_ids_equal": ids_equal,
        "last_hidden_state": err(keras.ops.convert_to_numpy(got["sequence_output"])[real],
                                 hidden[real]),
        "pooled_output": err(keras.ops.convert_to_numpy(got["pooled_output"]),
                             ref.pooler_output.numpy()),
        "embedding": err(embedder.predict_packed(features), embedding)}
    return out


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--here", action="store_true", help="measure in this process only")
    parser.add_argument("--backends", default="tensorflow,jax,torch")
    args = parser.parse_args()
    if args.here:
        print(json.dumps(measure()))
        return
    rows = []
    for backend in args.backends.split(","):
        env = dict(os.environ, KERAS_BACKEND=backend, TF_CPP_MIN_LOG_LEVEL="3")
        done = subprocess.run([sys.executable, __file__, "--here"], env=env, check=True,
                              capture_output=True, text=True)
        rows.append(json.loads(done.stdout.strip().splitlines()[-1]))
    print("max |ours - transformers| (float32), per backend")
    print("| backend | BERT hidden states | pooled | MLM logits | NSP logits | MiniLM ids equal "
          "| MiniLM last hidden | pooled | embedding |")
    print("|---|---|---|---|---|---|---|---|---|")
    for row in rows:
        b, m = row["bert"], row["minilm"]
        print(f"| {row['backend']} | {b['hidden_states']:.1e} | {b['pooled_output']:.1e} | "
              f"{b['mlm_logits']:.1e} | {b['nsp_logits']:.1e} | {m['token_ids_equal']} | "
              f"{m['last_hidden_state']:.1e} | {m['pooled_output']:.1e} | "
              f"{m['embedding']:.1e} |")


if __name__ == "__main__":
    main()
