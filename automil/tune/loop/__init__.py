"""The trial loop: one Optuna trial after the other within the schedule."""
