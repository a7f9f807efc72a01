"""Reading back: stored studies, the results table, comparisons, the published figures."""
