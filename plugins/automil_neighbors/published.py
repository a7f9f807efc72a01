"""The accuracies Citation-kNN's paper printed (bag accuracy, %), for ``automil report --published``. Sources
and protocols: docs/published.md, section 1."""

from automil import Published

PUBLISHED = {
    "citation-knn": Published("Wang & Zucker, ICML 2000", {"musk1": 92.4, "musk2": 86.3},
                              "R and C set per data set (R = 2, C = 4 on both); quoted from memory of the paper, "
                              "not re-checked (docs/published.md, section 1)"),
}
