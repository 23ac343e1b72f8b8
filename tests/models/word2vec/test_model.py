"""The word2vec model: scores, the negative-sampling loss, CBOW's mean, the shared pool,
serialisation — and that it learns a planted structure with model.fit on every backend."""

import keras
import numpy as np
import pytest

from keras_bert_lab.errors import ConfigError
from keras_bert_lab.models.word2vec.model import NegativeSamplingLoss, Word2Vec
from tests.conftest import to_numpy


def tables(model):
    return (to_numpy(model.get_layer("input_vectors").embeddings),
            to_numpy(model.get_layer("output_vectors").embeddings))


def randomise(model, seed=0):
    rng = np.random.default_rng(seed)
    for name in ("input_vectors", "output_vectors"):
        layer = model.get_layer(name)
        layer.embeddings.assign(rng.normal(size=layer.embeddings.shape).astype("float32"))


def test_skipgram_scores_are_dot_products():
    model = Word2Vec(20, dim=6, negatives=3)
    randomise(model)
    v, u = tables(model)
    batch = {"center": np.array([1, 2]), "context": np.array([[3], [4]]),
             "negatives": np.array([[5, 6, 7], [8, 9, 10]])}
    scores = to_numpy(model(batch))
    for row in range(2):
        hidden = v[batch["context"][row, 0]]
        targets = [batch["center"][row], *batch["negatives"][row]]
        np.testing.assert_allclose(scores[row], u[targets] @ hidden, rtol=1e-5, atol=1e-5)


def test_cbow_averages_the_real_context_words():
    model = Word2Vec(20, dim=4, negatives=2, architecture="cbow", window=2)
    randomise(model, 1)
    v, u = tables(model)
    batch = {"center": np.array([0]), "context": np.array([[3, -1, 5, -1]]),
             "negatives": np.array([[7, 8]])}
    hidden = (v[3] + v[5]) / 2
    np.testing.assert_allclose(to_numpy(model(batch))[0], u[[0, 7, 8]] @ hidden, rtol=1e-5,
                               atol=1e-5)


def test_shared_pool_scores_every_example_against_the_pool():
    model = Word2Vec(20, dim=4, negatives=2, shared_pool=3)
    randomise(model, 2)
    v, u = tables(model)
    batch = {"center": np.array([0, 1, 2, 3]), "context": np.array([[4], [5], [6], [7]]),
             "negatives": np.array([[10], [11], [12], [0]])}
    scores = to_numpy(model(batch))
    assert scores.shape == (4, 4)
    np.testing.assert_allclose(scores[:, 1:], v[[4, 5, 6, 7]] @ u[[10, 11, 12]].T, rtol=1e-5,
                               atol=1e-5)
    np.testing.assert_allclose(model.noise_weights(4), np.full((4, 1), 2 / 3))


def test_loss_is_the_papers_objective_summed_over_the_batch():
    logits = np.array([[2.0, -1.0, 0.5], [-0.3, 0.2, 1.5]], "float32")
    weights = np.array([[1.0, 1.0], [0.5, 0.5]], "float32")
    sigmoid = lambda x: 1 / (1 + np.exp(-x))  # noqa: E731
    expected = sum(-np.log(sigmoid(row[0])) - (w * np.log(sigmoid(-row[1:]))).sum()
                   for row, w in zip(logits, weights))
    loss = float(to_numpy(NegativeSamplingLoss()(weights, logits)))
    assert loss == pytest.approx(expected, rel=1e-5)


def test_init_follows_word2vec_c_and_bad_settings_are_refused():
    v, u = tables(Word2Vec(50, dim=10))
    assert np.abs(v).max() <= 0.05 and np.abs(v).std() > 0 and not u.any()
    with pytest.raises(ConfigError, match="architecture"):
        Word2Vec(10, architecture="glove")
    with pytest.raises(ConfigError, match="shared_pool"):
        Word2Vec(10, negatives=5, shared_pool=2)
    with pytest.raises(ConfigError, match="dim"):
        Word2Vec(10, dim=0)


def test_save_and_load_keep_config_and_vectors(tmp_path):
    model = Word2Vec(30, dim=5, negatives=2, architecture="cbow", window=3)
    path = str(tmp_path / "w2v.keras")
    model.save(path)
    loaded = keras.saving.load_model(path, compile=False)
    assert isinstance(loaded, Word2Vec) and loaded.get_config() == model.get_config()
    np.testing.assert_array_equal(loaded.vectors, model.vectors)


