"""Put the repository root on sys.path so ``import components.preflight`` works from a
fresh clone without installing the package (there is no tests/__init__.py)."""

import sys
from pathlib import Path

_ROOT = Path(__file__).resolve().parents[3]
if str(_ROOT) not in sys.path:
    sys.path.insert(0, str(_ROOT))
