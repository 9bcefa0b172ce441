# SPDX-License-Identifier: BSD-3-Clause
"""PyTorch's own distributed test suite on one backend: the CPU tests of what sharc supports.

Runs torch.testing._internal.distributed.distributed_test's DistributedTest._DistTestBase
the way PyTorch's test/distributed/test_distributed_spawn.py does (BACKEND, WORLD_SIZE and
TEMP_DIR with its barrier/ and test_dir/ folders set before the module is imported; each test
a TestDistBackend case whose ranks init_process_group on a file store), with the ranks forked
from this process rather than spawned (the same code, without an import of torch per rank and
test). Writes one line per test to --out:
"<name> <pass|skip|fail> <byname|-> <seconds>s <reason>".

    python dist_suite.py --backend sharc --world-size 2 --out results.txt [-k REGEX]
                         [--shard I/N]

Torch decides by the backend's name alone whether many tests run: decorators evaluated when
the module is imported (require_backend_is_available({"gloo"}), BACKEND != "gloo" and
DistTestCases' lists of which backend has which feature, e.g. DDP and subgroups), and a few
test bodies that take their CPU path when BACKEND == "gloo". For a third-party backend those
tests would be skipped (or take a GPU path) whatever the backend can do. This runner
therefore imports the suite as for gloo, so that a test runs on sharc exactly where it runs
on gloo, and then names the backend sharc for the test bodies (a name that also compares
equal to "gloo", for those CPU paths). Each test torch would have skipped for "sharc" by name
is marked "byname" in the output, with torch's reason; the tests' own skips (GPUs, world
sizes) are as for gloo.
"""

import argparse
import importlib.util
import os
import re
import shutil
import sys
import tempfile
import time
import unittest

ap = argparse.ArgumentParser()
ap.add_argument("--backend", required=True)
ap.add_argument("--world-size", type=int, default=2)
ap.add_argument("--out", required=True)
ap.add_argument("-k", "--select", default=None, help="a regex: run only the tests it finds")
ap.add_argument("--shard", default="0/1", help="I/N: run the I-th of N equal parts of the tests")
args = ap.parse_args()
SUITE = "torch.testing._internal.distributed.distributed_test"

# What distributed_test.py reads when it is imported, as PyTorch's run_test.py sets it.
temp_dir = tempfile.mkdtemp(prefix="sharc-dist-suite.")
os.makedirs(os.path.join(temp_dir, "barrier"))
os.makedirs(os.path.join(temp_dir, "test_dir"))
os.environ.update(BACKEND="gloo", WORLD_SIZE=str(args.world_size), TEMP_DIR=temp_dir)
os.environ.pop("INIT_METHOD", None)  # env:// where a test asks for it; the cases use files

import torch  # noqa: E402
import torch.multiprocessing  # noqa: E402

if args.backend == "sharc":
    import sharc.torch  # noqa: E402,F401  (registers the backend before the ranks fork)


def _name_skips(backend):
    """{test: torch's reason} of the tests the suite skips when imported for @backend."""
    os.environ["BACKEND"] = backend
    spec = importlib.util.find_spec(SUITE)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    base = mod.DistributedTest._DistTestBase
    return {n: getattr(getattr(base, n), "__unittest_skip_why__", "") for n in dir(base)
            if n.startswith("test_") and getattr(getattr(base, n), "__unittest_skip__", False)}


BY_NAME = {}
if args.backend != "gloo":
    BY_NAME = {n: why for n, why in _name_skips(args.backend).items()
               if n not in _name_skips("gloo")}
os.environ["BACKEND"] = "gloo"
suite = importlib.import_module(SUITE)
DistributedTest, TestDistBackend = suite.DistributedTest, suite.TestDistBackend


class _NamedAlsoGloo(str):
    """The backend's name for the test bodies: it is "sharc" to torch (init_process_group,
    new_group, dist.Backend), and equal to "gloo" too where a body picks its CPU path by
    BACKEND == "gloo" (the accumulate-gradients tests)."""

    def __eq__(self, other):
        return str.__eq__(self, other) or other == "gloo"

    def __ne__(self, other):
        return not self.__eq__(other)

    __hash__ = str.__hash__


if args.backend != "gloo":
    suite.BACKEND = _NamedAlsoGloo(args.backend)
    os.environ["BACKEND"] = args.backend  # (bodies compare it with "nccl" only)

torch.backends.cuda.matmul.allow_tf32 = False

