"""DeepSpeed's seeds per TP rank against design §5, through the adapter's own seeding
(rcts_deepspeed.mechanisms.seed: DeepSpeed's model_parallel_cuda_manual_seed with the
adapter's mpu), at W gloo ranks in W processes:

  default generator (the CPU accelerator's device generator)  = seed
  DeepSpeed tracker 'model-parallel-rng'                      = seed + 2718 + tp_rank

The expected states are torch generators seeded with design §5's numbers (written here
from the design, not read from DeepSpeed). The dumps' opaque RNG states cannot show
seeds (`rcts check` compares them with the baseline's only), hence this test.

  python seeds.py W SEED     exit 0: every rank as §5 says; 1: a rank differs (named)

Then, in the same processes, the adapter's fault tp_seed_without_rank (the mpu tells the
seeding TP rank 0) must be caught: exit 1 also when it is not (one test, one start of
the W processes, for both).
"""
import os
import socket
import sys

import torch
import torch.multiprocessing as mp

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "..", "..", "adapters", "deepspeed"))
MP_OFFSET = 2718  # design §5: model-parallel-rng = seed + 2718 + tp_rank


def state_of(seed):
    return torch.Generator().manual_seed(seed).get_state()


def rank_main(rank, world, port, seed, results):
    os.environ.update(DS_ACCELERATOR="cpu", RANK=str(rank), LOCAL_RANK=str(rank), WORLD_SIZE=str(world),
                      MASTER_ADDR="127.0.0.1", MASTER_PORT=str(port))
    import rcts_deepspeed  # noqa: F401  (the kit and rcts_pytorch on sys.path)
    from rcts_deepspeed.__main__ import init_distributed
    from rcts_deepspeed.tp import Mpu
    from deepspeed.runtime.activation_checkpointing import checkpointing

    init_distributed()
    mpu = Mpu(torch.distributed.group.WORLD)
    checkpointing.configure(mpu)
    results[rank] = (judge(rank, world, seed, mpu), with_fault(lambda: judge(rank, world, seed, mpu)))
    torch.distributed.destroy_process_group()


def with_fault(fn):
    os.environ["RCTS_DEEPSPEED_FAULT"] = "tp_seed_without_rank"
    try:
        return fn()
    finally:
        del os.environ["RCTS_DEEPSPEED_FAULT"]


def judge(rank, world, seed, mpu):
    """What differs from design §5 on this rank after the adapter's seeding."""
    from deepspeed.runtime.activation_checkpointing import checkpointing
    from rcts_deepspeed.mechanisms import seed as ds_seed

    ds_seed(mpu)(seed)
    bad = []
    if not torch.equal(torch.get_rng_state(), state_of(seed)):
        bad.append(f"rank {rank}: the default generator is not seeded with {seed}")
    states = checkpointing.get_cuda_rng_tracker().get_states()
    want = seed + MP_OFFSET + rank
    if "model-parallel-rng" not in states:
        bad.append(f"rank {rank}: DeepSpeed's tracker has no model-parallel-rng stream ({sorted(states)})")
    elif not torch.equal(states["model-parallel-rng"], state_of(want)):
        who = [s for s in range(seed + MP_OFFSET, seed + MP_OFFSET + world)
               if torch.equal(states["model-parallel-rng"], state_of(s))]
        bad.append(f"rank {rank}: model-parallel-rng is not seeded with {want} = {seed} + {MP_OFFSET} + tp_rank {rank}"
                   + (f" (it is seeded with {who[0]})" if who else ""))
    return bad


def main():
    world, seed = int(sys.argv[1]), int(sys.argv[2])
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    results = mp.Manager().dict()
    mp.spawn(rank_main, args=(world, port, seed, results), nprocs=world)
    bad = [line for r in range(world) for line in results[r][0]]
    caught = [line for r in range(world) for line in results[r][1]]
    for line in bad:
        print(f"FAIL {line}")
    print(f"seeds at {world} ranks: " + ("not as design §5 says" if bad else "as design §5 says on every rank"))
    for line in caught:
        print(f"fault tp_seed_without_rank: {line}")
    print("fault tp_seed_without_rank: " + ("caught" if caught else "NOT caught (every rank as design §5 says)"))
    return 1 if bad or not caught else 0


if __name__ == "__main__":
    sys.exit(main())
