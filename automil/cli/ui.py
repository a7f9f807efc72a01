"""``automil ui``: the MLflow UI on the tracking store."""

from __future__ import annotations

from automil.cli.common import subcommand

__all__ = ["add_ui"]


# ---- automil ui -------------------------------------------------------------------------------------
def add_ui(commands):
    sub = subcommand(commands, "ui", _run_ui, "start the MLflow UI on the tracking store",
                      "Start the MLflow UI on automil's tracking store (one experiment per dataset, one "
                      "run per learner, nested runs per trial) and print its URL; Ctrl-C stops it.")
    sub.add_argument("--host", default="127.0.0.1",
                     help="interface to bind (default 127.0.0.1: this machine only)")
    sub.add_argument("--port", type=int, default=5000, help="port (default 5000)")
    sub.add_argument("--tracking-uri", help="MLflow tracking URI (default $MLFLOW_TRACKING_URI, else "
                                            "sqlite:///mlruns/mlflow.db)")


def _run_ui(args) -> int:
    import subprocess

    from automil.track import default_tracking_uri, start_ui
    from automil.uris import shown_storage

    uri = args.tracking_uri or default_tracking_uri()
    host = f"[{args.host}]" if ":" in args.host else args.host
    print(f"automil: MLflow UI at http://{host}:{args.port} (store {shown_storage(uri)}); Ctrl-C stops it", flush=True)
    server = start_ui(uri, args.host, args.port)
    try:
        return server.wait()
    except KeyboardInterrupt:
        server.terminate()
        try:
            server.wait(timeout=10)
        except subprocess.TimeoutExpired:
            server.kill()
            server.wait()
        return 0
