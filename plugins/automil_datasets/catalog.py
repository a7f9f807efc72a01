"""The benchmark files this plugin registers: a small table copied from the benchmark MANIFEST.toml.

Kept free of heavy imports: ``automil datasets`` reads it to list the task facts without loading data.
"""

from __future__ import annotations

from dataclasses import dataclass

GITHUB_RAW = "https://raw.githubusercontent.com/{repository}/{commit}/{path}"


def github_file(repository: str, commit: str, path: str) -> str:
    """The raw URL of a repository file at a pinned commit."""
    return GITHUB_RAW.format(repository=repository, commit=commit, path=path)


@dataclass(frozen=True)
class BenchmarkFile:
    """One registered dataset read from one benchmark file.

    ``manifest_key`` is the file's table in MANIFEST.toml (tests parametrize from it); ``url`` is set only
    where the manifest's provenance is a public repository file at a pinned commit.
    """

    name: str
    manifest_key: str
    path: str
    sha256: str
    format: str
    n_bags: int
    n_instances: int
    n_features: int
    n_classes: int
    description: str
    citation: str
    url: str | None = None
    labels: str = "file"  # "file": the file's bag labels; "sival-class" / "sival-binary": see loaders


_DIETTERICH = ("Dietterich, T. G., Lathrop, R. H., & Lozano-Perez, T. (1997). Solving the multiple instance "
               "problem with axis-parallel rectangles. Artificial Intelligence, 89(1-2), 31-71.")
_ANDREWS = ("Andrews, S., Tsochantaridis, I., & Hofmann, T. (2003). Support vector machines for multiple-"
            "instance learning. Advances in Neural Information Processing Systems 15, 561-568.")
_ZHOU = ("Zhou, Z.-H., Sun, Y.-Y., & Li, Y.-F. (2009). Multi-instance learning by treating instances as non-"
         "i.i.d. samples. ICML 2009, 1249-1256. Preprocessed copy: Vanwinckelen, G., Tragante do O, V., "
         "Fierens, D., & Blockeel, H. (2016). Instance-level accuracy versus bag-level accuracy in "
         "multi-instance learning. Data Mining and Knowledge Discovery, 30(2), 313-341.")
_RAHMANI = ("Rahmani, R., Goldman, S. A., Zhang, H., Krettek, J., & Fritts, J. E. (2005). Localized content "
            "based image retrieval. MIR 2005, 227-236. Subset prepared by: Xu, Y., Zhu, J.-Y., Chang, E., & "
            "Tu, Z. (2012). Multiple clustered instance learning for histopathology cancer image "
            "segmentation, clustering, and classification. CVPR 2012.")

_MILL = ("dipgi2005/fuzzyKnnMultiinstanceDip2016", "07c1a91863913b9a85a3f071ec7012b110a2356d")
_NEWSGROUPS = ("GitteVW/Multi-Instance-Experiments", "47de57f56c4b407765d9355dd97a4f27d2f0ba07")
_MCILBOOST = ("junyanz/MCILBoost", "5870e57916b7c094a454a1be203e5e4b6d0dcd61")
_SIVAL_SHA256 = "39ebd7c78243b4d4f1db6519fa0eb3e00c8225fc3f2af8f35cd3d23e4d915888"
_SIVAL_URL = github_file(*_MCILBOOST, "data/sival.data")
_SIVAL_TEXT = "SIVAL subset of MCILBoost (360 images of 6 objects, 31-32 segments each, 30 features)"

