"""scripts/extrapolation_eval.py on the tiny quickstart models (trained on
32-token lookup windows with 4 pairs): scored at their trained length and at
48 tokens (the vocabulary of 64 must exceed the window), its rows agree with
`attnlab eval` run directly, the answers split at the trained length add up
to the test loss, and a run of another task is refused with exit code 2."""

import csv
import math
import os
import re
import subprocess
import sys
import tempfile
import unittest

import support

SCRIPT = os.path.join(support.SOURCE_DIR, "scripts", "extrapolation_eval.py")


def read_rows(path):
    with open(path, newline="", encoding="utf-8") as f:
        return list(csv.DictReader(f))


class ExtrapolationEvalTest(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.runs = os.path.join(support.tiny_results_dir(), "runs")
        cls.lookup = os.path.join(cls.runs, support.TINY_RUNS[0])

    def script(self, *args):
        return subprocess.run([sys.executable, SCRIPT, *args, "--attnlab", support.attnlab_binary()],
                              capture_output=True, text=True)

    def test_rows_match_eval_and_split_at_the_trained_length(self):
        with tempfile.TemporaryDirectory() as d:
            out = os.path.join(d, "x.csv")
            p = self.script(self.lookup, "--out", out, "--at", "48:4,48:8", "--positions-to", d)
            self.assertEqual(p.returncode, 0, p.stderr)
            rows = read_rows(out)
            self.assertEqual([(r["seq_len"], r["pairs"]) for r in rows], [("32", "4"), ("48", "4"), ("48", "8")])
            self.assertTrue(all(r["arm"] == "softmax" and r["trained_seq_len"] == "32" for r in rows))
            # At the trained length nothing lies beyond it; at 48 tokens queries do.
            self.assertEqual(rows[0]["answers_beyond"], "0")
            self.assertEqual(rows[0]["loss_beyond"], "")
            for r in rows[1:]:
                self.assertGreater(int(r["answers_beyond"]), 0)
                self.assertGreater(int(r["answers_within"]), 0)
            # The row at 48:8 is what eval prints when run by hand.
            direct = support.run([support.attnlab_binary(), "eval", self.lookup, "--threads", "1",
                                  "--set", "task.seq_len=48", "--set", "task.pairs=8"]).stdout
            m = re.search(r"test loss (\S+) token_acc (\S+)", direct)
            self.assertIsNotNone(m, direct)
            self.assertTrue(math.isclose(float(m.group(1)), float(rows[2]["test_loss"]), rel_tol=1e-9))
            self.assertTrue(math.isclose(float(m.group(2)), float(rows[2]["token_acc"]), rel_tol=1e-9))
            # Count-weighted, the two sides are the test loss.
            for r in rows[1:]:
                n_in, n_out = int(r["answers_within"]), int(r["answers_beyond"])
                mean = (n_in * float(r["loss_within"]) + n_out * float(r["loss_beyond"])) / (n_in + n_out)
                self.assertTrue(math.isclose(mean, float(r["test_loss"]), rel_tol=1e-4), (mean, r))
            positions = os.path.join(d, support.TINY_RUNS[0], "per_position_T48_P8.csv")
            self.assertEqual(len(read_rows(positions)), 48)

    def test_split_when_every_answer_lies_beyond(self):
        # As at T 1024 with 256 pairs after training at 256: the pairs fill
        # the first 512 positions, so no answer lies within the trained length.
        sys.path.insert(0, os.path.dirname(SCRIPT))
        try:
            import extrapolation_eval as ex
        finally:
            sys.path.pop(0)
        with tempfile.TemporaryDirectory() as d:
            path = os.path.join(d, "p.csv")
            with open(path, "w", encoding="utf-8") as f:
                f.write("position,loss,bits_per_byte,count,trained,evaluated,precision\n")
                f.write("0,,,0,exp/softmax,exp/softmax,float\n")
                f.write("5,2.0,,3,exp/softmax,exp/softmax,float\n")
                f.write("6,4.0,,1,exp/softmax,exp/softmax,float\n")
            n_in, loss_in, n_out, loss_out = ex.split_by_position(path, 4)
            self.assertEqual((n_in, n_out), (0, 4))
            self.assertTrue(math.isnan(loss_in))
            self.assertAlmostEqual(loss_out, 2.5)
            n_in, loss_in, n_out, loss_out = ex.split_by_position(path, 6)
            self.assertEqual((n_in, loss_in, n_out, loss_out), (3, 2.0, 1, 4.0))

    def test_a_copy_run_is_refused(self):
        with tempfile.TemporaryDirectory() as d:
            copy_run = os.path.join(self.runs, support.TINY_RUNS[2])
            p = self.script(copy_run, "--out", os.path.join(d, "x.csv"), "--positions-to", d)
            self.assertEqual(p.returncode, 2)
            self.assertIn("task.kind is 'copy', not lookup", p.stderr)
            self.assertFalse(os.path.exists(os.path.join(d, "x.csv")))

    def test_a_bad_setting_is_refused(self):
        with tempfile.TemporaryDirectory() as d:
            p = self.script(self.lookup, "--out", os.path.join(d, "x.csv"), "--at", "64x4")
            self.assertEqual(p.returncode, 2)
            self.assertIn("'64x4' is not SEQ_LEN:PAIRS", p.stderr)


if __name__ == "__main__":
    unittest.main()
