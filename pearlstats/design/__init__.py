"""The design stage: formula and design spec, data checks and alignment, candidates, folds."""
