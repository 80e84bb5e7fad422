"""attnlab.variants against the binary: variants.json is `attnlab variants
--json` as it stands, the labels Python writes (scripts/sweep_runs.py's
figures) are the ones attnlab's outputs write, and the PyTorch model knows
every variant of the table."""

import json
import os
import sys
import unittest

import attnlab.variants as variants
import support

sys.path.insert(0, os.path.join(support.SOURCE_DIR, "scripts"))


class VariantsTest(unittest.TestCase):
    def test_the_json_is_the_binarys_export(self):
        out = support.run([support.attnlab_binary(), "variants", "--json"]).stdout
        self.assertEqual(json.loads(out), variants.TABLE,
                         "python/attnlab/variants.json is stale: build/app/attnlab variants --json > "
                         "python/attnlab/variants.json")

    def test_labels_are_attnlabs(self):
        for name, row in variants.NUMERATOR_ROWS.items():
            self.assertEqual(variants.numerator_label(name, 2), row["label_at_order_2"])
        self.assertEqual(variants.variant_label("exp", "softmax", clamp="5"),
                         variants.TABLE["label_of_exp_clamp_5_softmax"])

    def test_the_figures_name_a_run_with_that_label(self):
        import sweep_runs

        class Run(dict):
            get = dict.get

        for name in variants.NUMERATORS:
            run = Run({"attention.numerator": name, "attention.order": "3"})
            self.assertEqual(sweep_runs.variant_name(run), variants.numerator_label(name, 3))
        # runs of two orders of power are two variants, not one
        self.assertNotEqual(sweep_runs.variant_name(Run({"attention.numerator": "power", "attention.order": "2"})),
                            sweep_runs.variant_name(Run({"attention.numerator": "power", "attention.order": "4"})))

    def test_the_model_knows_every_variant(self):
        import torch

        from attnlab import model

        q, k, v = (torch.randn(1, 1, 4, 2, dtype=torch.float64) for _ in range(3))
        for num in variants.NUMERATORS:
            for den in variants.DENOMINATORS:
                att = {"numerator": num, "denominator": den, "order": 2}
                w = torch.ones(2, dtype=torch.float64)
                o = model.attention(q, k, v, att, out_norm_w=w, out_norm_b=0 * w)
                self.assertEqual(tuple(o.shape), (1, 1, 4, 2), f"{num}/{den}")


if __name__ == "__main__":
    unittest.main()
