"""The accuracies the SVM family's papers printed on the classic five sets (bag accuracy, %), for
``automil report --published``. Sources and protocols: docs/published.md, section 1."""

from automil import Published

_CLASSIC = ("musk1", "musk2", "elephant", "fox", "tiger")

PUBLISHED = {
    "mi-svm": Published("Andrews, Tsochantaridis & Hofmann, NIPS 2002",
                        dict(zip(_CLASSIC, (87.4, 83.6, 82.2, 58.2, 78.4))),
                        "one 10-fold cross-validation, kernel and C set per data set"),
    "MI-SVM": Published("Andrews, Tsochantaridis & Hofmann, NIPS 2002",
                        dict(zip(_CLASSIC, (77.9, 84.3, 81.4, 57.8, 84.0))),
                        "one 10-fold cross-validation, kernel and C set per data set"),
    # the MUSK figures are the paper's; the Corel ones later authors' re-runs, as re-printed by Wang et al. 2018
    "nsk": Published("Gärtner, Flach, Kowalczyk & Smola, ICML 2002",
                     dict(zip(_CLASSIC, (88.0, 89.3, 84.3, 60.3, 84.2)))),
    "migraph": Published("Zhou, Sun & Li, ICML 2009", dict(zip(_CLASSIC, (88.9, 90.3, 86.9, 62.0, 86.0))),
                         "ten 10-fold cross-validations, C and gamma set per data set"),
}
