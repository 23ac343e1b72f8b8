"""Presets written before the family house (commit e30f6a2) load and compute what they did.

``tests/fixtures/presets_e30f6a2`` holds one preset per family written by that version — no
``family`` in ``config.json``, no tokenizer class, ELMo's backbone named ``ElmoBiLM`` — and the
outputs that version computed on saved inputs (``make_presets_e30f6a2.py``, run in a checkout of
the commit). Each loads through its own class and through the generic loaders, on every backend.
"""

import pathlib

import numpy as np
import pytest

from keras_bert_lab import Backbone, Task, families
from keras_bert_lab.presets import read_preset
from tests.conftest import to_numpy

ROOT = pathlib.Path(__file__).resolve().parent.parent / "fixtures" / "presets_e30f6a2"
EXPECTED = np.load(ROOT / "expected_outputs.npz")
CASES = {  # preset: (family, inputs file, output to compare)
    "bert_classifier": ("bert", "bert_inputs.npz", None),
    "gpt_causal_lm": ("gpt", "gpt_inputs.npz", None),
    "elmo_bilm": ("elmo", "elmo_inputs.npz", "hidden_states"),
    "ulmfit_classifier": ("awd_lstm", "awd_inputs.npz", None),
}


@pytest.mark.parametrize("name", sorted(CASES))
def test_an_old_preset_loads_and_computes_what_it_did(name):
    family, inputs, key = CASES[name]
    preset = read_preset(ROOT / name)
    assert preset.family_name is None and preset.family.name == family
    x = dict(np.load(ROOT / inputs))
    generic = Backbone if preset.task is None else Task
    model = generic.from_preset(ROOT / name)
    own = (families.get(family).backbone_class if preset.task is None
           else families.get(family).task_named(preset.task["class_name"]))
    assert type(model) is own
    if family == "elmo":   # the class name it was saved under, loaded as today's class
        assert preset.backbone_class == "ElmoBiLM" and own.__name__ == "ElmoBackbone"
    out = model.predict_on_batch(x)
    out = out[key][-1] if key else out
    np.testing.assert_allclose(to_numpy(out), EXPECTED[name], atol=1e-5, rtol=1e-5)


def test_an_old_preset_saved_again_records_its_family(tmp_path):
    model = Task.from_preset(ROOT / "bert_classifier")
    path = model.save_to_preset(tmp_path / "again")
    again = read_preset(path)
    assert again.family_name == "bert"
    assert again.tokenizer == {"lowercase": True, "class_name": "WordPieceTokenizer"}
    assert again.preprocessor == {"sequence_length": 8, "pair": False}