# The tests of what sharc supports on CPU tensors (the ops' tests, their group and full-group
# variants, the object collectives, point-to-point, groups, DDP). Tests for CUDA, NCCL, other
# backends' features (monitored barrier, timeouts, sparse tensors, profilers) are not selected.
SELECT = re.compile(
    r"^test_(all_reduce|all_gather|broadcast|reduce|gather|scatter|all_to_all|barrier|"
    r"send_recv|isend|irecv|batch_isend_irecv|new_subgroups|destroy|get_rank_size|get_backend|"
    r"DistributedDataParallel|ddp_|average_parameters|periodic_model_averager|"
    r"accumulate_gradients|get_future|coalescing_manager|SyncBatchNorm|"
    r"DistributedSampler|static_graph|grads_same|undefined_grad|different_graph|"
    r"output_unused|verify_model|invalid_static|detect_ddp|post_localSGD)")
EXCLUDE = re.compile(r"(cuda|nccl|gpu|_half$|sparse|timeout|profil|execution_trace|"
                     r"compile|monitored|hpu|xpu)", re.IGNORECASE)


class TestDistBackendWithFork(TestDistBackend, DistributedTest._DistTestBase):
    def setUp(self):
        super().setUp()
        # _spawn_processes with fork: the ranks inherit this interpreter
        self._start_processes(torch.multiprocessing.get_context("fork").Process)


class _Recorder(unittest.TextTestResult):
    """Keeps each test's outcome for the report."""

    def __init__(self, *a, **k):
        super().__init__(*a, **k)
        self.outcomes = {}
        self.started = {}

    def startTest(self, test):
        self.started[test.id()] = time.time()
        super().startTest(test)

    def _put(self, test, outcome, reason=""):
        name = test.id().split(".")[-1]
        secs = time.time() - self.started.get(test.id(), time.time())
        reason = " ".join(str(reason).split())
        if len(reason) > 700:  # a rank's traceback: its start and the error at its end
            reason = reason[:200] + " [...] " + reason[-500:]
        self.outcomes[name] = (outcome, "%.1fs %s" % (secs, reason))

    def addSuccess(self, test):
        super().addSuccess(test)
        self._put(test, "pass")

    def addSkip(self, test, reason):
        super().addSkip(test, reason)
        self._put(test, "skip", reason)

    def addFailure(self, test, err):
        super().addFailure(test, err)
        self._put(test, "fail", err[1])

    def addError(self, test, err):
        super().addError(test, err)
        self._put(test, "fail", err[1])

    def addExpectedFailure(self, test, err):
        super().addExpectedFailure(test, err)
        self._put(test, "fail", "expected failure: %s" % err[1])

    def addUnexpectedSuccess(self, test):
        super().addUnexpectedSuccess(test)
        self._put(test, "pass")


def main():
    sel = re.compile(args.select) if args.select else None
    part, parts = (int(x) for x in args.shard.split("/"))
    names = sorted(n for n in unittest.TestLoader().getTestCaseNames(TestDistBackendWithFork)
                   if SELECT.search(n) and not EXCLUDE.search(n) and
                   (sel is None or sel.search(n)))[part::parts]
    suite = unittest.TestSuite(TestDistBackendWithFork(n) for n in names)
    TestDistBackendWithFork.setUpClass()
    runner = unittest.TextTestRunner(stream=sys.stderr, verbosity=2, resultclass=_Recorder)
    try:
        result = runner.run(suite)
    finally:
        TestDistBackendWithFork.tearDownClass()
        shutil.rmtree(temp_dir, ignore_errors=True)
    with open(args.out, "w") as f:
        for name in names:
            outcome, detail = result.outcomes.get(name, ("fail", "no result"))
            f.write("%s %s %s %s\n" % (name, outcome, "byname" if name in BY_NAME else "-",
                                        detail))
    counts = {o: sum(1 for v in result.outcomes.values() if v[0] == o)
              for o in ("pass", "skip", "fail")}
    print("%s at %d ranks%s: %d tests, %d passed, %d skipped, %d failed"
          % (args.backend, args.world_size,
             " (TORCH_DISTRIBUTED_DEBUG=%s)" % os.environ["TORCH_DISTRIBUTED_DEBUG"]
             if os.environ.get("TORCH_DISTRIBUTED_DEBUG") else "",
             len(names), counts["pass"], counts["skip"], counts["fail"]))


if __name__ == "__main__":
    main()
