"""pytest set-up of the benchmark suites (see `harness.py` for the shared helpers).

Run them with `--benchmark-enable -o testpaths=benches`; the project's normal test command
never collects this folder.
"""

from __future__ import annotations

import sys
from pathlib import Path

# The suites import `corpus`, `alternatives` and `harness` as top-level modules. pytest's
# default `prepend` import mode already puts this folder on sys.path; doing it here as well
# keeps them importable under `--import-mode=importlib`.
sys.path.insert(0, str(Path(__file__).parent))
