"""``automil predict``: a logged model applied to the bags of a dataset or a file."""

from __future__ import annotations

import json
import sys

import numpy as np

from automil.cli.common import add_slide_labels, add_tracking_uri, print_table, subcommand

__all__ = ["add_predict"]


def add_predict(commands):
    sub = subcommand(commands, "predict", _run_predict, "apply a tuned model to bags",
                     "Predict every bag of a dataset or bag file with a model automil logged: one line per "
                     "bag (label, class scores, the witness instance where the learner has one), and ACC and "
                     "BACC when the bags carry labels; a survival model's risk (higher: an earlier event) or a "
                     "regression model's value per bag, and their figures when the bags carry the outcome.")
    sub.add_argument("model", metavar="MODEL",
                     help="an MLflow model URI: models:/automil-DATASET/latest (the model automil tune chose), "
                          "models:/automil-DATASET/VERSION, runs:/RUN_ID/model, or a row's model_uri")
    sub.add_argument("--dataset", required=True, metavar="NAME_OR_FILE",
                     help="registered dataset name or a bag file")
    add_slide_labels(sub)
    sub.add_argument("--json", metavar="PATH",
                     help="write the predictions as JSON to PATH ('-': to stdout instead of the lines)")
    sub.add_argument("--heatmaps", metavar="DIR",
                     help="write every bag's instance scores to DIR: <bag>.csv (instance, x, y, score) and, when "
                          "the bags have coords, <bag>.png drawn at their positions (a learner with instance "
                          "scores, or an ensemble with one)")
    sub.add_argument("--coverage", type=float, metavar="LEVEL",
                     help="also give every bag its conformal prediction set at this coverage (e.g. 0.9): the "
                          "classes that hold the true one for at least that share of bags like the calibration "
                          "bags; a set of more than one class is an abstention. The model fitted without the "
                          "calibration bags then gives every column: label, scores, witness and set "
                          "(docs/probabilities.md)")
    sub.add_argument("--mondrian", action="store_true",
                     help="with --coverage: the coverage holds within each class, not only on average")
    add_tracking_uri(sub)


def _run_predict(args) -> int:
    from automil.data.datasets import load_bags
    from automil.evaluation.metrics import fold_scores
    from automil.evaluation.prediction import model_task, predict_bags
    from automil.streamed_bags import StreamedBags
    from automil.track import default_tracking_uri
    from automil.track.writing.model import load_estimator
    from automil.tune.workers.processes import release_instances, share_instances

    if args.coverage is not None and not 0 < args.coverage < 1:
        raise ValueError(f"--coverage must be between 0 and 1 (exclusive), e.g. 0.9; got {args.coverage}")
    if args.mondrian and args.coverage is None:
        raise ValueError("--mondrian needs --coverage")
    model = load_estimator(args.tracking_uri or default_tracking_uri(), args.model)
    task = model_task(model)
    if task != "classification" and (args.coverage is not None or args.heatmaps):
        flag = "--coverage" if args.coverage is not None else "--heatmaps"
        raise ValueError(f"{flag} serves classification models; {args.model} is a {task} model")
    # read as a run reads: a slide folder into a mapped file, so a cohort larger than memory can be predicted
    mapped = share_instances(lambda: load_bags(args.dataset, labels=args.labels, groups=args.groups,
                                                 columns=args.columns))
    try:
        bags = mapped if mapped.instances_file is None else StreamedBags(mapped)
        try:
            predictions = predict_bags(model, bags, args.coverage, args.mondrian)
        except ValueError as error:
            raise ValueError(f"model {args.model!r}: {error}") from None
        notes = sys.stderr if args.json == "-" else sys.stdout  # with --json -, standard output is the rows
        print(_answering(model, args, task), file=notes)
        if args.heatmaps:
            from automil.evaluation.heatmap_drawing import write_heatmaps

            written = write_heatmaps(model if args.coverage is None else model.held_apart, bags, predictions,
                                     args.heatmaps)
            pictures = sum(files.picture is not None for files in written)
            print(f"heatmaps of {len(written)} bags in {args.heatmaps} ({pictures} pictures, {len(written)} "
                  "tables)", file=notes)
    finally:
        release_instances(mapped)
    if args.json:
        text = json.dumps([p.to_dict() for p in predictions], indent=2)
        if args.json == "-":
            print(text)
            if args.coverage is not None:
                print(_set_summary(predictions, args), file=sys.stderr)
            return 0
        with open(args.json, "w") as f:
            f.write(text + "\n")
    if task != "classification":
        _print_outcomes(predictions, bags, task)
        return 0
    rows = [(p.bag, p.label, "" if p.scores is None else " ".join(f"{c}:{v:.3g}" for c, v in p.scores.items()),
             "" if p.witness is None else p.witness) for p in predictions]
    print()
    if args.coverage is None:
        print_table(("bag", "label", "scores", "witness"), rows)
    else:
        sets = [("abstain " if p.abstain else "") + "{" + ",".join(p.prediction_set) + "}" for p in predictions]
        print_table(("bag", "label", "scores", "witness", f"set at {args.coverage:g}"),
                    [(*row, s) for row, s in zip(rows, sets, strict=True)])
        print(f"\n{_set_summary(predictions, args)}")
    if bags.y is not None:
        classes = np.asarray(model.classes_)
        probabilities = None if predictions[0].scores is None else np.array(
            [[p.scores[str(c)] for c in classes] for p in predictions])
        scores = fold_scores(bags.y, [p.label for p in predictions], probabilities, classes)
        auc = "" if scores.roc_auc is None else f", AUC {100 * scores.roc_auc:.1f}"
        who = "full-data model" if args.coverage is None else "held-apart model"
        print(f"\n{bags.n_bags} bags ({who}): ACC {100 * scores.accuracy:.1f}, BACC "
              f"{100 * scores.balanced_accuracy:.1f}{auc}")
    return 0


