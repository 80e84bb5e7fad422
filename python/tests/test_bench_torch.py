"""The PyTorch side of `attnlab bench train` (reference/bench_torch.py) trains
the Reference model: its fused, speed-minded formulation gives the
Reference's loss and every gradient, in float64, for the variants it
rewrites (exp/softmax attention, SwiGLU, RoPE) and for those it hands to the
Reference's attention."""

import importlib.util
import os
import unittest

import torch

import support

SCRIPT = os.path.join(support.SOURCE_DIR, "reference", "bench_torch.py")
BOUND = 1e-9


def load_bench_torch():
    spec = importlib.util.spec_from_file_location("bench_torch", SCRIPT)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def config(position="rope", mlp="swiglu", numerator="exp", denominator="softmax", order=None, layers=2):
    att = {"numerator": numerator, "denominator": denominator, "eps": 1e-6}
    if order is not None:
        att["order"] = order
    return {"model": {"layers": layers, "d_model": 16, "heads": 2, "position": position, "mlp": mlp},
            "attention": att, "task": {"kind": "lookup", "vocab": 20, "seq_len": 10}}


class BenchTorchTest(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.bt = load_bench_torch()
        g = torch.Generator().manual_seed(5)
        cls.tokens = torch.randint(0, 20, (3, 10), generator=g)
        cls.targets = torch.full((3, 10), -1, dtype=torch.long)
        cls.targets[:, 5::2] = torch.randint(0, 20, (3, 3), generator=g)

    def check(self, cfg):
        worst = self.bt.check_against_reference(cfg, self.tokens, self.targets)
        self.assertLessEqual(worst, BOUND)

    def test_softmax_attention_swiglu_rope(self):
        self.check(config())

    def test_taylor_norm_with_gelu_and_learned_positions(self):
        self.check(config(position="learned", mlp="gelu", numerator="taylor", denominator="norm", order=4))

    def test_feature_kernel_without_mlp_or_positions(self):
        self.check(config(position="none", mlp="none", numerator="elu1", layers=1))

    def test_fusing_keeps_every_value(self):
        params = self.bt.init_params(config(), seed=0)
        back = self.bt.unfuse_params(config(), self.bt.fuse_params(params))
        self.assertEqual(sorted(back), sorted(params))
        for name, t in params.items():
            self.assertTrue(torch.equal(back[name], t), name)

    def test_a_wrong_scale_is_caught(self):
        # The check can fail: softmax attention with a scale 0.1 % off.
        model_cls = self.bt.FastModel
        init = model_cls.__init__

        def off_scale(self, *args, **kw):
            init(self, *args, **kw)
            self.scale *= 1.001

        model_cls.__init__ = off_scale
        try:
            worst = self.bt.check_against_reference(config(), self.tokens, self.targets)
        finally:
            model_cls.__init__ = init
        self.assertGreater(worst, 1e-5)


if __name__ == "__main__":
    unittest.main()
