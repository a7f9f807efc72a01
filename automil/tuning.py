"""The Optuna driver: one persistent study per learner-dataset pair, fits in killable workers.

The names of study and trial user attributes are a contract with :mod:`automil.tracking` and are listed
in ``docs/tune.md`` ("What a study stores"). (Being written.)
"""
