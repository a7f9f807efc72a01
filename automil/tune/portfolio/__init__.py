"""The portfolio: learner configurations chosen offline, across many MIL tasks, that a run tries first.

:mod:`~automil.tune.portfolio.selection` chooses them on a benchmark matrix (``experiments/portfolio.py`` builds it);
:mod:`~automil.tune.portfolio.members` reads the portfolio automil ships and picks a data set's regime."""
