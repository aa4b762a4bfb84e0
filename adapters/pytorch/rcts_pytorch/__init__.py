"""rcts PyTorch adapter: runs rcts cases with PyTorch's own checkpoint and offload
mechanisms and writes format-1 dumps (docs/dump-format.md) for `rcts check`.
The contract it implements: docs/adapter-contract.md."""