@pytest.mark.parametrize("architecture", ["skipgram", "cbow"])
def test_learns_a_planted_cluster_structure(architecture):
    """Sentences drawn from one of 4 clusters of 6 words: after fit, every word's nearest
    neighbour (cosine) is in its own cluster."""
    tf = pytest.importorskip("tensorflow")
    from keras_bert_lab.models.word2vec.pipeline import skipgram_dataset

    rng = np.random.default_rng(0)
    clusters, size, vocabulary = 4, 6, 24
    sentences = [rng.integers(0, size, 8) + size * rng.integers(clusters) for _ in range(600)]
    ids = np.concatenate(sentences).astype("int32")
    starts = np.arange(0, len(ids) + 1, 8)
    del tf
    data = skipgram_dataset(ids, starts, keep=np.ones(vocabulary),
                            noise=np.full(vocabulary, 1 / vocabulary), window=3, negatives=4,
                            batch_size=128, architecture=architecture, seed=1)
    model = Word2Vec(vocabulary, dim=16, negatives=4, architecture=architecture, window=3)
    model.compile(keras.optimizers.SGD(0.02))
    model.fit(data, steps_per_epoch=60, epochs=2, verbose=0, shuffle=False)
    vectors = model.vectors / np.linalg.norm(model.vectors, axis=1, keepdims=True)
    similarity = vectors @ vectors.T - 2 * np.eye(vocabulary)
    nearest = similarity.argmax(axis=1)
    assert (nearest // size == np.arange(vocabulary) // size).all()


@pytest.mark.parametrize("architecture,pool", [("skipgram", 0), ("skipgram", 4), ("cbow", 0),
                                               ("cbow", 4)])
def test_row_sparse_sgd_step_equals_the_autodiff_step(architecture, pool):
    """The written-out gradient, scattered into the touched rows, gives the tables that Keras'
    own SGD step gives by differentiating the model — with ids repeated inside the batch."""
    rng = np.random.default_rng(3)
    batch, vocabulary = 12, 9            # 12 examples over 9 words: every batch repeats rows
    width = 4 if architecture == "cbow" else 1
    context = rng.integers(0, vocabulary, (batch, width)).astype("int32")
    if architecture == "cbow":
        context[:, -1] = -1
        context[0, 1:] = -1
    noise = rng.integers(0, vocabulary, (batch, pool or 3)).astype("int32")
    x = {"center": rng.integers(0, vocabulary, batch).astype("int32"), "context": context,
         "negatives": noise[:, :1] if pool else noise}
    results = []
    for row_sparse in (True, False):
        model = Word2Vec(vocabulary, 5, negatives=3, architecture=architecture, window=2,
                         shared_pool=pool)
        randomise(model, 4)
        steps = 1 if keras.backend.backend() == "torch" else 2
        model.compile(keras.optimizers.SGD(keras.optimizers.schedules.PolynomialDecay(
            0.3, 4, 0.05)), row_sparse=row_sparse, steps_per_execution=steps)
        assert model.takes_sparse_steps == row_sparse
        history = model.fit(x, model.noise_weights(batch), batch_size=batch // 2, epochs=2,
                            shuffle=False, verbose=0)
        results.append((*tables(model), history.history["loss"],
                        int(to_numpy(model.optimizer.iterations))))
    sparse, dense = results
    np.testing.assert_allclose(sparse[0], dense[0], rtol=1e-5, atol=1e-5)
    np.testing.assert_allclose(sparse[1], dense[1], rtol=1e-5, atol=1e-5)
    np.testing.assert_allclose(sparse[2], dense[2], rtol=1e-5)
    assert sparse[3] == dense[3] == 4
    assert np.abs(sparse[1]).max() > 0.1       # the zero-initialised output table did move


@pytest.mark.parametrize("architecture,pool", [("skipgram", 4), ("cbow", 0)])
def test_updates_per_batch_equal_the_sub_batches_one_by_one(architecture, pool):
    """A batch of 3 sub-batches laid end to end, applied as 3 updates in one step, gives the
    tables, iterations and rates of the 3 batches fed one per step; its logged loss is the
    first update's."""
    rng = np.random.default_rng(5)
    batch, parts, vocabulary = 5, 3, 9
    width = 4 if architecture == "cbow" else 1
    rows = batch * parts
    context = rng.integers(-1 if width > 1 else 0, vocabulary, (rows, width)).astype("int32")
    noise = rng.integers(0, vocabulary, (rows, pool or 3)).astype("int32")
    x = {"center": rng.integers(0, vocabulary, rows).astype("int32"), "context": context,
         "negatives": noise[:, :1] if pool else noise}
    results = []
    for updates, batch_size in ((parts, rows), (1, batch)):
        model = Word2Vec(vocabulary, 5, negatives=3, architecture=architecture, window=2,
                         shared_pool=pool)
        randomise(model, 4)
        model.compile(keras.optimizers.SGD(keras.optimizers.schedules.PolynomialDecay(
            0.3, 6, 0.05)), updates_per_batch=updates)
        first = []   # each epoch's first logged loss: its first batch's
        record = keras.callbacks.LambdaCallback(
            on_train_batch_end=lambda b, logs: first.append(float(logs["loss"])) if b == 0
            else None)
        model.fit(x, model.noise_weights(rows), batch_size=batch_size, epochs=2,
                  shuffle=False, verbose=0, callbacks=[record])
        results.append((*tables(model), first, int(to_numpy(model.optimizer.iterations))))
    merged, one_by_one = results
    np.testing.assert_allclose(merged[0], one_by_one[0], rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(merged[1], one_by_one[1], rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(merged[2], one_by_one[2], rtol=1e-5)
    assert merged[3] == one_by_one[3] == 2 * parts
    assert np.abs(merged[1]).max() > 0.1


def test_updates_per_batch_need_the_sparse_step():
    model = Word2Vec(10, 4)
    with pytest.raises(ConfigError, match="needs the row-sparse step"):
        model.compile(keras.optimizers.Adam(0.1), updates_per_batch=2)
    with pytest.raises(ConfigError, match="at least 1"):
        model.compile(updates_per_batch=0)


def test_other_optimizers_take_keras_own_step():
    model = Word2Vec(10, 4)
    model.compile(keras.optimizers.Adam(0.1))
    assert not model.takes_sparse_steps
    model.compile(keras.optimizers.SGD(0.1, momentum=0.9))
    assert not model.takes_sparse_steps
    model.compile()
    assert model.takes_sparse_steps
