"""The package checks the files it reads as attnlab does: a text run's corpus
against the size and sha256 its config records, and a safetensors file's
header (lengths, JSON, dtypes, shapes, offsets, the data section) before it
reads any tensor. Each bad file raises a ValueError naming the problem."""

import hashlib
import json
import os
import shutil
import struct
import unittest

import numpy as np

import attnlab
import support

TEXT_FIXTURE = os.path.join(support.SOURCE_DIR, "tests", "data", "text_fixture.txt")


def safetensors_bytes(header: dict, data: bytes) -> bytes:
    text = json.dumps(header).encode()
    return struct.pack("<Q", len(text)) + text + data


class CorpusTest(unittest.TestCase):
    def setUp(self):
        self.dir = support.temp_dir("attnlab_py_corpus_")
        self.path = os.path.join(self.dir, "corpus.txt")
        shutil.copy(TEXT_FIXTURE, self.path)
        with open(self.path, "rb") as f:
            raw = f.read()
        self.config = {"seed": 0, "task": {"kind": "text", "path": self.path, "seq_len": 16, "test_examples": 8,
                                           "size": len(raw), "sha256": hashlib.sha256(raw).hexdigest()}}

    def test_the_recorded_file_is_read(self):
        tokens, _ = attnlab.test_set(self.config)
        self.assertEqual(tokens.shape, (8, 16))

    def test_other_bytes_of_the_same_size_are_refused(self):
        with open(self.path, "r+b") as f:
            f.write(b"X")  # same size, other bytes
        with self.assertRaises(ValueError) as e:
            attnlab.test_set(self.config)
        message = str(e.exception)
        self.assertIn(self.path, message)
        self.assertIn(self.config["task"]["sha256"], message)  # both digests
        with open(self.path, "rb") as f:
            self.assertIn(hashlib.sha256(f.read()).hexdigest(), message)

    def test_another_size_is_refused_before_reading(self):
        with open(self.path, "ab") as f:
            f.write(b"more")
        with self.assertRaisesRegex(ValueError, "task.size says"):
            attnlab.test_set(self.config)


class SafetensorsTest(unittest.TestCase):
    def setUp(self):
        self.dir = support.temp_dir("attnlab_py_st_")

    def write(self, content: bytes) -> str:
        path = os.path.join(self.dir, "x.safetensors")
        with open(path, "wb") as f:
            f.write(content)
        return path

    def good(self):
        return {"__metadata__": {"format": "attnlab", "vocab": "3"},
                "a": {"dtype": "F32", "shape": [2, 3], "data_offsets": [0, 24]},
                "b": {"dtype": "F32", "shape": [2], "data_offsets": [24, 32]}}

    def test_a_good_file(self):
        data = np.arange(8, dtype="<f4").tobytes()
        path = self.write(safetensors_bytes(self.good(), data))
        t = attnlab.read_safetensors(path)
        np.testing.assert_array_equal(t["a"], np.arange(6, dtype=np.float32).reshape(2, 3))
        self.assertEqual(attnlab.checkpoint.read_safetensors_metadata(path)["vocab"], "3")

    def refused(self, header, data, needle):
        path = self.write(safetensors_bytes(header, data) if isinstance(header, dict) else header + data)
        with self.assertRaises(ValueError) as e:
            attnlab.read_safetensors(path)
        self.assertIn(path, str(e.exception))
        self.assertIn(needle, str(e.exception))

    def test_bad_headers_are_refused(self):
        data = bytes(32)
        h = self.good()
        h["a"]["shape"] = [-2, 3]
        self.refused(h, data, "non-negative integers")
        h = self.good()
        h["a"]["shape"] = [2, 4]
        self.refused(h, data, "span 24")
        h = self.good()
        h["b"]["data_offsets"] = [20, 28]
        self.refused(h, data, "overlap")
        h = self.good()
        h["b"]["data_offsets"] = [28, 36]
        self.refused(h, bytes(36), "leave a gap")
        self.refused(self.good(), bytes(40), "8 bytes after the last tensor")
        self.refused(self.good(), bytes(16), "data section truncated")
        h = self.good()
        h["a"]["dtype"] = "F31"
        self.refused(h, data, "dtype 'F31' unknown")
        h = self.good()
        h["a"]["data_offsets"] = [0.0, 24]
        self.refused(h, data, "only integers")
        text = b'{"a": {"dtype": "F32", "shape": [NaN], "data_offsets": [0, 4]}}'
        self.refused(struct.pack("<Q", len(text)) + text, bytes(4), "NaN")
        self.refused(struct.pack("<Q", 10**12), b"{}", "larger than the file")
        self.refused(b"\x01\x02", b"", "too short")

    def test_the_data_is_not_read_when_the_header_is_bad(self):
        # A file claiming a large data section is refused from its size, not read.
        h = {"a": {"dtype": "F32", "shape": [1 << 28], "data_offsets": [0, 1 << 30]}}
        self.refused(h, bytes(8), "data section truncated")


if __name__ == "__main__":
    unittest.main()
