"""docs/python.md cannot go stale: its ```python blocks run, in order and in
one namespace (as a reader would type them), from a folder that holds
results/quickstart/ trained by the attnlab binary (support.tiny_results)."""

import contextlib
import io
import os
import re
import unittest

import support

DOC = os.path.join(support.SOURCE_DIR, "docs", "python.md")
BLOCK = re.compile(r"^```python\n(.*?)^```$", re.S | re.M)


def python_blocks(text: str) -> list[tuple[int, str]]:
    """(first line number, code) of each ```python block."""
    return [(text.count("\n", 0, m.start(1)) + 1, m.group(1)) for m in BLOCK.finditer(text)]


class DocsTest(unittest.TestCase):
    def test_blocks_are_found(self):
        # Guards the extraction itself: a regex that found nothing would pass the test below.
        blocks = python_blocks("text\n```python\nx = 1\n```\n```sh\nls\n```\n```python\ny = 2\n```\n")
        self.assertEqual(blocks, [(3, "x = 1\n"), (9, "y = 2\n")])

    def test_every_python_block_runs(self):
        with open(DOC) as f:
            blocks = python_blocks(f.read())
        self.assertGreaterEqual(len(blocks), 8)
        cwd = os.getcwd()
        os.chdir(support.tiny_results())
        try:
            namespace = {"__name__": "docs_python_md"}
            for line, code in blocks:
                with self.subTest(line=line), contextlib.redirect_stdout(io.StringIO()):
                    # Padded so that tracebacks give the line numbers of docs/python.md.
                    exec(compile("\n" * (line - 1) + code, DOC, "exec"), namespace)
        finally:
            os.chdir(cwd)


if __name__ == "__main__":
    unittest.main()
