# ---
# jupyter:
#   jupytext:
#     formats: py:percent
#   kernelspec:
#     display_name: Python 3
#     name: python3
# ---

# %% [markdown]
# # Claim rates: a Poisson model with exposure
#
# Counts observed over different lengths of time (claims per policy, visits per patient, defects
# per batch) are modelled as **rates**: the expected count of row $i$ is
# $t_i \exp(\eta_i)$, where $t_i$ is its exposure (time or size at risk). In a GLM the exposure
# enters as an offset $\log t_i$ with coefficient 1, as in statsmodels' `GLM(exposure=)` and R's
# `glm(offset = log(t))`. `pearl.fit(..., family="poisson", exposure=t)` does the same in every
# candidate, in every fold, in the weights and in the honest re-runs; `predict` takes the new
# rows' own exposure.
#
# **The data are simulated** (no network is used to fetch a real portfolio): a motor insurance
# portfolio shaped like the public French MTPL data — exposures in policy-years between a few days
# and one year, about 20 claims per 100 policy-years, a driver, a vehicle and a telematics group of
# columns. The claim rate depends on the driver's age (young drivers claim more), the
# bonus-malus level and, non-linearly, on harsh braking.
#
# **Full run:** about 20 s on two shared cores (n = 3000 policies; quick mode, n = 800: about 10 s).

# %%
import matplotlib.pyplot as plt
import numpy as np
import pandas as pd
import statsmodels.api as sm

import pearlstats as pearl
from pearlstats.experiments import quick_mode, results_folder

QUICK = quick_mode()  # PEARLSTATS_QUICK=1: the reduced run that the tests and the docs execute
RESULTS = results_folder()  # $PEARLSTATS_RESULTS, else results/ here (quick runs: a temp folder)

DRIVER = ["driver_age", "bonus_malus", "licence_years"]
VEHICLE = ["vehicle_age", "power", "weight"]
TELEMATICS = [f"tm{j}" for j in range(1, 9)]


def portfolio(n, seed):
    """Simulated policies: exposure, driver, vehicle and telematics columns, and claim counts."""
    rng = np.random.default_rng(seed)
    age = rng.uniform(18, 85, size=n)
    bonus = np.clip(rng.gamma(2.0, 12.0, size=n) + 50, 50, 150)
    licence = np.clip(age - 18 - rng.uniform(0, 10, size=n), 0, None)
    vehicle = np.column_stack([rng.gamma(2.0, 3.5, size=n), rng.normal(90, 25, size=n),
                               rng.normal(1300, 250, size=n)])
    style = rng.normal(size=(n, 2))  # two driving-style factors behind the eight signals
    loadings = rng.normal(scale=0.7, size=(2, 8))
    telematics = style @ loadings + 0.5 * rng.normal(size=(n, 8))
    exposure = np.clip(rng.beta(2.0, 0.8, size=n), 0.02, 1.0)  # policy-years
    log_rate = (-2.4 + 0.9 * np.exp(-(age - 18) / 8) + 0.012 * (bonus - 50)
                + 0.35 * style[:, 0] ** 2 - 0.2 + 0.1 * (vehicle[:, 1] - 90) / 25)
    claims = rng.poisson(exposure * np.exp(log_rate))
    frame = pd.DataFrame(np.column_stack([age, bonus, licence, vehicle, telematics]),
                         columns=DRIVER + VEHICLE + TELEMATICS)
    frame.insert(0, "exposure", exposure)
    frame.insert(0, "claims", claims)
    return frame


n = 800 if QUICK else 3000
policies = portfolio(n + 1000, seed=11)
train, new = policies.iloc[:n].reset_index(drop=True), policies.iloc[n:].reset_index(drop=True)
print(f"{n} policies, {train['exposure'].sum():.0f} policy-years, {train['claims'].sum()} claims: "
      f"{train['claims'].sum() / train['exposure'].sum():.3f} claims per policy-year")
train.head()

# %% [markdown]
# ## Blocks and the fit with exposure
# Each group of columns becomes a block, learned on all policies' covariates (no claims are read):
# the driver and vehicle columns standardised (`Raw`), the telematics signals reduced by PCA and by
# Gaussian-kernel PCA. `exposure=` takes the policy-years, so every candidate models the claim
# rate, and the intercept-only row of the strategies table (Null) is the portfolio's mean rate.

