"""Studies: their plan (names, samplers, the search space) and the warm start's meta-features."""
