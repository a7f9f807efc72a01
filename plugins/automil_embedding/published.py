"""The accuracies the embedded-space learners' papers printed on the classic sets (bag accuracy, %), for
``automil report --published``. Sources and protocols: docs/published.md, section 1."""

from automil import Published

_CLASSIC = ("musk1", "musk2", "elephant", "fox", "tiger")

PUBLISHED = {
    # MILES was run on MUSK only among these sets (its image experiments use other Corel categories)
    "miles": Published("Chen, Bi & Wang, TPAMI 2006", {"musk1": 86.3, "musk2": 87.7}),
    "mivlad": Published("Wei, Wu & Zhou, IEEE TNNLS 2017", dict(zip(_CLASSIC, (87.1, 87.2, 85.0, 62.0, 81.1))),
                        "ten 10-fold cross-validations, parameters set per data set"),
    "mifv": Published("Wei, Wu & Zhou, IEEE TNNLS 2017", dict(zip(_CLASSIC, (90.9, 88.4, 85.2, 62.1, 81.3))),
                      "ten 10-fold cross-validations, parameters set per data set"),
}
