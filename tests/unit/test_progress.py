"""The terminal's listener on plain progress: live bars on a terminal, plain lines in a log, the kept
lines per learner."""

import io
import re

from automil.cli.progress import Progress
from automil.records import Headline, LearnerResult, TrialCounts, TrialRecord, TrialState
from automil.tune.listener import LearnerStanding, Standing, StudyProgress


class Terminal(io.StringIO):
    def isatty(self):
        return True


TRIALS = [TrialRecord(0, TrialState.COMPLETE, 0.75), TrialRecord(1, TrialState.FAIL, attrs={"timed_out": True}),
          TrialRecord(2, TrialState.PRUNED), TrialRecord(3, TrialState.COMPLETE, 0.8125)]
STANDING = Standing("sil", [LearnerStanding("sil", 4, 140, 0.8125, "contender"),
                            LearnerStanding("nsk", 1, 140, 0.6, "behind"),
                            LearnerStanding("midf", 0, 140, None, "defaults")],
                    "balanced_accuracy", elapsed=83.0, left=142.0)


def test_in_a_log_each_trial_is_one_plain_line_with_the_learner_the_leader_and_the_clock():
    stream = io.StringIO()
    progress = Progress(stream)
    progress.standing(STANDING)
    progress.standing(Standing("midf", STANDING.learners, "balanced_accuracy", elapsed=90.0, left=None))
    progress.standing(Standing(None, STANDING.learners, "balanced_accuracy", elapsed=95.0, left=0.0))
    lines = stream.getvalue().splitlines()
    assert lines == ["  [1:23, 2:22 left] sil (contender): trial 5/140, best 0.812; leader sil 0.812 "
                     "(balanced_accuracy)",
                     "  [1:30] midf (defaults): trial 1/140, best -; leader sil 0.812 (balanced_accuracy)"]
    assert "\r" not in stream.getvalue() and "\033" not in stream.getvalue()


def test_on_a_terminal_every_learner_has_a_live_bar_with_its_trials_best_and_phase():
    stream = Terminal()
    progress = Progress(stream)
    progress.standing(STANDING)
    shown = stream.getvalue()
    assert "4/140" in shown and "best 0.812 contender" in shown
    assert "best 0.600 behind" in shown and "best - defaults" in shown
    assert "running sil" in shown and "83/225 s" in shown
    progress.message("a warning")
    assert "automil: a warning" in stream.getvalue()
    progress.tuned(StudyProgress("sil", None, 6, 20, "balanced_accuracy", TRIALS))
    assert not progress.bars, "tuning ended: the bars are gone"


def _finish_sil(progress: Progress):
    progress.tuned(StudyProgress("sil", None, 6, 20, "accuracy", TRIALS))
    progress.learner_done(LearnerResult(learner="sil", status="ok", counts=TrialCounts(trials=4, timed_out=1),
                                        headline=Headline(kind="nested", balanced_accuracy=0.8)))


def test_each_finished_learner_gets_one_line_with_its_status_trials_and_headline_figure():
    stream = io.StringIO()
    progress = Progress(stream)
    _finish_sil(progress)
    progress.learner_done(LearnerResult(learner="nsk", status="T/O", counts=TrialCounts(trials=2, timed_out=2),
                                        headline=Headline(kind="nested")))
    lines = stream.getvalue().splitlines()
    assert lines[0].startswith("automil: sil: tuned, 4 trials on all folds (1 pruned, 1 T/O, 0 failed), best "
                               "tuning accuracy 0.812 [0:0")
    assert lines[1].startswith("  sil: ok, 4 trials (1 T/O), nested BACC 0.800 [")
    assert lines[2].startswith("  nsk: T/O, 2 trials (2 T/O), nested BACC - [")


def test_on_a_terminal_a_finished_learner_clears_the_live_bars_and_its_lines_stay_below_them():
    stream = Terminal()
    progress = Progress(stream)
    progress.standing(STANDING)
    _finish_sil(progress)
    # The bars are erased (carriage returns and cursor-up over blanked lines); what follows the last of
    # those moves is what stays on the screen: the learner's two lines and nothing drawn over them.
    kept = re.split(r"\r|\x1b\[A", stream.getvalue())[-1].splitlines()
    assert [line.rsplit(" [", 1)[0] for line in kept] == [
        "automil: sil: tuned, 4 trials on all folds (1 pruned, 1 T/O, 0 failed), best tuning accuracy 0.812",
        "  sil: ok, 4 trials (1 T/O), nested BACC 0.800"]
    assert not progress.bars
