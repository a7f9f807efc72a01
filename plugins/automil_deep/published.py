"""The accuracies the deep MIL papers printed on the classic five sets (bag accuracy, %), for
``automil report --published``. Sources and protocols: docs/published.md, section 1."""

from automil import Published

_CLASSIC = ("musk1", "musk2", "elephant", "fox", "tiger")

PUBLISHED = {
    # Table 1, the attention (not gated) row
    "abmil": Published("Ilse, Tomczak & Welling, ICML 2018", dict(zip(_CLASSIC, (89.2, 85.8, 86.8, 61.5, 83.9))),
                       "five repeats of 10-fold cross-validation, settings fixed per data set"),
    "mi-net": Published("Wang, Yan, Tang, Bai & Liu, Pattern Recognition 2018",
                        dict(zip(_CLASSIC, (88.9, 85.8, 85.8, 61.3, 82.4))),
                        "repeated 10-fold cross-validation"),
    "MI-Net": Published("Wang, Yan, Tang, Bai & Liu, Pattern Recognition 2018",
                        dict(zip(_CLASSIC, (88.7, 85.9, 86.2, 62.2, 83.0))),
                        "repeated 10-fold cross-validation; the plain network, without deep supervision"),
}
