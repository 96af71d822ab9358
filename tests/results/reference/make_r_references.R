# Reference values for tests/test_r_agreement.py, computed by R's lm, glm and quadprog::solve.QP.
#
# Run from anywhere:  Rscript tests/results/reference/make_r_references.R
# Needs R (>= 4.0) and quadprog (Debian: apt-get install r-base-core r-cran-quadprog).
# It rewrites every *.csv in this folder: the input data (generated here with R's
# Mersenne-Twister / Inversion RNG, so Python and R read identical numbers) and R's
# results. Doubles are written with sprintf("%.17g"), which round-trips exactly.
#
# Problems
#   gaussian   n = 120, lm, 7 block-subset candidates, fixed 5-fold labels, out-of-fold
#              predictions, and simplex weights from solve.QP on the out-of-fold matrix.
#   binomial   n = 200, glm(binomial), same candidates, out-of-fold P(y = 1).
#   poisson    n = 150, glm(poisson), same candidates, out-of-fold means.
#   qp_duplicate  a stored (60 x 4) prediction matrix whose 4th column repeats the 2nd:
#              what solve.QP does with the singular Dmat, and the ridged solution.

suppressPackageStartupMessages(library(quadprog))

script <- sub("^--file=", "", grep("^--file=", commandArgs(trailingOnly = FALSE), value = TRUE))
out_dir <- if (length(script) == 1) dirname(normalizePath(script)) else getwd()

RNGkind(kind = "Mersenne-Twister", normal.kind = "Inversion", sample.kind = "Rejection")
set.seed(20240601)

source(file.path(out_dir, "reference_helpers.R"))  # fmt, write_numeric_csv, blocks, labels
K <- 5

make_inputs <- function(n) {
  x <- rnorm(n)
  a <- matrix(rnorm(2 * n), n)
  b <- matrix(rnorm(3 * n), n)
  b[, 1] <- b[, 1] + 0.5 * a[, 1]  # correlated blocks, so candidates differ in more than noise
  c1 <- rnorm(n) + 0.3 * x
  data.frame(x = x, a1 = a[, 1], a2 = a[, 2], b1 = b[, 1], b2 = b[, 2], b3 = b[, 3], c1 = c1)
}

candidate_formula <- function(blocks_used) {
  as.formula(paste("y ~ x +", paste(unlist(blocks[blocks_used]), collapse = " + ")))
}

fit_candidate <- function(family, blocks_used, rows) {
  f <- candidate_formula(blocks_used)
  if (family == "gaussian") return(lm(f, data = rows))
  # tight IRLS tolerance: the default stops at a 1e-8 relative change in deviance, which (deviance being
  # quadratic near the optimum) only guarantees coefficients to about sqrt(1e-8) = 1e-4
  glm(f, family = family, data = rows, control = glm.control(epsilon = 1e-15, maxit = 100))
}

run_problem <- function(family, data) {
  coef_rows <- list()
  oof <- matrix(NA_real_, nrow(data), length(candidates), dimnames = list(NULL, labels))
  for (j in seq_along(candidates)) {
    full <- fit_candidate(family, candidates[[j]], data)
    if (family != "gaussian") stopifnot(full$converged, !full$boundary)
    est <- coef(full)
    coef_rows[[j]] <- data.frame(candidate = labels[j], term = names(est), estimate = unname(est),
                                 stringsAsFactors = FALSE)
    for (k in sort(unique(data$fold))) {
      held <- data$fold == k
      fold_fit <- fit_candidate(family, candidates[[j]], data[!held, ])
      if (family != "gaussian") stopifnot(fold_fit$converged)
      oof[held, j] <- predict(fold_fit, newdata = data[held, ], type = "response")
    }
  }
  write_numeric_csv(data, paste0(family, "_data.csv"))
  write_numeric_csv(do.call(rbind, coef_rows), paste0(family, "_coefficients.csv"))
  write_numeric_csv(as.data.frame(oof, check.names = FALSE), paste0(family, "_cv_predictions.csv"))
  oof
}

