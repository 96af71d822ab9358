# ---
# jupyter:
#   jupytext:
#     formats: py:percent
#   kernelspec:
#     display_name: Python 3
#     name: python3
# ---

# %% [markdown]
# # Theorem 1: asymptotic optimality
#
# Theorem 1 says $R(\hat w) / \inf_{w \in \mathcal W} R(w) \to 1$: the cross-validated weights do,
# in the limit, as well as the best convex combination of the (refitted) candidates chosen in
# hindsight. We estimate both risks on a large independent test sample: $R(\hat w)$ is PEARL's test
# MSE, and the infimum is the simplex QP solved on the candidates' test predictions (an oracle no
# analyst has). Because both contain the noise variance $\sigma^2$, we also show the ratio of
# *excess* risks, measured against the true regression function $E(y \mid x)$, which is a harder
# test.
#
# **Full run:** about 20 minutes on two cores with `n_jobs=-1` (the committed run's 300 tasks add
# up to 38.5 minutes of CPU time, `seconds` in `results/theorem1.csv`). Quick mode: under a
# minute.

# %%
import matplotlib.pyplot as plt
import numpy as np

import pearlstats as pearl
from pearlstats.experiments import (
    block_formula,
    grid,
    paper_representations,
    run_grid,
    run_settings,
    write_result_note,
)

# PEARLSTATS_QUICK=1: the reduced run that the tests and the docs execute; results go to
# $PEARLSTATS_RESULTS, else results/ here (quick runs: a temp folder); every core for a full run
QUICK, RESULTS, N_JOBS = run_settings()

SQUARED = pearl.get_loss("squared", "gaussian")


def optimality_task(setting, seed):
    data_seed, fold_seed, learner_seed = (int(s.generate_state(1)[0]) for s in seed.spawn(3))
    data = pearl.datasets.simulate_paper(
        setting["n"], N=setting["N"], n_test=setting["n_test"], sigma=0.5, seed=data_seed
    )
    reps = paper_representations(learner_seed).fit(data.unlabeled)
    res = pearl.fit(block_formula(reps.names), data.labeled, blocks=reps, seed=fold_seed)
    P = res.predict_candidates(data.test).to_numpy()
    y, mean = data.test["y"].to_numpy(), data.conditional_mean(data.test)
    w = res.weights.to_numpy()
    oracle = pearl.solve_weights(P, y, SQUARED)
    oracle_excess = pearl.solve_weights(P, mean, SQUARED)
    ms = np.eye(P.shape[1])[np.argmin(res.cv_risk.to_numpy())]
    return {
        "risk_ratio": np.mean((y - P @ w) ** 2) / oracle.objective,
        "excess_ratio": np.mean((mean - P @ w) ** 2) / oracle_excess.objective,
        "ms_excess_ratio": np.mean((mean - P @ ms) ** 2) / oracle_excess.objective,
        "sa_excess_ratio": np.mean((mean - P.mean(axis=1)) ** 2) / oracle_excess.objective,
    }


if QUICK:
    settings, repetitions = grid(n=[100, 200], N=[400], n_test=[2000]), 2
else:
    settings, repetitions = grid(n=[100, 200, 400, 800, 1600, 3200], N=[2000], n_test=[20000]), 50
table = run_grid(optimality_task, settings, repetitions, seed=11, n_jobs=N_JOBS, progress=not QUICK)
table.to_csv(RESULTS / "theorem1.csv", index=False)

# %%
summary = table.groupby("n")[
    ["risk_ratio", "excess_ratio", "ms_excess_ratio", "sa_excess_ratio"]
].agg(["mean", "median"])
print(summary.round(4).to_string())
write_result_note(RESULTS, "theorem1",
                  f"Theorem 1: risk ratios over {repetitions} repetitions per n",
                  "python vignettes/03_asymptotic_optimality.py", summary.round(4))

# %%
fig, ax = plt.subplots(figsize=(5.5, 3.8), layout="constrained")
medians = table.groupby("n").median(numeric_only=True)
ax.plot(medians.index, medians["excess_ratio"], marker="o", label="PEARL (excess risk)")
ax.plot(medians.index, medians["risk_ratio"], marker="s", label="PEARL (risk)")
ax.plot(medians.index, medians["ms_excess_ratio"], marker="^", label="MS (excess risk)")
ax.axhline(1.0, color="grey", linewidth=0.8, label="1: the best weights in hindsight")
pearl.plotting.n_axis(ax, medians.index)  # n as plain numbers on a log scale
ax.set_ylabel(r"median $R(\hat w)\,/\,\inf_w R(w)$")
ax.set_title(f"Theorem 1: risk relative to the best weights\n(median of {repetitions} repetitions)")
ax.legend(fontsize=8)
fig.savefig(RESULTS / "theorem1.png", dpi=150)

# %%
assert (table["risk_ratio"] >= 1 - 1e-9).all(), "no weight vector beats the in-hindsight optimum"
print("VIGNETTE OK")
