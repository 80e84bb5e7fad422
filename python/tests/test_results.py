"""The pandas readers on a results folder written by `attnlab run`:
summary.csv, a run's metrics.csv and the learning curves of every run
(from runs/*/metrics.csv, or from curves.csv when present), with their
columns and dtypes: integer columns stay int64, metrics are float64, empty
cells are NaN, text stays text."""

import csv
import os
import shutil
import unittest

import numpy as np
import pandas as pd

import attnlab
import support

METRICS_COLUMNS = ["step", "split", "loss", "token_acc", "seq_acc", "lr", "grad_norm", "tokens_per_s", "elapsed_s"]


def csv_rows(path: str) -> list[list[str]]:
    with open(path, newline="") as f:
        return list(csv.reader(f))


class ResultsTest(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.results = support.tiny_results_dir()

    def test_summary_columns_and_dtypes(self):
        s = attnlab.read_summary(self.results)
        rows = csv_rows(os.path.join(self.results, "summary.csv"))
        self.assertEqual(list(s.columns), rows[0])
        self.assertEqual(len(s), len(rows) - 1)
        self.assertEqual(list(s["run_id"]), support.TINY_RUNS)
        for col in ("seed", "best_step", "steps", "params", "nonpositive_denominator_steps"):
            self.assertEqual(s[col].dtype, np.int64, col)
        for col in ("final_test_loss", "final_test_token_acc", "final_test_seq_acc", "best_test_loss", "wall_s"):
            self.assertEqual(s[col].dtype, np.float64, col)
        for col in ("run_id", "status", "task.kind", "reason"):
            self.assertEqual(s[col].dtype, object, col)
        self.assertEqual(list(s["seed"]), [0, 1, 0, 1])
        self.assertEqual(list(s["steps"]), [40] * 4)
        self.assertEqual(list(s["status"]), ["ok"] * 4)

    def test_summary_empty_cells_are_nan(self):
        s = attnlab.read_summary(self.results)
        # The lookup grid does not sweep task.vocab; the copy grid sets it to 16.
        self.assertEqual(s["task.vocab"].dtype, np.float64)
        self.assertTrue(s["task.vocab"][:2].isna().all())
        self.assertEqual(list(s["task.vocab"][2:]), [16.0, 16.0])
        # `reason` is empty for every run here: NaN, in a text column.
        self.assertTrue(s["reason"].isna().all())
        # task.kind is set in both grids: no NaN
        self.assertEqual(list(s["task.kind"]), ["lookup", "lookup", "copy", "copy"])

    def test_metrics_of_one_run(self):
        run_dir = os.path.join(self.results, "runs", support.TINY_RUNS[0])
        m = attnlab.read_metrics(run_dir)
        self.assertEqual(list(m.columns), METRICS_COLUMNS)
        self.assertEqual(m["step"].dtype, np.int64)
        self.assertEqual(m["split"].dtype, object)
        for col in METRICS_COLUMNS[2:]:
            self.assertEqual(m[col].dtype, np.float64, col)
        rows = csv_rows(os.path.join(run_dir, "metrics.csv"))[1:]
        self.assertEqual(list(m["step"]), [int(r[0]) for r in rows])
        self.assertEqual(list(m["loss"]), [float(r[2]) for r in rows])
        self.assertEqual(list(m[m["split"] == "test"]["step"]), [0, 20, 40])

    def test_curves_from_the_runs(self):
        c = attnlab.read_curves(self.results)
        self.assertEqual(list(c.columns), ["run_id"] + METRICS_COLUMNS)
        self.assertEqual(c["step"].dtype, np.int64)
        self.assertEqual(c["loss"].dtype, np.float64)
        order = list(attnlab.read_summary(self.results)["run_id"])
        self.assertEqual(list(dict.fromkeys(c["run_id"])), order)  # summary's order
        for run_id in order:
            part = c[c["run_id"] == run_id].drop(columns="run_id").reset_index(drop=True)
            pd.testing.assert_frame_equal(part, attnlab.read_metrics(os.path.join(self.results, "runs", run_id)))

    def test_curves_csv_is_read_when_present(self):
        # A copy of the folder with a curves.csv written as attnlab will write
        # it: every metrics.csv row with run_id in front, run ids quoted.
        d = os.path.join(support.temp_dir("attnlab_py_curves_"), "quickstart")
        shutil.copytree(self.results, d)
        with open(os.path.join(d, "curves.csv"), "w", newline="") as f:
            w = csv.writer(f, lineterminator="\n")
            w.writerow(["run_id"] + METRICS_COLUMNS)
            for run_id in attnlab.run_ids(d):
                for row in csv_rows(os.path.join(d, "runs", run_id, "metrics.csv"))[1:]:
                    w.writerow([run_id] + row)
        from_csv = attnlab.read_curves(d)
        pd.testing.assert_frame_equal(from_csv, attnlab.curves_from_runs(d))
        # It is that file that was read: drop a row and see it gone.
        with open(os.path.join(d, "curves.csv")) as f:
            lines = f.readlines()
        with open(os.path.join(d, "curves.csv"), "w") as f:
            f.writelines(lines[:-1])
        self.assertEqual(len(attnlab.read_curves(d)), len(from_csv) - 1)

    def test_special_cells(self):
        # nan, inf, empty cells and words pandas would take for missing values.
        d = support.temp_dir("attnlab_py_cells_")
        with open(os.path.join(d, "summary.csv"), "w") as f:
            f.write("run_id,status,attention.denominator,attention.order,seed,final_test_loss,best_step,reason\n"
                    '"attention.denominator=none,seed=0",diverged,none,,0,nan,0,loss not finite at step 3\n'
                    '"attention.denominator=NA,seed=1",ok,NA,2,1,inf,20,\n')
        s = attnlab.read_summary(d)
        self.assertEqual(list(s["attention.denominator"]), ["none", "NA"])
        self.assertEqual(s["attention.order"].dtype, np.float64)
        self.assertTrue(np.isnan(s["attention.order"][0]))
        self.assertEqual(s["attention.order"][1], 2.0)
        self.assertTrue(np.isnan(s["final_test_loss"][0]))
        self.assertEqual(s["final_test_loss"][1], np.inf)
        self.assertEqual(s["seed"].dtype, np.int64)
        self.assertEqual(s["best_step"].dtype, np.int64)
        self.assertEqual(s["reason"][0], "loss not finite at step 3")
        self.assertTrue(pd.isna(s["reason"][1]))

    def test_a_folder_without_runs_is_an_error(self):
        with self.assertRaises(FileNotFoundError):
            attnlab.read_curves(support.temp_dir("attnlab_py_empty_"))


if __name__ == "__main__":
    unittest.main()
