"""The package as pip and `cmake --install` install it (python/backend/attnlab_backend.py),
and load_run on a committed run, which keeps no checkpoint."""

import glob
import importlib.util
import os
import shutil
import subprocess
import sys
import tempfile
import unittest
import zipfile

import attnlab
import support

BACKEND = os.path.join(support.SOURCE_DIR, "python", "backend", "attnlab_backend.py")
COMMITTED = sorted(glob.glob(os.path.join(support.SOURCE_DIR, "results", "lm_claims", "runs", "*")))


def backend():
    spec = importlib.util.spec_from_file_location("attnlab_backend", BACKEND)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


class PackageTest(unittest.TestCase):
    def test_the_wheel_holds_every_module_and_the_variant_table(self):
        with tempfile.TemporaryDirectory() as d:
            name = backend().build_wheel(d)
            self.assertEqual(name, "attnlab-0.1.0-py3-none-any.whl")
            with zipfile.ZipFile(os.path.join(d, name)) as z:
                names = set(z.namelist())
                metadata = z.read("attnlab-0.1.0.dist-info/METADATA").decode()
        package = os.path.join(support.SOURCE_DIR, "python", "attnlab")
        for f in os.listdir(package):
            if f.endswith((".py", ".json")):
                self.assertIn(f"attnlab/{f}", names)
        self.assertIn("attnlab/variants.json", names)
        self.assertIn("Requires-Dist: numpy", metadata)
        self.assertIn('Requires-Dist: torch; extra == "torch"', metadata)

    def test_the_install_step_puts_it_where_python_imports_it(self):
        with tempfile.TemporaryDirectory() as home:
            env = dict(os.environ, HOME=home, PYTHONDONTWRITEBYTECODE="1")
            env.pop("PYTHONPATH", None)
            prefix = os.path.join(home, ".local")
            support.run([sys.executable, "-B", BACKEND, "install", prefix], env=env)
            code = "import attnlab, sys; print(attnlab.__file__); print(attnlab.load_run(sys.argv[1]).result['status'])"
            out = support.run([sys.executable, "-c", code, COMMITTED[0]], env=env, cwd=home).stdout.split()
            self.assertTrue(out[0].startswith(prefix + os.sep), out)
            self.assertEqual(out[1], "ok")

    def test_load_run_opens_a_committed_run_without_its_checkpoint(self):
        # git keeps no checkpoint: the run's committed files alone, as a clone has them
        with tempfile.TemporaryDirectory() as folder:
            for name in ("config.yaml", "result.yaml", "metrics.csv"):
                shutil.copy(os.path.join(COMMITTED[0], name), folder)
            run = attnlab.load_run(folder)
            self.assertIsInstance(run, attnlab.Run)
            self.assertEqual(run.config, attnlab.read_config(COMMITTED[0]))
            self.assertEqual(run.result["status"], "ok")
            self.assertFalse(run.has_checkpoint)
            metrics = run.metrics()
            last = metrics[metrics["split"] == "test"].iloc[-1]
            self.assertEqual(last["loss"], run.result["final_test"]["loss"])
            with self.assertRaises(FileNotFoundError):
                run.model()


if __name__ == "__main__":
    unittest.main()
