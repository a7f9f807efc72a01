"""The terminal's listener on plain progress: the live trial line, the kept lines per learner."""

import io

from automil.cli.progress import Progress
from automil.track.records import LearnerResult, TrialRecord
from automil.tune.listener import StudyProgress


class Terminal(io.StringIO):
    def isatty(self):
        return True


TRIALS = [TrialRecord(0, "COMPLETE", 0.75), TrialRecord(1, "FAIL", attrs={"timed_out": True}),
          TrialRecord(2, "PRUNED"), TrialRecord(3, "COMPLETE", 0.8125)]


def test_on_a_terminal_each_trial_rewrites_one_line():
    stream = Terminal()
    progress = Progress(stream)
    progress.trial(StudyProgress("sil", 1, 6, 20, "balanced_accuracy", TRIALS))
    progress.trial(StudyProgress("sil", None, 6, None, "balanced_accuracy", TRIALS[:1]))
    lines = stream.getvalue().split("\r\033[K")[1:]
    assert lines[0].startswith("  sil (outer split 2/6): trial 4/20, best balanced_accuracy 0.812, 1 T/O, 0:0")
    assert lines[1].startswith("  sil (all folds): trial 1, best balanced_accuracy 0.750, 0 T/O")


def test_in_a_log_trials_are_silent_and_the_learner_lines_stay():
    stream = io.StringIO()
    progress = Progress(stream)
    progress.trial(StudyProgress("sil", None, 6, 20, "accuracy", TRIALS))
    progress.tuned(StudyProgress("sil", None, 6, 20, "accuracy", TRIALS))
    progress.learner_done(LearnerResult(learner="sil", status="ok", trials=4, trials_timed_out=1,
                                        headline="nested", balanced_accuracy=0.8))
    progress.learner_done(LearnerResult(learner="nsk", status="T/O", trials=2, trials_timed_out=2,
                                        headline="nested"))
    lines = stream.getvalue().splitlines()
    assert lines[0].startswith("automil: sil: tuned, 4 trials (1 pruned, 1 T/O, 0 failed), best tuning accuracy "
                               "0.812 [0:0")
    assert lines[1].startswith("  sil: ok, 4 trials (1 T/O), nested BACC 0.800 [")
    assert lines[2].startswith("  nsk: T/O, 2 trials (2 T/O), nested BACC - [")
    assert "\r" not in stream.getvalue()
