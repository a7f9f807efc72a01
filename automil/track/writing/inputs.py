"""The bags a study ran on as an MLflow dataset input of its run: the runs table's Dataset column and its
dataset filter then work, and runs on two versions of a file are told apart by the digest."""

from __future__ import annotations

import json
import warnings
from pathlib import Path

from mlflow.data.dataset import Dataset

__all__ = ["BagsDataset", "dataset_input"]

CONTEXT = "train"  # MLflow's input tag ``mlflow.data.context``: the bags were tuned and evaluated on


class BagsDataset(Dataset):
    """MLflow's view of :class:`automil.Bags`.

    Parameters
    ----------
    bags : Bags
    name : str
        The dataset's name (a registered name, or the file's).

    The digest hashes the instances, the bag boundaries and the labels, so any change to the data
    changes it; the source is the file the bags were read from, a URL, or, for generated bags (no
    file), the generator's name; the profile counts bags, instances, features and classes.
    """

    def __init__(self, bags, name: str):
        self._bags = bags
        super().__init__(source=_source(bags.source), name=name)

    def _compute_digest(self) -> str:
        from automil.data.datasets import NAME_DIGEST_LENGTH

        return self._bags.digest[:NAME_DIGEST_LENGTH]  # as in a file dataset's name (datasets.dataset_name)

    @property
    def profile(self) -> dict:
        bags = self._bags
        return {"bags": bags.n_bags, "instances": bags.n_instances, "features": bags.n_features,
                "classes": 0 if bags.y is None else len(bags.classes)}

    @property
    def schema(self) -> None:
        return None  # bags of instances are no table; the profile says their shape

    def to_dict(self) -> dict[str, str]:
        return {**super().to_dict(), "profile": json.dumps(self.profile)}


def _source(source: str | None):
    """An MLflow dataset source for ``Bags.source``: the file, a URL, or the generator by name."""
    from mlflow.data.code_dataset_source import CodeDatasetSource
    from mlflow.data.dataset_source_registry import resolve_dataset_source

    if source and (source.startswith(("http://", "https://")) or Path(source).is_file()):
        with warnings.catch_warnings():  # MLflow registers its local-file source twice, and says so
            warnings.simplefilter("ignore", UserWarning)
            return resolve_dataset_source(source if "://" in source else str(Path(source).resolve()))
    return CodeDatasetSource(tags={"generated": source or "in memory"})


def dataset_input(bags, name: str):
    """The ``DatasetInput`` to give ``MlflowClient.log_inputs`` for ``bags``."""
    from mlflow.entities import DatasetInput, InputTag
    from mlflow.utils.mlflow_tags import MLFLOW_DATASET_CONTEXT

    return DatasetInput(BagsDataset(bags, name)._to_mlflow_entity(),
                        tags=[InputTag(MLFLOW_DATASET_CONTEXT, CONTEXT)])
