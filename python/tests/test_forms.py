"""attnlab.layers' three forms of attention compute one function: for every
finite-state numerator of the variant table (variants.json, not a list of
our own), every denominator, with and without the gates, the chunked form
(chunk sizes that divide T, that do not, 1, and longer than T) and the
recurrent form equal the parallel form in float64, and so do their
gradients (the chunked form's recomputing its states and keeping them); the
chunked form passes torch.autograd.gradcheck for a few representative
variants, the parallel form's taylor series (its own backward) gradcheck
and gradgradcheck;
the variants without a finite state refuse the chunked and recurrent forms
with a ValueError that says so; and the PyTorch engine trains in the
chunked form (`python -m attnlab.train --form chunked`) what it trains in the
parallel form, to float64 rounding, the variants without a finite state in
the parallel form."""

import csv
import itertools
import json
import os
import sys
import unittest

import torch
import yaml

import support
from attnlab import layers, variants

B, H, T, HS = 2, 2, 13, 4
CHUNKS = (1, 3, 4, 5, 13, 16, 64)  # 3, 4, 5 do not divide 13; 13 is one chunk; 16 and 64 exceed T
ORDERS = (1, 2, 3)  # odd and even orders (the sign of the weights depends on the parity)
# float64: the forms sum the same terms in other orders (and taylor/power as s^m
# within a chunk, as feature products across chunks)
RTOL, ATOL = 1e-9, 1e-10


def finite_state_numerators():
    """(numerator, order) for every numerator of the table with a finite state."""
    out = []
    for num in variants.NUMERATORS:
        if not variants.finite_state(num):
            continue
        out += [(num, n) for n in ORDERS] if variants.takes_order(num) else [(num, None)]
    return out


def inputs(seed, dtype=torch.float64, b=B, h=H, t=T, hs=HS):
    g = torch.Generator().manual_seed(seed)
    q, k, v = (torch.randn(b, h, t, hs, generator=g, dtype=dtype) for _ in range(3))
    g_in, g_out = (torch.sigmoid(torch.randn(b, h, t, generator=g, dtype=dtype)) for _ in range(2))
    norm_w = 1.0 + 0.3 * torch.randn(hs, generator=g, dtype=dtype)
    norm_b = 0.3 * torch.randn(hs, generator=g, dtype=dtype)
    return q, k, v, g_in, g_out, norm_w, norm_b


