# ---
# jupyter:
#   jupytext:
#     formats: py:percent
#   kernelspec:
#     display_name: Python 3
#     name: python3
# ---

# %% [markdown]
# # Image classification: handwritten digits (the paper's MNIST experiment, Section 4.2)
#
# The paper learns representations of MNIST images once on the 60 000 training images (autoencoders,
# VAEs and SimCLR with MLP and CNN encoders, plus the raw pixels), then fits a multinomial logistic
# regression or a small MLP on every candidate set of blocks for labeled subsets of a few hundred to
# a few thousand images, and scores PEARL and the baselines on the 10 000 test images by accuracy
# (Acc), cross-entropy (CE) and the one-hot MSE.
#
# MNIST is not bundled, so this vignette runs the same pipeline on scikit-learn's **digits**: 1797
# images of 8x8 pixels (intensities 0-16), ten classes. Everything is smaller, so the numbers are
# not the paper's; the design is:
#
# * a fixed, stratified **test set** of 500 images;
# * the other 1297 images are the **unlabeled pool** on which every representation is learned, once;
# * **labeled sets** of n images are stratified random subsets of the pool, for several n and a few
#   repetitions each (as the paper, which draws its labeled subsets from the training images the
#   representations were learned on).
#
# The quick version (`PEARLSTATS_QUICK=1`, used by the tests) trains the networks for a couple of
# epochs and fits one small n with fewer candidates; its numbers only show that the code runs.
#
# **Full run:** about 9 minutes on two shared cores. Quick mode: about a minute.

# %%
import importlib.util
import itertools
import time

import numpy as np
import pandas as pd
from sklearn.model_selection import train_test_split

import pearlstats as pearl
from pearlstats.experiments import paper_rows, quick_mode, results_folder

QUICK = quick_mode()  # PEARLSTATS_QUICK=1: the reduced run that the tests and the docs execute
RESULTS = results_folder()  # $PEARLSTATS_RESULTS, else results/ here (quick runs: a temp folder)

N_JOBS = 1
HAS_TORCH = importlib.util.find_spec("torch") is not None

if QUICK:
    SIZES, REPETITIONS = [100], 2
    LATENT, DEEP_EPOCHS, DEEP_HIDDEN = 4, 2, 32
    MLP_OPTIONS = dict(hidden=32, epochs=15, lr=1e-2)
else:
    SIZES, REPETITIONS = [100, 200, 400, 800], 3
    LATENT, DEEP_EPOCHS, DEEP_HIDDEN = 8, 20, 64
    MLP_OPTIONS = dict(hidden=64, epochs=100, lr=5e-3, weight_decay=1e-3)
RIDGE = 1e-3

frame = pearl.datasets.load_digits()
pixels = [column for column in frame.columns if column != "label"]
pool, test = train_test_split(frame, test_size=500, stratify=frame["label"], random_state=0)
pool, test = pool.reset_index(drop=True), test.reset_index(drop=True)
print(
    f"unlabeled pool: {len(pool)} images, test set: {len(test)} images, labeled sizes n = {SIZES}, "
    f"{REPETITIONS} repetitions each"
)

# %% [markdown]
# ## 1. Representations, learned once on the unlabeled pool
#
# | block | learner |
# |---|---|
# | `raw` | the pixels themselves (`pearl.Raw`), see below |
# | `pca` | principal components (`pearl.PCA`) |
# | `kpca_rbf` | kernel PCA, Gaussian kernel (`pearl.KernelPCA`) |
# | `ae_mlp`, `ae_cnn` | autoencoder bottleneck code (`pearl.Autoencoder`), MLP / CNN encoder |
# | `vae_mlp`, `vae_cnn` | VAE posterior mean (`pearl.VAE`), MLP / CNN encoder |
# | `simclr_mlp`, `simclr_cnn` | SimCLR encoder (`pearl.SimCLR`), views by random shifts and noise |
#
# The paper's MNIST set is `raw`, AE-CNN, VAE-CNN, SimCLR-MLP and SimCLR-CNN; we add the MLP-encoder
# AE and VAE and two classical learners. Two choices need a word:
#
# * **Raw pixels.** The outermost left and right columns of an 8x8 digit are almost always blank
#   (non-zero in at most 6% of the pool) and carry next to no information, while each pixel costs
#   nine coefficients in a 10-class model; `raw` therefore keeps the pixels that are non-zero in at
#   least 10% of the pool images (48 of 64), which makes its fits several times faster. The other
#   learners see all 64 pixels.
# * **Kernel width.** With the default `gamma = 1/64` the rbf kernel between two 0-16 images is
#   essentially 0 and the components carry no class information; we use the median heuristic,
#   `gamma = 1 / median squared distance` between pool images.
#
# The deep learners are skipped, with a message, when torch is not installed.

# %%
informative = [p for p in pixels if (pool[p] > 0).mean() >= 0.10]
sample = pool[pixels].to_numpy()[:500]
squared_distances = ((sample[:, None, :] - sample[None, :, :]) ** 2).sum(axis=2)
gamma = 1.0 / float(np.median(squared_distances[np.triu_indices(len(sample), k=1)]))
print(f"raw block: {len(informative)} of 64 pixels; rbf gamma = {gamma:.3g}")

