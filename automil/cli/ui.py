"""``automil ui``: the MLflow UI on the tracking store, announced when it answers and gone when stopped."""

from __future__ import annotations

import signal
import time

from automil.cli.common import add_tracking_uri, subcommand

__all__ = ["add_ui", "serve", "announce"]

_STOP_SIGNALS = tuple(getattr(signal, name) for name in ("SIGTERM", "SIGINT", "SIGHUP") if hasattr(signal, name))


# ---- automil ui -------------------------------------------------------------------------------------
def add_ui(commands):
    sub = subcommand(commands, "ui", _run_ui, "start the MLflow UI on the tracking store",
                      "Start the MLflow UI on automil's tracking store (one experiment per dataset, one "
                      "run per learner, nested runs per trial); once it answers, print its URL and, per "
                      "dataset, the link to its leaderboard (the learners' runs, best balanced accuracy "
                      "first, a view saved in the experiment) and the link to the learners' trials. Ctrl-C, "
                      "SIGTERM or SIGHUP stop the server and its workers. On a tracking server "
                      "(--tracking-uri http://...), which serves its UI itself, only save the leaderboard views "
                      "and print the links, logged in as MLFLOW_TRACKING_USERNAME with MLFLOW_TRACKING_PASSWORD.")
    sub.add_argument("--host", default="127.0.0.1",
                     help="interface to bind (default 127.0.0.1: this machine only)")
    sub.add_argument("--port", type=int, default=5000, help="port (default 5000)")
    sub.add_argument("--open", action="store_true", help="open the UI in the default web browser once it "
                                                         "answers")
    add_tracking_uri(sub)


def _run_ui(args) -> int:
    from automil.track import default_tracking_uri
    from automil.track.server import ui_command
    from automil.track.store.locations import is_tracking_server, refused_login
    from automil.uris import shown_storage

    uri = args.tracking_uri or default_tracking_uri()
    if is_tracking_server(uri):  # a tracking server serves its UI itself: only the links are automil's
        try:
            return announce(uri.rstrip("/"), args.open)
        except Exception as error:
            refused = refused_login(error, uri)
            if refused is not None:
                raise RuntimeError(refused) from None
            raise
    host = f"[{args.host}]" if ":" in args.host else args.host
    command, env = ui_command(uri, args.host, args.port)
    return serve(command, env, f"http://{host}:{args.port}", f"store {shown_storage(uri)}", args.open)


def serve(command: list[str], env: dict, base_url: str, store: str, open_browser: bool = False,
          out=print) -> int:
    """Run the server ``command`` until a stop signal; prints where to look once it answers.

    Returns 0 after a stop signal, else the server's exit code. A signal only sets a flag, checked
    between steps: an exception raised wherever the signal lands (inside ``subprocess.Popen`` just
    after the fork, say) could lose the child and leave it running.
    """
    from automil.track.server import start_server, stop_server, wait_until_ready

    stopped = []
    previous = {sig: signal.signal(sig, lambda signum, frame: stopped.append(signum)) for sig in _STOP_SIGNALS}
    server = None
    try:
        out(f"automil: starting the MLflow UI on {store} ...", flush=True)
        server = start_server(command, env)
        if not wait_until_ready(server, base_url, stopped):
            return 0
        announce(base_url, open_browser and not stopped, " ; Ctrl-C stops it", out)
        while not stopped and server.poll() is None:
            time.sleep(0.2)
        return 0 if stopped else server.returncode
    finally:
        if server is not None:
            stop_server(server)
        for sig, handler in previous.items():
            signal.signal(sig, handler)


def announce(base_url: str, open_browser: bool = False, note: str = "", out=print) -> int:
    """Save the leaderboard view in every automil experiment of the server at ``base_url`` and print the
    links to each dataset's leaderboard and trials (a shared server's login comes from
    ``MLFLOW_TRACKING_USERNAME`` / ``MLFLOW_TRACKING_PASSWORD``, as for every MLflow client)."""
    from automil.track.server import dataset_experiments, runs_table_url, save_leaderboard_views, trials_table_url

    experiments = dataset_experiments(base_url)
    save_leaderboard_views(base_url, [experiment_id for _, experiment_id in experiments])
    out(f"automil: MLflow UI at {base_url}{note}", flush=True)
    for dataset, experiment_id in experiments:
        out(f"  {dataset}: {runs_table_url(base_url, experiment_id)}", flush=True)
        out(f"    trials: {trials_table_url(base_url, experiment_id)}", flush=True)
    if not experiments:
        out("  no automil experiment yet: run automil tune", flush=True)
    if open_browser:
        import webbrowser

        webbrowser.open(runs_table_url(base_url, experiments[0][1]) if len(experiments) == 1 else base_url)
    return 0