BENCHMARK_FILES = (
    BenchmarkFile("musk1", "musk1", "musk1/musk1.data",
                  "c818f25af5a0933d295247cda4974f842b4d969d93e53c12756cfb0dac7e0ced", "mill",
                  92, 476, 166, 2, "Musk1 drug activity: molecules (bags) of conformations (instances)",
                  _DIETTERICH, github_file(*_MILL, "musk1.data")),
    # musk2 comes from a package-registry wheel, not a repository file: no download URL.
    BenchmarkFile("musk2", "musk2", "musk2/musk2.csv",
                  "14040c8891369392f87f4ce8969a20657e615e40e042f02d1a2fe2cabab01717", "mil-csv",
                  102, 6598, 166, 2, "Musk2 drug activity: molecules (bags) of conformations (instances)",
                  _DIETTERICH),
    *(BenchmarkFile(animal, animal, f"{animal}/{animal}.data", sha256, "mill", 200, n_instances, 230, 2,
                    f"Corel images with or without a {animal} (bags) of segmented regions (instances)",
                    _ANDREWS, github_file(*_MILL, f"{animal}.data"))
      for animal, sha256, n_instances in (
          ("elephant", "4c23d3e4cbb38350caa6655b2a2ed8d1e1f22b5767a30053dcbb4b266d87085f", 1391),
          ("fox", "2925148164df3e6ea689d24f7dae2f5d7bba540e90a32ab98f5c560605323cfc", 1320),
          ("tiger", "bac22b888fd6f97c6a1911b6cddeda23460259dc9dec63d7da0632f0f3917c16", 1220))),
    BenchmarkFile("hockey", "newsgroups_rec_sport_hockey", "newsgroups_rec_sport_hockey/rec_sport_hockey.txt",
                  "ad9afd47595590701cbbbe4cda7e3505ca7fba0650d355b4d64be9d3ae86b6fd", "spaced",
                  100, 1982, 200, 2, "20 Newsgroups rec.sport.hockey: sets of posts (bags), with real "
                  "instance labels", _ZHOU, github_file(*_NEWSGROUPS, "Data/Newsgroup/rec_sport_hockey.txt")),
    BenchmarkFile("trec1", "sparse_trec1", "sparse_trec1/sparse_trec1.data",
                  "edf6fabe59ab6044f8884d17279b67c05f3ef2eab79bf599d5537e8fb261954f", "mill-sparse",
                  400, 3224, 66552, 2, "TREC9 (OHSUMED) text: documents (bags) of passages, sparse features",
                  _ANDREWS, github_file(*_MILL, "sparse_trec1.data")),
    BenchmarkFile("sival", "sival_mcilboost_subset", "sival_mcilboost_subset/sival.data", _SIVAL_SHA256,
                  "mcilboost", 360, 11410, 30, 6, f"{_SIVAL_TEXT}: which object is in the image (6 classes)",
                  _RAHMANI, _SIVAL_URL, labels="sival-class"),
    BenchmarkFile("sival-binary", "sival_mcilboost_subset", "sival_mcilboost_subset/sival.data", _SIVAL_SHA256,
                  "mcilboost", 360, 11410, 30, 2, f"{_SIVAL_TEXT}: BlueScrunge, GreenTeaBox or "
                  "SmileyFaceDoll (positive) against the other three", _RAHMANI, _SIVAL_URL,
                  labels="sival-binary"),
)

# The 25 SIVAL objects in alphabetical order: MCILBoost numbers them from 1 and writes
# bagId = (class number - 1) * 60 + image number, so every bag's object follows from its id.
SIVAL_CLASSES = (
    "AjaxOrange", "Apple", "Banana", "BlueScrunge", "CandleWithHolder", "CardboardBox", "CheckeredScarf",
    "CokeCan", "DataMiningBook", "DirtyRunningShoe", "DirtyWorkGloves", "FabricSoftenerBox", "FeltFlowerRug",
    "GlazedWoodPot", "GoldMedal", "GreenTeaBox", "JuliesPot", "LargeSpoon", "RapBook", "SmileyFaceDoll",
    "SpriteCan", "StripedNotebook", "TranslucentBowl", "WD40Can", "WoodRollingPin",
)
SIVAL_IMAGES_PER_CLASS = 60

# Generated datasets: their parameters and the facts of what they generate (a test checks they agree).
SYNTHETIC = {"n_bags": 1000, "n_features": 10, "n_classes": 2, "seed": 0}
SYNTHETIC_N_INSTANCES = 4028
DIGITS = {"n_positive": 100, "n_negative": 100, "mean_bag_size": 10, "seed": 0}
DIGITS_N_INSTANCES = 1953

MANIFEST_KEYS = {entry.name: entry.manifest_key for entry in BENCHMARK_FILES}
