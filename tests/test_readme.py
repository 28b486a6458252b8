"""The README's example runs and prints what the README says it prints."""

from __future__ import annotations

import contextlib
import io
import re
import sys
import types
from pathlib import Path

README = Path(__file__).resolve().parents[1] / "README.md"


def test_readme_example_output_matches_its_comments() -> None:
    blocks = re.findall(r"```python\n(.*?)```", README.read_text(encoding="utf-8"), re.S)
    assert blocks, "the README has no Python example"
    for number, code in enumerate(blocks):
        _, _, tail = code.partition("# prints:\n")
        expected = [line[2:] for line in tail.splitlines() if line.startswith("# ")]
        assert expected, "an example must say what it prints after '# prints:'"
        # A real module, so that Pydantic can resolve the example's annotations.
        module = types.ModuleType(f"readme_example_{number}")
        sys.modules[module.__name__] = module
        out = io.StringIO()
        try:
            with contextlib.redirect_stdout(out):
                exec(compile(code, str(README), "exec"), module.__dict__)
        finally:
            del sys.modules[module.__name__]
        printed = [line for line in out.getvalue().splitlines() if line]
        assert printed[-len(expected) :] == expected