learners = {
    "raw": pearl.Raw(columns=informative),
    "pca": pearl.PCA(n_components=LATENT),
    "kpca_rbf": pearl.KernelPCA(kernel="rbf", n_components=LATENT, gamma=gamma),
}
if HAS_TORCH:
    # seed=None lets the container give each network its own seed, derived from its name.
    deep = dict(latent_dim=LATENT, epochs=DEEP_EPOCHS, hidden_dim=DEEP_HIDDEN, image_shape=(8, 8),
                seed=None, progress=False)
    for encoder in ("mlp", "cnn"):
        learners[f"ae_{encoder}"] = pearl.Autoencoder(encoder=encoder, **deep)
        learners[f"vae_{encoder}"] = pearl.VAE(encoder=encoder, **deep)
        learners[f"simclr_{encoder}"] = pearl.SimCLR(encoder=encoder, **deep)
else:
    print("torch is not installed: skipping the Autoencoder, VAE and SimCLR blocks and the MLP "
          "downstream model (pip install 'pearlstats[deep]' to include them)")

started = time.perf_counter()
reps = pearl.Representations(learners, columns=pixels, seed=2025).fit(pool)
print(
    f"representations learned in {time.perf_counter() - started:.1f} s; block widths: {reps.dims}"
)

# %% [markdown]
# ## 2. Candidate sets
#
# With M = 9 blocks, all non-empty subsets would be 2^9 - 1 = 511 candidates, each a multinomial
# regression with up to (1 + 112) x 9 coefficients, fitted in 5 folds for every labeled set: too
# slow for a vignette. We keep the part of that pool that the baselines and the paper's argument
# turn on:
#
# * **multinomial logistic** candidates: every single block, every pair of blocks, and all blocks
#   together (the fusion set), J = 9 + 36 + 1 = 46;
# * **MLP** candidates (each is 6 networks to train per labeled set): every single block and the
#   fusion set, J = 10.
#
# (The quick version drops the pairs, so both pools have J = 10 there.)
#
# With only singletons, SA-cand would equal SA-FRL and PEARL could not use the fusion set; here both
# contain more than one block. The weights minimise the cross-entropy of the averaged class
# probabilities over 5-fold out-of-fold predictions (stratified folds). The multinomial candidates
# use a small ridge penalty (`ridge=1e-3` on standardised coefficients). Without it every candidate
# fails at these sizes: the 10 classes are separated even by 8 principal components at n = 200 (the
# maximum-likelihood estimate does not exist), and `raw` alone has 49 x 9 = 441 coefficients for 160
# training rows per fold. (`1e-2` and `1e-1` gave higher CV and test cross-entropy in a trial run.)

# %%
names = list(reps.dims)
formula = "label ~ " + " + ".join(f"block({name})" for name in names)
singles = [(name,) for name in names]
pairs = [] if QUICK else list(itertools.combinations(names, 2))  # the quick version keeps J small
downstreams = {"multinomial": dict(candidates=singles + pairs + [tuple(names)], ridge=RIDGE)}
if HAS_TORCH:
    downstreams["MLP"] = dict(candidates=singles + [tuple(names)],
                              downstream=pearl.MLP(**MLP_OPTIONS, seed=0))
print(formula)
print({kind: len(options["candidates"]) for kind, options in downstreams.items()}, "candidates")

# %% [markdown]
# ## 3. Fits over labeled sizes and repetitions
#
# For each n and repetition we draw a stratified labeled set, fit PEARL with each downstream model
# (`n_jobs=1`), and score PEARL and the baselines on the test set with `res.evaluate(test)`. "Best"
# is, as in the paper, the single block best on the test set (an oracle; chosen by test
# cross-entropy), "Fusion" the all-blocks candidate, "MS" the candidate with the lowest CV risk,
# "SA-FRL" / "SA-cand" the equal-weight averages of the single-block / all candidates.

# %%
evaluations = {kind: {n: [] for n in SIZES} for kind in downstreams}
records, shown = [], {}
for n in SIZES:
    for repetition in range(REPETITIONS):
        labeled, _ = train_test_split(pool, train_size=n, stratify=pool["label"],
                                      random_state=1000 * n + repetition)
        for kind, options in downstreams.items():
            started = time.perf_counter()
            res = pearl.fit(
                formula,
                labeled,
                blocks=reps,
                family="multinomial",
                cv=5,
                seed=repetition,
                n_jobs=N_JOBS,
                **options,
            )
            scores = paper_rows(res.evaluate(test))
            seconds = time.perf_counter() - started
            evaluations[kind][n].append(scores)
            shown[kind] = res
            long = scores.stack().rename("value").reset_index()
            records.append(long.assign(downstream=kind, n=n, repetition=repetition, seconds=seconds,
                                       best_single=scores.attrs["best_candidate"]))
            print(f"n = {n:4d}  repetition {repetition}  {kind:11s}  PEARL accuracy "
                  f"{scores.loc['PEARL', 'accuracy']:.3f}  ({seconds:.1f} s)")

