"""Runs the package's tests (test_*.py beside this file) with unittest and
fails when any test fails, errors or is skipped, or when none ran: every test
here must run (python/tests/run.sh finds the interpreter).

    python3 python/tests/run.py [TEST...]   e.g. test_data, test_data.TaskDataTest
"""

import os
import sys
import unittest

HERE = os.path.dirname(os.path.abspath(__file__))
sys.dont_write_bytecode = True
sys.path.insert(0, HERE)  # support.py
sys.path.insert(0, os.path.join(HERE, ".."))  # the attnlab package


def main(names: list[str]) -> int:
    loader = unittest.TestLoader()
    suite = loader.loadTestsFromNames(names) if names else loader.discover(HERE, pattern="test_*.py")
    result = unittest.TextTestRunner(verbosity=2).run(suite)
    if result.skipped:
        print(f"python tests: FAILED: {len(result.skipped)} test(s) skipped; none may be", file=sys.stderr)
        return 1
    if result.testsRun == 0:
        print("python tests: FAILED: no test ran", file=sys.stderr)
        return 1
    return 0 if result.wasSuccessful() else 1


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
