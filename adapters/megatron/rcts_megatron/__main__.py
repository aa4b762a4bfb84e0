"""rcts Megatron-LM adapter: run a case's baseline, variants and reruns with megatron-core's
own TransformerBlock (local spec), recompute and RNG tracker on the CPU, and write
format-1 dumps that `rcts check` judges.

  python -m rcts_megatron CASE.json --rcts-dump ROOT --out OUT [--world-size W]

ROOT is what `rcts run CASE.json --dump ROOT` (under `mpirun -n W` for W ranks) wrote;
rank r reads ROOT/<case>/cpu/rank<r>/<run>/ (parameters before step 0, inputs, targets,
each run's resolved config and rank coordinates) and writes
OUT/<case>/megatron-cpu/rank<r>/<run>/. With W > 1 the adapter launches W processes with
torchrun (torch.distributed, gloo). A case it cannot express prints "skip: <reason>",
writes OUT/<case>/SKIPPED and exits 0. When megatron-core raises (or recurses without
end, or runs away with memory) it prints "raised: <run>: <error> at <megatron file:line>",
writes OUT/<case>/ERRORED with that message (no runs: a partial dump is no result) and
exits 1: a finding, which `rcts check --expect` reports as an error that only an
"error" entry naming the message expects, never as a skip. Exit 2: bad input.
"""
import argparse
import os
import socket
import subprocess
import sys
import tempfile

from . import cuda_shim

cuda_shim.install()  # before anything imports megatron.core

import torch  # noqa: E402

from rcts_adapter_kit import dump as kit  # noqa: E402
from rcts_adapter_kit.case import Case  # noqa: E402
from rcts_adapter_kit.case import rcts_runs as kit_rcts_runs  # noqa: E402
from rcts_adapter_kit.errors import AdapterError  # noqa: E402

from . import dumps, faults, watchdog  # noqa: E402
from .config import unsupported  # noqa: E402


def rcts_runs(root, case_id, world_rank):
    """Every run rcts dumped at this rank, read strictly by the kit (a missing or mistyped
    field is a DumpError naming the file and JSON path)."""
    return kit_rcts_runs(root, case_id, "cpu", world_rank)


def implementation():
    import megatron.core

    from . import te_stub
    fault = faults.current()
    return (f"megatron-core {megatron.core.__version__} ({os.path.dirname(megatron.core.__file__)}) @ torch "
            f"{torch.__version__}, {cuda_shim.description()}; {te_stub.description(te_stub.install())}"
            + (f"; FAULT INJECTED: {fault}" if fault else ""))


def init_distributed(world_size):
    if world_size == 1 and "RANK" not in os.environ:
        store = torch.distributed.FileStore(tempfile.mktemp(prefix="rcts-megatron-store."), 1)
        torch.distributed.init_process_group("gloo", store=store, rank=0, world_size=1)
    else:
        torch.distributed.init_process_group("gloo")
    return torch.distributed.get_rank()