table = pd.concat(records, ignore_index=True)
table.to_csv(RESULTS / "digits_evaluations.csv", index=False)

# %% [markdown]
# ## 4. One fit in detail
#
# The summary of the last multinomial fit (largest n, last repetition): weights, the baselines' CV
# risks and the risk ratios.

# %%
res = shown["multinomial"]
print(res.summary())
print(res.weights[res.weights > 0].sort_values(ascending=False).round(3))

# %% [markdown]
# ## 5. The paper's table: mean (SD) over repetitions
#
# One table per downstream model; `*` marks the best value in a row, `+` the second best (bold and
# underlined in the LaTeX written to the results folder).

# %%
tables = {}
for kind in downstreams:
    tables[kind] = pearl.compare_table(evaluations[kind], digits=3)
    print(f"--- {kind} candidates ---")
    print(tables[kind].as_text())
    (RESULTS / f"digits_{kind}.tex").write_text(tables[kind].as_latex() + "\n", encoding="utf-8")
    tables[kind].to_frame().to_csv(RESULTS / f"digits_{kind}_table.csv")

# %% [markdown]
# ## 6. What we found
#
# The statements below are computed from the table, not written in advance. For each downstream
# model, metric and n we list the method(s) with the best mean (ties on the unrounded means share
# first place), count the sizes where PEARL is first, and compare PEARL with each baseline; the SDs
# in the table show how much of a difference is noise (the held-out set has 500 images, so one image
# is 0.002 of accuracy).

# %%
HIGHER = {"accuracy": True, "cross_entropy": False, "MSE": False}


def leaders(row, higher: bool) -> list[str]:
    best = row.max() if higher else row.min()
    return [method for method, value in row.items() if abs(value - best) <= 1e-12]


BASELINES = ["MS", "Best", "Fusion", "SA-FRL", "SA-cand"]
leader_rows, versus = [], {}
for kind, comparison in tables.items():
    for metric, higher in HIGHER.items():
        part = comparison.mean.loc[metric]
        tops = {n: " = ".join(leaders(row, higher)) for n, row in part.iterrows()}
        cells = {f"n={n}": top for n, top in tops.items()}
        leader_rows.append({"downstream": kind, "metric": metric, **cells})
        sign = 1 if higher else -1
        cells = {}
        for baseline in BASELINES:
            difference = part["PEARL"] - part[baseline]
            ahead = int((sign * difference >= -1e-12).sum())
            cells[baseline] = f"{float(difference.mean()):+.4f} ({ahead}/{len(part)})"
        versus[(kind, metric)] = cells

leaders_table = pd.DataFrame(leader_rows).set_index(["downstream", "metric"])
print("Method(s) with the best mean, per labeled size:")
print(leaders_table.to_string())
first = leaders_table.apply(lambda row: sum("PEARL" in cell.split(" = ") for cell in row), axis=1)
print(f"\nPEARL first or tied first in {int(first.sum())} of {first.size * len(SIZES)} "
      "(downstream, metric, n) cells")
print(
    "\nPEARL minus baseline, mean over sizes (in brackets: sizes where PEARL is at least as good;"
)
print("accuracy: higher is better, cross-entropy and MSE: lower is better):")
print(pd.DataFrame(versus).T.rename_axis(["downstream", "metric"]).to_string())

paired = table.pivot_table(index=["downstream", "metric", "n", "repetition"], columns="method",
                           values="value")
sign = np.where(paired.index.get_level_values("metric") == "accuracy", 1.0, -1.0)
at_least = {baseline: sign * (paired["PEARL"] - paired[baseline]).to_numpy() >= -1e-12
            for baseline in BASELINES}
share = pd.DataFrame(at_least, index=paired.index).groupby(level=["downstream", "metric"]).mean()
print("\nShare of single fits (n x repetition) where PEARL is at least as good as the baseline:")
print(share.round(2).to_string())
seconds = table.groupby(["downstream", "n", "repetition"])["seconds"].first()
print(
    "\nmean seconds per fit (fit + evaluate):", seconds.groupby(level=0).mean().round(1).to_dict()
)

# %% [markdown]
# ## 7. Figure: test accuracy and log-loss (cross-entropy) against n

# %%
methods = ["PEARL", "MS", "SA-FRL", "SA-cand", "Fusion", "Best", "Oracle block"]
wide = table.pivot_table(index=["downstream", "n", "repetition", "method"], columns="metric",
                        values="value", sort=False).reset_index()
fig = pearl.plotting.plot_simulation(
    wide, metric=["accuracy", "cross_entropy"], methods=methods, panels="downstream",
    panel_title="{value} candidates", title="Digits: test accuracy and log-loss against n",
)
fig.savefig(RESULTS / "digits.png", dpi=150)
print("wrote", sorted(p.name for p in RESULTS.glob("digits*")))
fig

# %%
assert len(table) == len(downstreams) * len(SIZES) * REPETITIONS * 7 * 3
assert np.isfinite(table["value"]).all()
assert abs(res.weights.sum() - 1) < 1e-8
assert res.baselines.loc["PEARL", "cv_risk"] <= res.cv_risk.min() + 1e-10
print("VIGNETTE OK")
