"""The README's Python examples run as written (tests/readme/readme.sh runs
its shell and C examples): each ```python block, from the repository root
where its data/ paths lead, with the installed module."""
import contextlib
import io
import os
import re

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))


def test_readme_python_blocks(monkeypatch):
    text = open(os.path.join(ROOT, "README.md")).read()
    blocks = re.findall(r"^```python\n(.*?)^```$", text, re.S | re.M)
    assert blocks, "no ```python block in README.md"
    monkeypatch.chdir(ROOT)
    for code in blocks:
        out = io.StringIO()
        with contextlib.redirect_stdout(out):
            exec(compile(code, "README.md", "exec"), {"__name__": "readme"})
        printed = out.getvalue()
        # the sample pair is found, and the video's frames are listed
        assert printed.startswith("match "), printed
        assert re.search(r"^8 0\.2666\d* match$", printed, re.M), printed
