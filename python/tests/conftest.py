"""pytest's set-up for the package's tests: every test here must run, so a
skipped test fails the session (pytest itself fails one that ran no test,
exit code 5). The package is imported from python/ (pyproject.toml's
pythonpath) unless installed; support.py from this folder."""

import sys

sys.dont_write_bytecode = True  # no __pycache__ in the source tree


def pytest_sessionfinish(session, exitstatus):
    reporter = session.config.pluginmanager.get_plugin("terminalreporter")
    skipped = len(reporter.stats.get("skipped", [])) if reporter else 0
    if skipped and exitstatus == 0:
        reporter.write_line(f"python tests: FAILED: {skipped} test(s) skipped; none may be", red=True)
        session.exitstatus = 1
