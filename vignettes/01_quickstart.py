# ---
# jupyter:
#   jupytext:
#     formats: py:percent
#   kernelspec:
#     display_name: Python 3
#     name: python3
# ---

# %% [markdown]
# # Quick start
#
# PEARL in four steps: learn representations on unlabeled rows, write a formula over the named
# blocks, fit, and read the summary. The data follow the paper's simulation (Section 4.1).
#
# **Full run:** about 25 s on two shared cores (n = 400; quick mode, n = 200: about 15 s).

# %%
import pickle

import numpy as np

import pearlstats as pearl
from pearlstats.experiments import quick_mode

QUICK = quick_mode()  # PEARLSTATS_QUICK=1: the reduced run that the tests and the docs execute

data = pearl.datasets.simulate_paper(
    200 if QUICK else 400, N=500 if QUICK else 2000, n_test=1000, sigma=0.5, seed=1
)
data.labeled.head()

# %% [markdown]
# ## 1. Representations, learned once on the unlabeled rows
# Each learner maps the raw columns `x1, x2` to a block. The same fitted maps are applied to labeled
# and new rows, so `predict` can take raw rows.

# %%
reps = pearl.Representations(
    {
        "pca": pearl.PCA(n_components=2),
        "kpca_rbf": pearl.KernelPCA(kernel="rbf", n_components=2),
        "kpca_poly": pearl.KernelPCA(kernel="poly", n_components=2),
        "kpca_sigmoid": pearl.KernelPCA(kernel="sigmoid", n_components=2),
        "kpca_cosine": pearl.KernelPCA(kernel="cosine", n_components=2),
    },
    columns=["x1", "x2"],
    seed=0,  # reaches every stochastic learner: the same blocks on every run
).fit(data.unlabeled)
reps.dims

# %% [markdown]
# ## 2. A formula over named blocks, and the fit
# `candidates="all"` builds all $2^5 - 1 = 31$ block subsets; each is an OLS fit; 5-fold out-of-fold
# predictions give the simplex weights (a quadratic programme).

# %%
formula = (
    "y ~ block(pca) + block(kpca_rbf) + block(kpca_poly) + block(kpca_sigmoid) + block(kpca_cosine)"
)
res = pearl.fit(formula, data.labeled, blocks=reps, cv=5, seed=0)
print(res.summary())

# %% [markdown]
# The weights, each candidate's statsmodels results, and predictions for raw new rows:

# %%
print(res.weights[res.weights > 0].round(4))
best = res.weights.idxmax()
print(res.candidates[best].summary().tables[1])
prediction = res.predict(data.test)
print("test MSE:", round(float(np.mean((data.test["y"] - prediction) ** 2)), 4))

# %% [markdown]
# Figures of the fit show inline (no `%matplotlib` magic needed); each is a matplotlib figure,
# so `.savefig(...)` works as usual.

# %%
res.plot.weights()

# %%
res.plot.cv_risk()

# %% [markdown]
# ## 3. Held-out evaluation against the paper's baselines
# "Best" is the single-block candidate with the lowest CV risk; "Oracle block" is the one best on
# the test rows (a reference in hindsight).

# %%
print(res.evaluate(data.test).round(4))

# %% [markdown]
# ## 4. Classification: binomial and multinomial families
# The same blocks with a two-class and a three-class response. The weights minimise the
# cross-entropy of the averaged probabilities.

# %%
labeled = data.labeled.assign(
    high=np.where(data.labeled["y"] > data.labeled["y"].median(), "high", "low"),
    tercile=np.digitize(data.labeled["y"], np.quantile(data.labeled["y"], [1 / 3, 2 / 3])),
)
binomial = pearl.fit(
    formula.replace("y ~", "high ~"), labeled, blocks=reps, family="binomial", seed=0
)
print(binomial.summary())

# %%
multinomial = pearl.fit(
    formula.replace("y ~", "tercile ~"), labeled, blocks=reps, family="multinomial", seed=0
)
print(multinomial.summary())
multinomial.predict(data.test.head()).round(3)

# %% [markdown]
# ## 5. Saving and reloading
# A results object pickles with its representations and predicts identically after loading.

# %%
restored = pickle.loads(pickle.dumps(res))
assert np.array_equal(restored.predict(data.test), prediction)
assert res.baselines.loc["PEARL", "cv_risk"] <= res.cv_risk.min() + 1e-12
print("VIGNETTE OK")
