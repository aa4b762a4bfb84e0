"""rcts PyTorch adapter: runs rcts cases with PyTorch's own checkpoint and offload
mechanisms and writes format-1 dumps (docs/dump-format.md) for `rcts check`.
The contract it implements: docs/adapter-contract.md. Built on the adapter kit
(adapters/kit); from a checkout the kit is found beside this package."""
import os
import sys

try:
    import rcts_adapter_kit  # noqa: F401  (installed, or on PYTHONPATH)
except ImportError:
    sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "kit"))