# %%
reps = pearl.Representations({
    "driver": pearl.Raw(standardize=True, columns=DRIVER),
    "vehicle": pearl.Raw(standardize=True, columns=VEHICLE),
    "tm_pca": pearl.PCA(n_components=2, columns=TELEMATICS),
    "tm_rbf": pearl.KernelPCA(kernel="rbf", n_components=3, standardize=True, columns=TELEMATICS),
}, seed=0).fit(policies.drop(columns=["claims", "exposure"]))

formula = "claims ~ block(driver) + block(vehicle) + block(tm_pca) + block(tm_rbf)"
res = pearl.fit(formula, train, blocks=reps, family="poisson", exposure=train["exposure"],
                seed=0)
print(res.summary())

# %% [markdown]
# ## One candidate against statsmodels' `GLM(exposure=)`
# A candidate is a Poisson GLM on its blocks with the log exposure as offset: the same fit as
# statsmodels' on the same design, and the coefficients agree to solver
# precision.

# %%
blocks = reps.transform(train)
label = "driver+tm_rbf"
X = np.column_stack([np.ones(n), blocks["driver"], blocks["tm_rbf"]])
direct = sm.GLM(train["claims"], X, family=sm.families.Poisson(),
                exposure=train["exposure"]).fit(tol=1e-12)
ours = res.candidate_params(label)
comparison = pd.DataFrame({"pearlstats": ours.to_numpy(), "statsmodels": np.asarray(direct.params)},
                          index=ours.index)
print(comparison.round(6).to_string())
difference = np.max(np.abs(ours.to_numpy() - np.asarray(direct.params)))
print(f"largest coefficient difference: {difference:.1e}")
assert difference < 1e-6

# %% [markdown]
# The formula form `offset(np.log(exposure))` is the same model: the same weights.

# %%
in_formula = pearl.fit(
    "claims ~ offset(np.log(exposure)) + block(driver) + block(vehicle) + block(tm_pca)"
    " + block(tm_rbf)", train, blocks=reps, family="poisson", seed=0)
print(f"largest weight difference: {np.max(np.abs(in_formula.weights - res.weights)):.1e}")
assert np.allclose(in_formula.weights, res.weights, atol=1e-8)

# %% [markdown]
# ## Predicting new policies with their own exposure
# `predict(rows, exposure=t)` gives expected claim counts over each new policy's own exposure;
# with `exposure=1` it gives the rate, claims per policy-year. `evaluate(..., exposure=)` scores
# PEARL and the baselines on the held-out policies' counts.

# %%
expected = res.predict(new, blocks=reps, exposure=new["exposure"])
rate = res.predict(new, blocks=reps, exposure=np.ones(len(new)))
shown = new[["exposure", "driver_age", "bonus_malus", "claims"]].assign(
    rate_per_year=rate.to_numpy(), expected_claims=expected.to_numpy()).head(8)
print(shown.round(3).to_string())
print(f"held-out policies: {new['claims'].sum()} claims observed, "
      f"{expected.sum():.1f} expected")
np.testing.assert_allclose(expected.to_numpy(), rate.to_numpy() * new["exposure"], rtol=1e-10)
print(res.evaluate(new, blocks=reps, exposure=new["exposure"]).round(4).to_string())

# %% [markdown]
# ## Rates by driver age
# Claims per policy-year of the held-out policies by age band (claims over exposure), against the
# rate PEARL predicts for them (its expected claims over their exposure) and the portfolio's mean
# rate, the intercept-only model of the Null row.

# %%
bands = pd.cut(new["driver_age"], [18, 25, 35, 50, 65, 85], include_lowest=True)
by_band = pd.DataFrame({"claims": new["claims"], "exposure": new["exposure"],
                        "expected": expected.to_numpy()}).groupby(bands, observed=True).sum()
mean_rate = train["claims"].sum() / train["exposure"].sum()
fig, ax = plt.subplots(figsize=(6, 3.6), layout="constrained")
positions = np.arange(len(by_band))
ax.plot(positions, by_band["claims"] / by_band["exposure"], "o", color="0.3",
        label="observed (held-out)")
ax.plot(positions, by_band["expected"] / by_band["exposure"], "s-", color="C0", label="PEARL")
ax.axhline(mean_rate, color="C3", linestyle="--", label="intercept only (mean rate)")
ax.set_xticks(positions, [f"{band.left:.0f}-{band.right:.0f}" for band in by_band.index])
ax.set_xlabel("driver age (years)")
ax.set_ylabel("claims per policy-year")
ax.set_title("Claim rate by driver age")
ax.legend(frameon=False)
fig.savefig(RESULTS / "poisson_rates.png", dpi=150)
print("VIGNETTE OK")
