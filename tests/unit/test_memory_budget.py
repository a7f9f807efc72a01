"""The memory rule of a run: what a fit on every bag is estimated to need, and the default budget."""

import ast
from pathlib import Path

import numpy as np
import scipy.sparse as sp

from automil import Bags, LearnerSpec
from automil.streamed_bags import BLOCK_BYTES
from automil.tune.schedule.memory import PROCESS_BYTES, default_memory, fit_bytes, machine_memory, over_budget


def spec(factor: float) -> LearnerSpec:
    return LearnerSpec(name=f"x{factor:g}", estimator=object, search_space=dict, memory_factor=factor)


def test_a_fit_needs_its_standardized_instances_its_working_set_and_a_worker():
    bags = Bags(np.ones((1_000, 256), np.float32), [0, 400, 1_000], [0, 1])  # 1,024,000 bytes
    assert fit_bytes(spec(2.0), bags) == 3 * 1_024_000 + PROCESS_BYTES
    assert over_budget(spec(2.0), bags, 3 * 1_024_000 + PROCESS_BYTES) is None
    reason = over_budget(spec(2.0), bags, 3 * 1_024_000 + PROCESS_BYTES - 1)
    assert reason.startswith("a fit on every bag needs about 422.5 MB (3 x the 1.0 MB of instances")
    assert Bags(bags.X.astype(np.float64), bags.offsets, bags.y).X.nbytes == 2 * bags.X.nbytes
    assert fit_bytes(spec(2.0), Bags(bags.X.astype(np.float64), bags.offsets, bags.y)) == (
        3 * 2_048_000 + PROCESS_BYTES)


class _Streaming:
    accepts_streamed = True


def test_a_learner_that_streams_holds_a_block_of_bags_not_its_instances():
    X = np.ones((200_000, 64), np.float32)  # 51.2 MB
    bags = Bags(X, np.linspace(0, 200_000, 101).astype(int), np.arange(100) % 2)  # bags of 2,000 rows
    streaming = LearnerSpec(name="s", estimator=_Streaming, search_space=dict, memory_factor=2.0)
    block = max(BLOCK_BYTES, 8 * 2_000 * 64)
    assert fit_bytes(streaming, bags) == 3 * block + 4 * 8 * 100 * 64 + PROCESS_BYTES
    assert fit_bytes(streaming, bags) < fit_bytes(spec(2.0), bags)
    # a budget that refuses the learner that gathers its fold admits the one that streams it
    budget = fit_bytes(spec(2.0), bags) - 1
    assert over_budget(spec(2.0), bags, budget) is not None and over_budget(streaming, bags, budget) is None
    giant = Bags(np.ones((40_000, 64), np.float32), [0, 40_000], [0])  # one bag larger than a block
    assert fit_bytes(streaming, giant) == 3 * 8 * 40_000 * 64 + 4 * 8 * 64 + PROCESS_BYTES


def test_a_learner_whose_memory_grows_with_the_square_of_a_bag_counts_the_pairs_of_its_largest_bag():
    sizes = [10_000, 500, 500]  # a slide of 10,000 patches beside two small ones, 64 float32 features
    bags = Bags(np.ones((sum(sizes), 64), np.float32), np.concatenate(([0], np.cumsum(sizes))), [0, 1, 0])
    attention = LearnerSpec(name="a", estimator=object, search_space=dict, memory_factor=2.0, pair_bytes=40.0)
    assert fit_bytes(attention, bags) == fit_bytes(spec(2.0), bags) + 40 * 10_000 ** 2
    # the linear estimate admits it; its 4 GB of pairs do not
    reason = over_budget(attention, bags, fit_bytes(spec(2.0), bags))
    assert "4.0 GB for the pairs of instances of its largest bag" in reason


def test_sparse_instances_count_their_stored_values_and_indices():
    X = sp.random(1_000, 50, density=0.1, random_state=0, format="csr")
    bags = Bags(X, [0, 500, 1_000], [0, 1])
    stored = bags.X.data.nbytes + bags.X.indices.nbytes + bags.X.indptr.nbytes
    assert fit_bytes(spec(1.0), bags) == 2 * stored + PROCESS_BYTES


def test_the_default_budget_is_the_machines_memory_less_a_margin_of_at_least_a_gibibyte():
    total = machine_memory()
    assert 0 < default_memory() <= total - 2**30
    assert default_memory() >= min(0.9 * total, total - 2**30) - 1  # no more margin than that


def test_every_built_in_learner_declares_its_measured_memory_factor():
    # LearnerSpec's 2.0 is a guess for a third-party learner; a built-in one states what
    # experiments/memory_factors.py measured, so a new learner is not registered on the guess.
    from automil import plugins as manager

    plugins = Path(__file__).resolve().parents[2] / "plugins"
    specs = [(init.parent.name, call) for init in sorted(plugins.glob("automil_*/__init__.py"))
             for call in ast.walk(ast.parse(init.read_text()))
             if isinstance(call, ast.Call) and ast.unparse(call.func) == "automil.LearnerSpec"]
    built_in = [s for s in manager.registry("learners").learners.values() if s.plugin in manager.BUILTIN_PLUGINS]
    assert len(specs) == len(built_in), "every built-in learner's spec is one automil.LearnerSpec(...) call read here"
    undeclared = [f"{plugin} line {call.lineno}" for plugin, call in specs
                  if not any(keyword.arg == "memory_factor" for keyword in call.keywords)]
    assert not undeclared, f"LearnerSpec without a measured memory_factor: {undeclared}"