def _print_outcomes(predictions, bags, task: str):
    """A survival model's risk or a regression model's value per bag (and the known outcome), then their figures
    when the bags carry outcomes: Harrell's concordance (Uno's and the Brier score need the training labels,
    which a logged model does not hold), or R^2, Spearman's rho, MAE and RMSE."""
    from automil.endpoints import LABELS, TASK_METRICS
    from automil.evaluation.metrics import fold_scores

    what = "risk" if task == "survival" else "value"
    values = [getattr(p, what) for p in predictions]
    print()
    print_table(("bag", what, *(("outcome",) if bags.y is not None else ())),
                [(p.bag, f"{v:.4g}", *((_outcome(p.truth),) if bags.y is not None else ()))
                 for p, v in zip(predictions, values, strict=True)])
    if bags.y is None:
        return
    scores = fold_scores(bags.y, np.asarray(values))
    figures = [f"{LABELS[m]} {getattr(scores, m):.3f}" for m in TASK_METRICS[task] if getattr(scores, m) is not None]
    print(f"\n{bags.n_bags} bags (full-data model): {', '.join(figures) or 'no figure (too few bags or events)'}")


def _outcome(truth) -> str:
    """A bag's known outcome: its time, ``+`` where it was censored; or its value."""
    if isinstance(truth, dict):
        return f"{truth['time']:g}{'' if truth['event'] else '+'}"
    return f"{truth:.4g}"


def _answering(model, args, task: str) -> str:
    """Which model the printed labels, scores and witnesses are of: the full-data model, or with
    ``--coverage`` the held-apart one, whose sets the coverage is about."""
    if args.coverage is None:
        if task != "classification":
            return f"model: full-data model (the logged fit; its {'risks' if task == 'survival' else 'values'})"
        scores = "calibrated probabilities" if hasattr(model, "calibrator") else "its own scores"
        return f"model: full-data model (the logged fit; its labels, {scores})"
    kind = ", class-conditional" if args.mondrian else ""
    return (f"model: held-apart model (conformal sets, coverage {args.coverage:g}{kind}): the logged configuration "
            f"fitted without its {len(model.conformal.scores)} calibration bags; labels, probabilities, sets and "
            "witnesses all its")


def _set_summary(predictions, args) -> str:
    """How many bags the sets decide (one class) and leave (more), and, with labels, the error rate among
    the decided ones: what acting only on decided bags would cost."""
    decided = [p for p in predictions if not p.abstain]
    kind = "class-conditional" if args.mondrian else "marginal"
    line = (f"prediction sets at coverage {args.coverage:g} ({kind}): {len(decided)} bags decided, "
            f"{len(predictions) - len(decided)} abstained")
    if decided and decided[0].truth is not None:
        wrong = sum(p.prediction_set != [str(p.truth)] for p in decided)
        line += f"; error among decided bags {100 * wrong / len(decided):.1f}% ({wrong} of {len(decided)})"
    return line
