# Reference values for the observation-weight tests in tests/test_r_agreement_weights.py:
# R's glm(weights=, offset=) and lm(weights=, offset=) on the stored poisson and gaussian data.
#
# Run from anywhere:  Rscript tests/results/reference/make_r_weighted_references.R
# Needs R (>= 4.0) only. It reads poisson_data.csv and gaussian_data.csv (written by
# make_r_references.R) and writes the weighted_*.csv files. Weights, exposures and offsets
# are fixed functions of the row number i (no random numbers), written to the *_inputs.csv.
#
#   poisson   glm(y ~ x + <block columns> + offset(log(t)), family = poisson, weights = w),
#             w_i = 0.5 + 0.75 ((i - 1) %% 4) (non-integer: R's prior weights, statsmodels'
#             var_weights), exposure t_i = 0.5 + 0.5 ((i - 1) %% 7)
#   gaussian  lm(y ~ x + <block columns> + offset(o), weights = w),
#             w_i = 0.5 + 0.75 ((i - 1) %% 4), o_i = 0.4 (((i - 1) %% 3) - 1)
# For each of the 7 candidates: coefficients and standard errors on all rows, and out-of-fold
# predictions (response scale, with the held-out rows' offsets) over the stored fold labels.

script <- sub("^--file=", "", grep("^--file=", commandArgs(trailingOnly = FALSE), value = TRUE))
out_dir <- if (length(script) == 1) dirname(normalizePath(script)) else getwd()

source(file.path(out_dir, "reference_helpers.R"))  # fmt, write_numeric_csv, blocks, labels

fit_one <- function(family, formula, data) {
  if (family == "gaussian") {
    lm(formula, data = data, weights = w)
  } else {
    glm(formula, family = poisson, data = data, weights = w,
        control = glm.control(epsilon = 1e-15, maxit = 100))
  }
}

run <- function(family, offset_term) {
  data <- read.csv(file.path(out_dir, paste0(family, "_data.csv")))
  i <- seq_len(nrow(data)) - 1
  data$w <- 0.5 + 0.75 * (i %% 4)
  if (family == "poisson") {
    data$t <- 0.5 + 0.5 * (i %% 7)
    write_numeric_csv(data.frame(w = data$w, t = data$t), "weighted_poisson_inputs.csv")
  } else {
    data$o <- 0.4 * ((i %% 3) - 1)
    write_numeric_csv(data.frame(w = data$w, o = data$o), "weighted_gaussian_inputs.csv")
  }
  coefs <- list()
  oof <- matrix(NA_real_, nrow(data), length(labels), dimnames = list(NULL, labels))
  for (j in seq_along(labels)) {
    columns <- unlist(blocks[candidates[[j]]])
    formula <- as.formula(paste("y ~ x +", paste(columns, collapse = " + "), "+", offset_term))
    fit <- fit_one(family, formula, data)
    table <- summary(fit)$coefficients
    coefs[[j]] <- data.frame(candidate = labels[j], term = rownames(table),
                             estimate = table[, 1], std_error = table[, 2])
    for (k in sort(unique(data$fold))) {
      held <- data$fold == k
      inner <- fit_one(family, formula, data[!held, ])
      oof[held, j] <- predict(inner, newdata = data[held, ], type = "response")
    }
  }
  write_numeric_csv(do.call(rbind, coefs), paste0("weighted_", family, "_coefficients.csv"))
  write_numeric_csv(as.data.frame(oof), paste0("weighted_", family, "_cv_predictions.csv"))
}

run("poisson", "offset(log(t))")
run("gaussian", "offset(o)")
