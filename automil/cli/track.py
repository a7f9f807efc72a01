"""``automil track replay``: log what a run kept back while its MLflow server did not answer."""

from __future__ import annotations

from pathlib import Path

from automil.cli.common import subcommand

__all__ = ["add_track"]


# ---- automil track replay -------------------------------------------------------------------------------
def add_track(commands):
    track = commands.add_parser("track", help="work on the MLflow tracking store",
                                description="Work on the MLflow tracking store.")
    actions = track.add_subparsers(title="actions", metavar="ACTION")
    sub = subcommand(actions, "replay", _run_replay, "log the backlog files a tracking outage left",
                     "Log the calls that automil tune kept back while its MLflow server did not answer (the "
                     "backlog files, JSON lines, that the run named at its end; by default in ./mlflow-backlog "
                     "or $AUTOMIL_MLFLOW_BACKLOG). Nothing is logged twice, so a file may be replayed again. A "
                     "file whose calls are all logged is removed; one whose server still does not answer keeps "
                     "what is left. Replay once the runs that wrote the files have ended.")
    sub.add_argument("paths", nargs="+", metavar="PATH", type=Path,
                     help="a backlog file, or a directory: every *.jsonl file in it")
    sub.add_argument("--tracking-uri", help="the MLflow tracking URI to log to (default: the store the run "
                                            "tracked to, named in each file)")


def _run_replay(args) -> int:
    from automil.track.outage.tolerant import replay

    files = [file for path in args.paths for file in (sorted(path.glob("*.jsonl")) if path.is_dir() else [path])]
    if not files:
        print(f"nothing to replay: no backlog file in {', '.join(map(str, args.paths))}")
        return 0
    complete = True
    for file in files:
        done = replay(file, args.tracking_uri)
        line = f"{file}: {done.logged} logged"
        if done.left:
            line += f", {done.left} left (the server did not answer: {done.reason}; replay again later)"
        if done.dropped:
            line += f", {len(done.dropped)} refused and dropped: {'; '.join(done.dropped)}"
        print(line)
        complete = complete and not done.left and not done.dropped
    return 0 if complete else 1
