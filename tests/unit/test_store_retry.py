"""Which store errors a call waits out: the lock always; another worker's insert of the same row only where
the caller says the row may be shared (an MLflow dataset of an experiment)."""

import pytest
from mlflow.exceptions import MlflowException

from automil.track.store.mlflow_store import INSERTED_BY_ANOTHER, retry

# What the load test's server answered when two workers logged the same bags to one experiment at once.
DUPLICATE_DATASET = ("BAD_REQUEST: (sqlite3.IntegrityError) UNIQUE constraint failed: datasets.experiment_id, "
                     "datasets.name, datasets.digest")
DUPLICATE_DATASET_POSTGRES = ('(psycopg2.errors.UniqueViolation) duplicate key value violates unique constraint '
                              '"dataset_pk"')


def failing(times: int, message: str):
    calls = []

    def call(value):
        calls.append(value)
        if len(calls) <= times:
            raise MlflowException(message)
        return value

    return call, calls


@pytest.mark.parametrize("message", [DUPLICATE_DATASET, DUPLICATE_DATASET_POSTGRES])
def test_a_dataset_another_worker_inserted_first_is_tried_again(message):
    call, calls = failing(1, message)
    assert retry(call, "inputs", transient=INSERTED_BY_ANOTHER) == "inputs"
    assert calls == ["inputs", "inputs"]


def test_a_duplicate_elsewhere_is_an_error_at_once():
    call, calls = failing(1, DUPLICATE_DATASET)
    with pytest.raises(MlflowException, match="UNIQUE constraint failed"):
        retry(call, "run")
    assert calls == ["run"]


def test_a_locked_database_is_waited_out_and_a_lasting_one_reported():
    call, calls = failing(2, "(sqlite3.OperationalError) database is locked")
    assert retry(call, "tags") == "tags" and len(calls) == 3
    call, calls = failing(99, "(sqlite3.OperationalError) database is locked")
    with pytest.raises(MlflowException, match="database is locked"):
        retry(call, "tags", attempts=3)
    assert len(calls) == 3
