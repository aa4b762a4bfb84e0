"""rcts DeepSpeed adapter: runs rcts cases with DeepSpeed's activation checkpointing
(deepspeed.runtime.activation_checkpointing.checkpointing: its CheckpointFunction, its RNG
tracker, partitioned / CPU / contiguous checkpoints) on rcts's dense block in plain
PyTorch, the PyTorch adapter's block (rcts_pytorch.model, shared, not copied), and writes
format-1 dumps through the adapter kit. From a checkout the kit and the PyTorch adapter
are found beside this package."""
import os
import sys

_HERE = os.path.dirname(os.path.abspath(__file__))
for _name, _dir in (("rcts_adapter_kit", "kit"), ("rcts_pytorch", "pytorch")):
    try:
        __import__(_name)
    except ImportError:
        sys.path.insert(0, os.path.join(_HERE, "..", "..", _dir))
