"""The final evaluation: refits, the leaderboard, the ensemble and the Pareto front."""