class FormsTest(unittest.TestCase):
    def test_the_table_has_finite_state_variants_of_both_families(self):
        nums = {n for n, _ in finite_state_numerators()}
        self.assertTrue(nums & set(variants.SCORE_KERNELS) and nums & set(variants.FEATURE_KERNELS), nums)
        self.assertEqual(nums, {n for n in variants.NUMERATORS if variants.finite_state(n)})

    def test_chunked_and_recurrent_equal_parallel(self):
        q, k, v, g_in, g_out, norm_w, norm_b = inputs(0)
        count = 0
        for (num, order), den in itertools.product(finite_state_numerators(), variants.DENOMINATORS):
            gates = [(False, False), (True, False), (False, True), (True, True)]
            detach = [False, True] if variants.DENOMINATOR_ROWS[den]["detachable"] else [False]
            for (gi, go), det in itertools.product(gates, detach):
                att = layers.variant(num, den, order, in_gate=gi, out_gate=go, detach_denominator=det)
                kw = dict(g_in=g_in if gi else None, g_out=g_out if (go or den == "gate") else None,
                          out_norm_w=norm_w, out_norm_b=norm_b)
                want = layers.attention(q, k, v, att, form="parallel", **kw)
                self.assertTrue(torch.isfinite(want).all())
                forms = [("recurrent", 1)] + [("chunked", c) for c in CHUNKS]
                for form, chunk in forms:
                    with self.subTest(variant=variants.variant_label(num, den, order), in_gate=gi, out_gate=go,
                                      detach=det, form=form, chunk=chunk):
                        got = layers.attention(q, k, v, att, form=form, chunk=chunk, **kw)
                        torch.testing.assert_close(got, want, rtol=RTOL, atol=ATOL)
                        count += 1
        self.assertGreater(count, 0)

    def test_the_nonpositive_row_count_is_the_same_in_every_form(self):
        q, k, v, *_ = inputs(1)
        for num, order in finite_state_numerators():
            if variants.sign(num, order) == "non_negative" or variants.sign(num, order) == "positive":
                continue
            att = layers.variant(num, "softmax", order)
            counts = []
            for form, chunk in (("parallel", 64), ("chunked", 4), ("recurrent", 1)):
                stats = {}
                layers.attention(q, k, v, att, form=form, chunk=chunk, stats=stats)
                counts.append(stats.get("nonpositive_rows", 0))
            self.assertEqual(len(set(counts)), 1, (num, order, counts))

    def test_attention_module_forms_agree(self):
        # the whole layer: projections, short convolution, RoPE and both gates
        torch.manual_seed(3)
        att = layers.Attention(16, 2, "taylor", "softmax", order=2, in_gate=True, out_gate=True,
                               short_conv=3).double()
        x = torch.randn(2, 21, 16, dtype=torch.float64)
        want = att(x)
        for form, chunk in (("chunked", 8), ("chunked", 64), ("recurrent", 1)):
            att.chunk = chunk
            torch.testing.assert_close(att(x, form=form), want, rtol=RTOL, atol=ATOL)

    def test_chunked_gradients(self):
        for num, den, order in (("taylor", "softmax", 2), ("power", "norm", 2), ("elu1", "softmax", None)):
            att = layers.variant(num, den, order, in_gate=True, out_gate=True)
            q, k, v, g_in, g_out, *_ = inputs(2, b=1, h=2, t=7, hs=3)
            args = [x.clone().requires_grad_(True) for x in (q, k, v, g_in, g_out)]
            for chunk in (1, 3):
                with self.subTest(variant=variants.variant_label(num, den, order), chunk=chunk):
                    def f(q, k, v, g_in, g_out):
                        return layers.attention(q, k, v, att, g_in, g_out, form="chunked", chunk=chunk)

                    self.assertTrue(torch.autograd.gradcheck(f, args, eps=1e-6, atol=1e-6, rtol=1e-5))

    def test_parallel_taylor_gradients(self):
        # taylor's series has its own backward (it keeps s alone): first and second derivatives
        for order in (1, 2, 3):
            att = layers.variant("taylor", "softmax", order)
            q, k, v, *_ = inputs(3, b=1, h=1, t=5, hs=3)
            args = [x.clone().requires_grad_(True) for x in (q, k, v)]

            def f(q, k, v):
                return layers.attention(q, k, v, att)

            self.assertTrue(torch.autograd.gradcheck(f, args, eps=1e-6, atol=1e-6, rtol=1e-5), order)
            self.assertTrue(torch.autograd.gradgradcheck(f, args, eps=1e-6, atol=1e-6, rtol=1e-5), order)

    def test_chunked_gradients_equal_parallel_gradients(self):
        # every finite-state numerator with the softmax denominator (it has the weight sum z)
        for num, order in finite_state_numerators():
            att = layers.variant(num, "softmax", order)
            q, k, v, *_ = inputs(4)
            grads = []
            # the chunked form recomputing its states in the backward and keeping them
            for form, chunk, recompute in (("parallel", 64, None), ("chunked", 5, True), ("chunked", 5, False),
                                           ("recurrent", 1, None)):
                xs = [x.clone().requires_grad_(True) for x in (q, k, v)]
                layers.RECOMPUTE_STATES = recompute
                try:
                    o = layers.attention(*xs, att, form=form, chunk=chunk)
                    grads.append(torch.autograd.grad((o * torch.cos(o)).sum(), xs))
                finally:
                    layers.RECOMPUTE_STATES = None
            for got in grads[1:]:
                for a, b in zip(got, grads[0]):
                    torch.testing.assert_close(a, b, rtol=1e-8, atol=1e-9, msg=lambda m: f"{num} {order}: {m}")

    def test_variants_without_a_finite_state_refuse_the_other_forms(self):
        q, k, v, *_ = inputs(5)
        refused = [(num, None) for num in variants.NUMERATORS if not variants.finite_state(num)]
        refused += [(num, 5.0) for num in variants.SCORE_KERNELS if variants.finite_state(num)]  # clamped
        self.assertIn(("exp", None), refused)
        for (num, clamp), den in itertools.product(refused, variants.DENOMINATORS):
            att = layers.variant(num, den, 2 if variants.takes_order(num) else None, clamp=clamp)
            self.assertFalse(layers.has_finite_state(att))
            for form in ("chunked", "recurrent"):
                with self.subTest(numerator=num, clamp=clamp, denominator=den, form=form):
                    with self.assertRaisesRegex(ValueError, "no finite state.*parallel"):
                        layers.attention(q, k, v, att, form=form)

    def test_bad_form_and_chunk_are_refused(self):
        q, k, v, *_ = inputs(6)
        att = layers.variant("taylor", "norm", 2)
        with self.assertRaisesRegex(ValueError, "form"):
            layers.attention(q, k, v, att, form="blocked")
        with self.assertRaisesRegex(ValueError, "chunk"):
            layers.attention(q, k, v, att, form="chunked", chunk=0)


