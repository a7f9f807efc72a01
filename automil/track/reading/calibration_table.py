"""``automil report --calibration``: one table per dataset of each study's calibration figures on held-out bags
(``docs/probabilities.md``), from the metrics its parent run logged; nothing is recomputed. The chosen model
(the run of the dataset's latest registered version) is marked; its reliability diagram is the run's
``figures/reliability.png``."""

from __future__ import annotations

from automil.records import DEFAULT_LEVEL, LEVELS, PROCEDURE
from automil.records.calibration import level_key
from automil.track.reading.stored_studies import StoredStudy, ranked_studies
from automil.track.store.names import registered_name

__all__ = ["chosen_runs", "calibration_tables", "RELIABILITY"]

RELIABILITY = "figures/reliability.png"  # on every run whose row has calibration figures


def chosen_runs(client, datasets) -> dict[str, str]:
    """The run of each dataset's latest registered model version (the model its last tune chose)."""
    runs = {}
    for dataset in datasets:
        versions = client.search_model_versions(f"name = '{registered_name(dataset)}'")
        if versions:
            runs[dataset] = max(versions, key=lambda v: int(v.version)).run_id
    return runs


def calibration_tables(studies: list[StoredStudy], chosen: dict[str, str]) -> str:
    """The markdown tables, one per dataset with a study that logged calibration figures (the procedure's row
    first, then by headline balanced accuracy); ``ValueError`` when none did."""
    level = level_key(DEFAULT_LEVEL)
    out = []
    for dataset in sorted({s.dataset for s in studies}):
        shown = [s for s in ranked_studies([s for s in studies if s.dataset == dataset]) if "ece" in s.metrics]
        if not shown:
            continue
        out += [f"{dataset}: on held-out bags, each calibrated without it; coverage at "
                f"{' / '.join(f'{c:g}' for c in LEVELS)}, the rest at {level}", "",
                f"| learner | bags | ECE (raw) | Brier (raw) | log-loss (raw) | coverage | guaranteed at {level} "
                f"| SE | set size | abstains | worst class |",
                "| --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: |"]
        for study in shown:
            m = study.metrics
            n = m.get("calibration_bags")  # absent where no prediction sets were measured
            band = "-" if n is None else f"{DEFAULT_LEVEL:g}-{DEFAULT_LEVEL + 1 / (n + 1):.3f}"
            name = f"{study.learner} (chosen)" if chosen.get(dataset) == study.run_id else study.learner
            coverage = " / ".join(_number(m.get(f"coverage_{level_key(c)}")) for c in LEVELS)
            out.append(f"| {name} | {int(m.get('held_out_bags', 0))} | {_pair(m, 'ece')} | {_pair(m, 'brier')} "
                       f"| {_pair(m, 'log_loss')} | {coverage} | {band} "
                       f"| {_number(m.get(f'coverage_se_{level}'), 3)} | {_number(m.get(f'set_size_{level}'))} "
                       f"| {_percent(m.get(f'abstention_{level}'))} "
                       f"| {_number(m.get(f'worst_class_coverage_{level}'))} |")
        out += ["", f"Reliability diagram: {RELIABILITY} of each learner's run"
                + (f" (the chosen model's: run {chosen[dataset]})" if dataset in chosen else "")
                + f"; {PROCEDURE}: the procedure, each outer split's chosen row.", ""]
    if not out:
        raise ValueError("no study in the tracking store has calibration figures: they come from automil tune "
                         "under the nested or hold-out protocol")
    return "\n".join(out)


def _pair(metrics: dict, name: str) -> str:
    return f"{_number(metrics.get(name), 3)} ({_number(metrics.get(f'raw_{name}'), 3)})"


def _number(value, digits: int = 2) -> str:
    return "-" if value is None else f"{value:.{digits}f}"


def _percent(value) -> str:
    return "-" if value is None else f"{100 * value:.1f}%"
