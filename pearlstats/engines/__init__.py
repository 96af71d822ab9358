"""Fast cross-validation engines, one module per kind of downstream model."""
