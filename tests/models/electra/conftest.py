"""Shared pieces of the ELECTRA tests: a tiny discriminator/generator pair in ``transformers``
with random weights (the pair shares its embeddings, as ELECTRA trains it) and helpers."""

import numpy as np
import pytest

from keras_bert_lab.models.electra.config import ElectraConfig
from keras_bert_lab.models.electra.convert_hf import config_to_hf
from tests.conftest import padded_pair_batch

VOCABULARY = 400
# E = 48 < H = 96 exercises the projection; 4 heads the per-head split.
CONFIG = ElectraConfig.from_size("tiny", vocabulary_size=VOCABULARY, embedding_size=48,
                                 hidden_size=96, num_layers=3, num_heads=4, max_positions=64)
GENERATOR = CONFIG.generator(0.5)
BATCH = padded_pair_batch(vocabulary_size=VOCABULARY)
ALL_POSITIONS = np.tile(np.arange(BATCH["token_ids"].shape[1], dtype="int32"), (3, 1))


def randomise(model, torch, skip=()):
    """A fresh HF model has zero biases and unit LayerNorms: randomise them so that a swapped or
    transposed tensor cannot hide (parameters starting with ``skip`` are left alone)."""
    with torch.no_grad():
        for name, param in model.named_parameters():
            if param.ndim == 1 and not name.startswith(tuple(skip)):
                param.normal_(mean=1.0 if name.endswith("LayerNorm.weight") else 0.0, std=0.1)
    return model.eval()


@pytest.fixture(scope="session")
def hf_models():
    """``(ElectraForPreTraining, ElectraForMaskedLM)`` of CONFIG and GENERATOR, one embedding
    table between them."""
    torch = pytest.importorskip("torch")
    transformers = pytest.importorskip("transformers")
    torch.manual_seed(0)
    discriminator = randomise(transformers.ElectraForPreTraining(
        transformers.ElectraConfig(**config_to_hf(CONFIG))), torch)
    generator = transformers.ElectraForMaskedLM(transformers.ElectraConfig(
        **config_to_hf(GENERATOR)))
    with torch.no_grad():
        shared = dict(generator.electra.embeddings.named_parameters())
        for name, param in discriminator.electra.embeddings.named_parameters():
            shared[name].copy_(param)
    return discriminator, randomise(generator, torch, skip=("electra.embeddings.",))


def state(model):
    return {k: v.numpy() for k, v in model.state_dict().items()}


def hf_forward(model, batch):
    import torch

    with torch.no_grad():
        return model(input_ids=torch.tensor(batch["token_ids"], dtype=torch.long),
                     token_type_ids=torch.tensor(batch["segment_ids"], dtype=torch.long),
                     attention_mask=torch.tensor(batch["padding_mask"], dtype=torch.long),
                     output_hidden_states=True)