# Simplex weights minimising ||y - P w||^2: Dmat = P'P, dvec = P'y, sum(w) = 1, w >= 0.
# A ridge is added only when solve.QP refuses Dmat; it is recorded (0 when none was needed).
simplex_qp <- function(P, y, ridge = 0) {
  J <- ncol(P)
  solve.QP(Dmat = crossprod(P) + ridge * diag(J), dvec = drop(crossprod(P, y)),
           Amat = cbind(1, diag(J)), bvec = c(1, rep(0, J)), meq = 1)
}

# ---- gaussian ----------------------------------------------------------------------------------
n <- 120
gaussian <- make_inputs(n)
gaussian$y <- with(gaussian, 1 + 0.5 * x + 0.8 * a1 - 0.5 * a2 + 0.3 * b1 + 0.2 * b3 + 0.1 * c1 + rnorm(n))
gaussian$fold <- (seq_len(n) - 1) %% K + 1
P <- run_problem("gaussian", gaussian)
qp <- tryCatch(list(sol = simplex_qp(P, gaussian$y), ridge = 0), error = function(e) {
  ridge <- 1e-10 * mean(diag(crossprod(P)))
  list(sol = simplex_qp(P, gaussian$y, ridge), ridge = ridge)
})
weights <- qp$sol$solution
write_numeric_csv(data.frame(candidate = labels, weight = weights), "gaussian_weights.csv")
write_numeric_csv(data.frame(
  quantity = c("ridge", "mse", "n_active"),
  value = c(qp$ridge, mean((gaussian$y - P %*% weights)^2), sum(weights > 1e-10))
), "gaussian_qp_info.csv")

# ---- binomial ----------------------------------------------------------------------------------
n <- 200
binomial <- make_inputs(n)
eta <- with(binomial, -0.3 + 0.5 * x + 0.7 * a1 - 0.4 * a2 + 0.3 * b1 + 0.2 * b3 + 0.2 * c1)
binomial$y <- rbinom(n, 1, plogis(eta))
binomial$fold <- (seq_len(n) - 1) %% K + 1
invisible(run_problem("binomial", binomial))

# ---- poisson -----------------------------------------------------------------------------------
n <- 150
poisson <- make_inputs(n)
eta <- with(poisson, 0.4 + 0.3 * x + 0.25 * a1 - 0.2 * a2 + 0.15 * b1 + 0.1 * b3 + 0.1 * c1)
poisson$y <- rpois(n, exp(eta))
poisson$fold <- (seq_len(n) - 1) %% K + 1
invisible(run_problem("poisson", poisson))

# ---- raw solve.QP with a duplicated column -------------------------------------------------------
n <- 60
y <- rnorm(n)
p2 <- 0.5 * y + rnorm(n, sd = 0.8)
dup <- data.frame(y = y, p1 = y + rnorm(n, sd = 1), p2 = p2, p3 = rnorm(n), p4 = p2)
write_numeric_csv(dup, "qp_duplicate_data.csv")
P <- as.matrix(dup[, c("p1", "p2", "p3", "p4")])
refusal <- tryCatch({ simplex_qp(P, y); "none" }, error = function(e) conditionMessage(e))
ridge <- 1e-10 * mean(diag(crossprod(P)))
ridged <- simplex_qp(P, y, ridge)$solution
reduced <- simplex_qp(P[, 1:3], y)$solution  # the duplicate dropped: positive definite, no ridge
write_numeric_csv(data.frame(
  column = colnames(P), ridged_weight = ridged, reduced_weight = c(reduced, NA)
), "qp_duplicate_weights.csv")
write.csv(data.frame(quantity = c("unridged_error", "ridge", "R_version", "quadprog_version"),
                     value = c(refusal, fmt(ridge), R.version.string, as.character(packageVersion("quadprog")))),
          file.path(out_dir, "qp_duplicate_info.csv"), row.names = FALSE, quote = TRUE)