def worker(a, case, on_raise=None):
    """One rank: every run of the case. on_raise(message), when given, reports a runaway the
    watchdog found (the in-process single-rank path writes the case's ERRORED marker);
    ranks started by torch.distributed.run print it as a "raised:" line for the launcher."""
    case_id = case["id"]
    current = {"run": "?"}

    def tripped(msg):
        msg = f"run '{current['run']}': {msg}"
        print(f"raised: {msg}", file=sys.stderr, flush=True)
        return on_raise(msg) if on_raise else None

    watchdog.start(tripped)
    world = int(os.environ.get("WORLD_SIZE", "1"))
    rank = init_distributed(world)
    runs = rcts_runs(a.rcts_dump, case_id, rank)
    base = kit.BaselineDump(runs["baseline"][0])
    p = base.config["parallel"]
    from megatron.core import parallel_state
    parallel_state.initialize_model_parallel(
        tensor_model_parallel_size=p["tensor_model_parallel_size"],
        pipeline_model_parallel_size=p["pipeline_model_parallel_size"],
        expert_model_parallel_size=p["expert_model_parallel_size"],
        expert_tensor_parallel_size=p["expert_tensor_parallel_size"], create_gloo_process_groups=False)
    from . import driver
    impl = implementation()
    for name, (d, theirs) in runs.items():
        cfg = theirs["config"]
        if cfg["parallel"] != p:
            raise kit.DumpError(f"{d}: run '{name}' has other parallel settings than the baseline")
        current["run"] = name
        try:
            out = driver.run(cfg, theirs["rank"], base.params, base.inputs, base.targets)
        except (Exception, KeyboardInterrupt) as e:  # Megatron's own code raised: say where, in Megatron
            import traceback
            frames = [f for f in traceback.extract_tb(e.__traceback__) if "megatron" in f.filename]
            where = f" at {frames[-1].filename.split('megatron/', 1)[-1]}:{frames[-1].lineno}" if frames else ""
            what = (f"resident memory passed {watchdog.tripped['mb']} MB (the adapter's cap) while running"
                    if watchdog.tripped["mb"] else f"{type(e).__name__}: {e}")
            msg = f"run '{name}': {what}{where}"
            print(f"raised: {msg}", file=sys.stderr, flush=True)
            torch.distributed.destroy_process_group()
            return 1, msg
        meta = {"case_id": case_id, "case_file": a.case, "run": name, "role": theirs["run"]["role"],
                "of_variant": theirs["run"].get("of_variant", ""), "rank": theirs["rank"]}
        dumps.write_run(a.out, meta, cfg, out, impl)
    torch.distributed.destroy_process_group()
    return 0, None


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def main(argv=None):
    ap = argparse.ArgumentParser(prog="rcts_megatron", description=__doc__.splitlines()[0])
    ap.add_argument("case")
    ap.add_argument("--rcts-dump", required=True)
    ap.add_argument("--out", required=True)
    ap.add_argument("--world-size", type=int, default=1)
    ap.add_argument("--worker", action="store_true", help=argparse.SUPPRESS)
    a = ap.parse_args(argv)
    try:
        parsed = Case(a.case)  # strict: exit 2 naming the file, JSON path and value
        kit.out_dir(a.out)
    except AdapterError as e:
        print(f"error: {e}", file=sys.stderr)
        return 2
    case, case_id = parsed.json, parsed.id
    if a.worker:
        return worker(a, case)[0]
    out_case = os.path.join(a.out, kit.safe_stem(case_id))

    def skip(why):
        kit.mark_case(a.out, case_id, kit.SKIPPED, why)
        print(f"skip: {case_id}: {why}")
        return 0

    def raised(msg):
        kit.mark_case(a.out, case_id, kit.ERRORED, f"megatron-core raised: {msg}")
        print(f"raised: {case_id}: megatron-core raised: {msg}", file=sys.stderr, flush=True)
        return 1

    if "config_error" in parsed.expect:
        return skip("a config_error case runs nothing (rcts judges the config itself)")
    if a.world_size not in parsed.ranks:
        return skip(f"the case runs at world sizes {parsed.ranks}, not {a.world_size}")
    try:
        runs = rcts_runs(a.rcts_dump, case_id, 0)
        for name, (d, m) in runs.items():
            why = unsupported(m["config"], a.world_size)
            if why:
                return skip(why)
    except AdapterError as e:  # DumpError among them
        print(f"error: {e}", file=sys.stderr)
        return 2
    if a.world_size == 1:  # in this process: one import of torch and megatron-core, not two
        try:
            rc, msg = worker(a, case, on_raise=raised)
        except AdapterError as e:  # DumpError among them
            print(f"error: {e}", file=sys.stderr)
            return 2
        if msg:
            return raised(msg)
        print(f"wrote: {case_id}: {len(runs)} runs x 1 rank")
        return rc
    args = [a.case, "--rcts-dump", a.rcts_dump, "--out", a.out, "--worker"]
    cmd = [sys.executable, "-m", "torch.distributed.run", "--nproc-per-node", str(a.world_size),
           "--master-addr", "127.0.0.1", "--master-port", str(free_port()), "-m", "rcts_megatron"] + args
    env = dict(os.environ, OMP_NUM_THREADS="1", PYTHONWARNINGS="ignore")
    r = subprocess.run(cmd, env=env, capture_output=True, text=True)
    os.makedirs(out_case, exist_ok=True)
    with open(os.path.join(out_case, "ranks.log"), "w") as f:  # every rank's output, for a post-mortem
        f.write(r.stdout + r.stderr)
    said = [l.split("raised: ", 1)[1] for l in (r.stdout + r.stderr).splitlines() if "raised: " in l]
    if r.returncode != 0 and said:
        log = r.stdout + r.stderr
        rc = raised(said[0])
        with open(os.path.join(out_case, "ranks.log"), "w") as f:
            f.write(log)
        return rc
    if r.returncode != 0:
        text = (r.stdout + r.stderr).strip().splitlines()
        tb = [l for l in text if l.strip().startswith("File ") or "Error" in l or "error:" in l]
        print(f"error: a rank of {case_id} failed (all output: {out_case}/ranks.log):\n  " +
              "\n  ".join(tb[-6:] or text[-6:]), file=sys.stderr)
        return 1
    print(f"wrote: {case_id}: {len(runs)} runs x {a.world_size} ranks")
    return 0


if __name__ == "__main__":
    torch.set_num_threads(1)
    sys.exit(main())
