"""Study files: a grid of datasets x learners with budgets, declared in TOML (``automil run``)."""

from __future__ import annotations

from dataclasses import fields

from automil.tune.options import TuneOptions, parse_size

__all__ = ["read_study_file"]


def read_study_file(path, overrides: dict | None = None) -> list[tuple[str, list | None, TuneOptions]]:
    """The studies a TOML file declares: ``(dataset, learners, options)`` for every dataset.

    ``[options]`` holds defaults for every ``[[study]]``; a study names ``datasets`` (or one
    ``dataset``), optionally ``learners``, and may override any option. ``overrides`` (the command line)
    win over the file. Unknown keys are errors naming the file and the key.
    """
    import tomllib

    try:
        with open(path, "rb") as f:
            data = tomllib.load(f)
    except OSError as error:
        raise ValueError(f"cannot read study file {path}: {error.strerror}") from None
    except tomllib.TOMLDecodeError as error:
        raise ValueError(f"{path}: not valid TOML: {error}") from None
    known = {f.name for f in fields(TuneOptions)}
    for key in set(data) - {"options", "study", "description"}:
        raise ValueError(f"{path}: unknown top-level key {key!r} (expected [options] and [[study]])")
    base = data.get("options", {})
    if set(base) - known:
        raise ValueError(f"{path}: unknown option {sorted(set(base) - known)[0]!r} in [options]; known: "
                         f"{', '.join(sorted(known))}")
    studies = data.get("study") or []
    if not studies:
        raise ValueError(f"{path}: no [[study]] tables: nothing to run")
    runs = []
    for number, study in enumerate(studies, 1):
        study = dict(study)
        datasets = study.pop("datasets", None) or [study.pop("dataset", None)]
        study.pop("dataset", None)
        learners = study.pop("learners", None) or None
        if None in datasets:
            raise ValueError(f"{path}: study {number} names no dataset (add dataset = \"NAME\")")
        unknown = set(study) - known - {"name"}
        if unknown:
            raise ValueError(f"{path}: study {number}: unknown key {sorted(unknown)[0]!r}")
        study.pop("name", None)
        values = {**base, **study}
        for key in ("n_trials", "timeout"):
            if isinstance(values.get(key), str) and values[key].lower() == "none":
                values[key] = None
        if isinstance(values.get("fit_memory"), str):
            values["fit_memory"] = parse_size(values["fit_memory"])
        options = TuneOptions(**{**values, **(overrides or {})})
        options.check()
        runs += [(dataset, learners, options) for dataset in datasets]
    return runs
