# Shared by make_r_references.R and make_r_weighted_references.R (sourced; sets out_dir first).
#
# fmt / write_numeric_csv write doubles with sprintf("%.17g"), which round-trips exactly.
# blocks, candidates, labels: the 7 block-subset candidates of the reference problems.

fmt <- function(x) sprintf("%.17g", x)

write_numeric_csv <- function(frame, name) {
  text <- as.data.frame(lapply(frame, function(col) if (is.numeric(col)) fmt(col) else col),
                        stringsAsFactors = FALSE, check.names = FALSE)
  write.csv(text, file.path(out_dir, name), row.names = FALSE, quote = TRUE)
}

blocks <- list(a = c("a1", "a2"), b = c("b1", "b2", "b3"), c = "c1")

# Candidates: every non-empty subset of the blocks, by size, then in formula order
# (a, b, c, a+b, a+c, b+c, a+b+c); x and the intercept are in every candidate.
candidates <- unlist(lapply(seq_along(blocks), function(k) combn(names(blocks), k, simplify = FALSE)),
                     recursive = FALSE)
labels <- vapply(candidates, paste, "", collapse = "+")