ENGINE_SPEC = """name: forms
base:
  seed: 0
  task: {kind: lookup, vocab: 24, seq_len: 20, pairs: 3, test_examples: 32, val_examples: 16}
  model: {layers: 2, d_model: 16, heads: 2, mlp: swiglu, position: rope}
  attention: {numerator: taylor, order: 2, denominator: norm}
  train: {steps: 12, batch: 8, lr: 3.0e-3, warmup: 2, eval_every: 6}
sweep:
  - {attention.numerator: [taylor], attention.order: [2], attention.denominator: [norm, softmax]}
  - {attention.numerator: [elu1, exp], attention.denominator: [softmax]}
"""


def engine(*args) -> str:
    env = dict(os.environ, ATTNLAB_BINARY=support.attnlab_binary(),
               PYTHONPATH=os.path.join(support.SOURCE_DIR, "python"))
    return support.run([sys.executable, "-m", "attnlab.train", *args, "--threads", "1"], env=env).stdout


class EngineFormTest(unittest.TestCase):
    def test_the_engine_trains_the_same_runs_in_the_chunked_form(self):
        work = support.temp_dir("attnlab_forms_")
        spec = os.path.join(work, "forms.yaml")
        with open(spec, "w") as f:
            f.write(ENGINE_SPEC)
        for form in ("parallel", "chunked"):
            engine(spec, "--out", os.path.join(work, form), "--form", form, "--chunk", "7", "--dtype", "float64")
        runs = sorted(os.listdir(os.path.join(work, "chunked", "forms", "runs")))
        self.assertEqual(len(runs), 4)
        for run in runs:
            folders = {form: os.path.join(work, form, "forms", "runs", run) for form in ("parallel", "chunked")}
            with open(os.path.join(folders["chunked"], "result.yaml")) as f:
                form = yaml.safe_load(f)["attention_form"]
            self.assertEqual(form, "quadratic" if "numerator=exp" in run else "chunked", run)
            rows = {}
            for name, folder in folders.items():
                with open(os.path.join(folder, "metrics.csv")) as f:
                    rows[name] = list(csv.DictReader(f))
            self.assertEqual(len(rows["chunked"]), len(rows["parallel"]))
            for a, b in zip(rows["chunked"], rows["parallel"]):
                for key in a:
                    if key.endswith("loss") and a[key]:
                        self.assertAlmostEqual(float(a[key]), float(b[key]), delta=1e-9, msg=f"{run} {key}")
        # --bench with --form chunked times exp/softmax (the spec's first run here) in the parallel form
        out = engine(support.QUICKSTART_SPEC, "--bench", "1", "--bench-batch", "2", "--form", "chunked")
        self.assertEqual(json.loads(out[out.index("{"):])["form"], "parallel")


if __name__ == "__main__":
    unittest.main()
