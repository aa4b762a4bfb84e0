#!/usr/bin/python3
"""Peer benchmark: the rcts reference GPT block against the same block in PyTorch (CPU).

Run through scripts/peer-bench (it installs PyTorch/NumPy/OpenBLAS from apt when
missing and builds rcts-bench). Standalone:

    /usr/bin/python3 bench/peer_bench.py --rcts-bench build/bench/rcts-bench [options]

Both sides run the same configuration: L pre-LN GPT layers (LN, QKV linear, causal
softmax attention with attention dropout, output projection, hidden dropout + residual,
LN, fc1, GeLU (tanh), fc2, hidden dropout + residual), fp32 on the PyTorch side and the
activation dtype given by --dtype on the rcts side (default f32), loss
0.5 * mean((y - target)^2), backward to the input and all parameters. One "step" is one
micro-batch forward + backward.

Recompute modes (same names as rcts-bench):
  none           no recompute
  core_attn      torch.utils.checkpoint around softmax(QK^T) dropout · V
  mlp            checkpoint around fc1 -> GeLU -> fc2
  layernorm      checkpoint around each LayerNorm (approximation: rcts discards the LN
                 output after its consumer saved it; the recomputed work is the same)
  selective_all  checkpoint(LN1), checkpoint(core attention), checkpoint(LN2 + MLP)
                 (same recomputed work as rcts's core_attn + mlp + layernorm)
  full           checkpoint around each whole layer (full, uniform, 1 layer per chunk)

The two sides alternate for --rounds rounds (PyTorch first in even rounds, rcts first
in odd ones), so drifting machine load hits both; min and median over all rounds are
reported, and the ratio rcts/PyTorch of the minima. rcts-bench's "offload" mode has
no peer here: on a CPU-only PyTorch, save_on_cpu keeps tensors where they are.

Then (unless --no-gemm) a GEMM section: rcts::cpu::gemm (rcts-bench --gemm-only) next to
torch.mm on the same OpenBLAS, at the block's GEMM shapes and n = 512 / 1024, on 1 and
--threads threads, with the verdict on the target rcts >= 60% of OpenBLAS.
"""
import argparse
import json
import math
import os
import statistics
import subprocess
import sys
import tempfile
import time

MODES = ["none", "core_attn", "mlp", "layernorm", "selective_all", "full"]


def parse_args():
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--rcts-bench", required=True, help="path to the rcts-bench executable")
    p.add_argument("--layers", type=int, default=4)
    p.add_argument("--hidden", type=int, default=256)
    p.add_argument("--heads", type=int, default=4)
    p.add_argument("--seq", type=int, default=256)
    p.add_argument("--batch", type=int, default=2)
    p.add_argument("--ffn", type=int, default=1024)
    p.add_argument("--dropout", type=float, default=0.1)
    p.add_argument("--dtype", default="f32", help="rcts activation dtype (PyTorch always runs fp32)")
    p.add_argument("--threads", type=int, default=2, help="torch.set_num_threads and OMP_NUM_THREADS for rcts")
    p.add_argument("--rounds", type=int, default=5)
    p.add_argument("--reps", type=int, default=3, help="timed steps per mode per round, each side")
    p.add_argument("--warmup", type=int, default=2, help="untimed steps per mode (PyTorch: first round only)")
    p.add_argument("--modes", default=",".join(MODES))
    p.add_argument("--openblas-threads", type=int, default=None,
                   help="OPENBLAS_NUM_THREADS for PyTorch (default: the environment's, or 1 when unset: "
                        "PyTorch's intra-op threads do not govern a generic OpenBLAS, whose own pthreads would "
                        "otherwise oversubscribe the cores)")
    p.add_argument("--wait-idle", type=float, default=0,
                   help="before each side of each round, wait up to this many seconds for a moment when the "
                        "CPUs are >= 90%% idle (shared machines)")
    p.add_argument("--no-gemm", action="store_true",
                   help="skip the GEMM section (rcts::cpu::gemm against torch.mm on OpenBLAS, same shapes)")
    p.add_argument("--gemm-seconds", type=float, default=0.3, help="time budget per GEMM measurement, each side")
    p.add_argument("--json", help="write all raw times and the summary as JSON")
    return p.parse_args()


def cpu_busy_fraction(interval=1.0):
    def sample():
        with open("/proc/stat") as f:
            v = [int(x) for x in f.readline().split()[1:]]
        idle = v[3] + v[4]
        return sum(v[:8]) - idle, idle
    b1, i1 = sample()
    time.sleep(interval)
    b2, i2 = sample()
    total = (b2 - b1) + (i2 - i1)
    return (b2 - b1) / total if total else 0.0


def wait_idle(max_seconds):
    """Waits until the CPUs are >= 90% idle over one second; returns the seconds waited."""
    t0 = time.perf_counter()
    while time.perf_counter() - t0 < max_seconds:
        if cpu_busy_fraction() <= 0.10:
            break
    return time.perf_counter() - t0


def openblas_info(libs):
    """(core name, threads) that the loaded OpenBLAS reports, or None."""
    import ctypes
    for path in libs:
        if "openblas" not in os.path.basename(path):
            continue
        try:
            lib = ctypes.CDLL(path)
            lib.openblas_get_corename.restype = ctypes.c_char_p
            return lib.openblas_get_corename().decode(), lib.openblas_get_num_threads()
        except (OSError, AttributeError):
            return None
    return None


def blas_libraries():
    """Shared libraries mapped into this process that look like BLAS/LAPACK/oneDNN."""
    libs = set()
    try:
        with open("/proc/self/maps") as f:
            for line in f:
                path = line.split()[-1] if len(line.split()) >= 6 else ""
                name = os.path.basename(path)
                if any(k in name for k in ("blas", "lapack", "mkl", "dnnl", "gomp", "omp")):
                    libs.add(os.path.realpath(path))
    except OSError:
        pass
    return sorted(libs)


def build_torch(args):
    import torch
    import torch.nn as nn
    import torch.nn.functional as F
    from torch.utils.checkpoint import checkpoint

    h, a, s, b, ffn, p = args.hidden, args.heads, args.seq, args.batch, args.ffn, args.dropout
    d = h // a
    scale = 1.0 / math.sqrt(d)
    causal = torch.ones(s, s, dtype=torch.bool).triu(1)  # True above the diagonal: masked

    class GptLayer(nn.Module):
        def __init__(self):
            super().__init__()
            self.ln1 = nn.LayerNorm(h, eps=1e-5)
            self.qkv = nn.Linear(h, 3 * h)
            self.proj = nn.Linear(h, h)
            self.ln2 = nn.LayerNorm(h, eps=1e-5)
            self.fc1 = nn.Linear(h, ffn)
            self.fc2 = nn.Linear(ffn, h)

        @staticmethod
        def core_attn(q, k, v):  # [b, a, s, d] each
            scores = torch.matmul(q, k.transpose(-2, -1)) * scale
            scores = scores.masked_fill(causal, float("-inf"))
            probs = torch.softmax(scores, dim=-1)
            probs = F.dropout(probs, p=p, training=True)
            return torch.matmul(probs, v)  # [b, a, s, d]

        def mlp(self, x):
            return self.fc2(F.gelu(self.fc1(x), approximate="tanh"))

        def ln2_mlp(self, x):
            return self.mlp(self.ln2(x))

        def forward(self, x, mode):  # x: [s, b, h]
            ck = lambda f, *t: checkpoint(f, *t)  # reentrant (torch 1.13 default), RNG state preserved
            ln1 = ck(self.ln1, x) if mode in ("layernorm", "selective_all") else self.ln1(x)
            qkv = self.qkv(ln1).view(s, b, a, 3 * d)
            q, k, v = qkv.split(d, dim=-1)  # Megatron layout: per head [q | k | v]
            q, k, v = (t.permute(1, 2, 0, 3) for t in (q, k, v))  # [b, a, s, d]
            if mode in ("core_attn", "selective_all"):
                ctx = ck(self.core_attn, q, k, v)
            else:
                ctx = self.core_attn(q, k, v)
            ctx = ctx.permute(2, 0, 1, 3).reshape(s, b, h)
            h1 = x + F.dropout(self.proj(ctx), p=p, training=True)
            if mode == "selective_all":
                m = ck(self.ln2_mlp, h1)
            else:
                ln2 = ck(self.ln2, h1) if mode == "layernorm" else self.ln2(h1)
                m = ck(self.mlp, ln2) if mode == "mlp" else self.mlp(ln2)
            return h1 + F.dropout(m, p=p, training=True)

    torch.manual_seed(1234)
    layers = [GptLayer() for _ in range(args.layers)]
    params = [q for l in layers for q in l.parameters()]

    def step(mode):
        for q in params:
            q.grad = None
        t0 = time.perf_counter()
        x = torch.rand(s, b, h) * 2 - 1
        x.requires_grad_(True)
        target = torch.rand(s, b, h) * 2 - 1
        y = x
        for layer in layers:
            if mode == "full":
                y = checkpoint(layer, y, mode)
            else:
                y = layer(y, mode)
        loss = 0.5 * ((y - target) ** 2).mean()
        loss.backward()
        return time.perf_counter() - t0

    return step


def run_rcts(args, modes, reps, warmup):
    env = dict(os.environ)
    env["OMP_NUM_THREADS"] = str(args.threads)
    with tempfile.NamedTemporaryFile(suffix=".json", delete=False) as tf:
        out = tf.name
    try:
        cmd = [args.rcts_bench, "--layers", str(args.layers), "--hidden", str(args.hidden), "--heads",
               str(args.heads), "--seq", str(args.seq), "--batch", str(args.batch), "--ffn", str(args.ffn),
               "--dropout", str(args.dropout), "--dtype", args.dtype, "--threads", str(args.threads),
               "--repeats", str(reps), "--warmup", str(warmup), "--modes", ",".join(modes), "--no-gemm",
               "--quiet", "--json", out]
        subprocess.run(cmd, env=env, check=True)
        with open(out) as f:
            res = json.load(f)
    finally:
        os.unlink(out)
    return {m["name"]: m for m in res["modes"]}


def run_rcts_gemm(args, threads):
    """rcts-bench --gemm-only: GFLOP/s per (shape, threads) at the block's shapes."""
    with tempfile.NamedTemporaryFile(suffix=".json", delete=False) as tf:
        out = tf.name
    try:
        cmd = [args.rcts_bench, "--layers", str(args.layers), "--hidden", str(args.hidden), "--heads",
               str(args.heads), "--seq", str(args.seq), "--batch", str(args.batch), "--ffn", str(args.ffn),
               "--gemm-only", "--gemm-threads", ",".join(map(str, threads)), "--gemm-seconds",
               str(args.gemm_seconds), "--quiet", "--json", out]
        subprocess.run(cmd, check=True)
        with open(out) as f:
            res = json.load(f)
    finally:
        os.unlink(out)
    return res["gemm"], res.get("gemm_path", "?")


def torch_gemm_gflops(torch, openblas, op, M, N, K, threads, budget):
    """Best GFLOP/s of torch.mm for op(A)[M,K] op(B)[K,N] in fp32 over `budget` seconds."""
    if openblas is not None:
        openblas.openblas_set_num_threads(threads)
    torch.set_num_threads(threads)
    A = torch.rand(K, M) if op[0] == "T" else torch.rand(M, K)
    B = torch.rand(N, K) if op[1] == "T" else torch.rand(K, N)
    a = A.t() if op[0] == "T" else A
    b = B.t() if op[1] == "T" else B
    C = torch.empty(M, N)
    torch.mm(a, b, out=C)
    best, spent = float("inf"), 0.0
    while spent < budget or best == float("inf"):
        t0 = time.perf_counter()
        torch.mm(a, b, out=C)
        t = time.perf_counter() - t0
        best, spent = min(best, t), spent + t
    return 2.0 * M * N * K / best / 1e9


def gemm_section(args, torch, libs):
    """Prints rcts GEMM GFLOP/s next to torch.mm's (OpenBLAS) at the block's shapes and
    the squares 512/1024, for 1 thread and --threads; returns the rows and the verdict
    on the performance target of docs/performance.md (rcts >= 60% of OpenBLAS at every
    shape, at --threads)."""
    import ctypes
    openblas = None
    for path in libs:
        if "openblas" in os.path.basename(path):
            try:
                openblas = ctypes.CDLL(path)
                openblas.openblas_set_num_threads.argtypes = [ctypes.c_int]
            except (OSError, AttributeError):
                openblas = None
            break
    threads = sorted({1, args.threads})
    rows, path = run_rcts_gemm(args, threads)
    print()
    print(f"== GEMM, fp32, GFLOP/s (best over {args.gemm_seconds:.2f} s): rcts::cpu::gemm ({path} path) "
          "vs torch.mm (OpenBLAS)")
    print(f"{'shape':14s} {'op':2s} {'M':>5s} {'N':>5s} {'K':>5s} {'thr':>3s} {'rcts':>8s} {'openblas':>9s} "
          f"{'ratio':>6s}")
    out, worst = [], None
    for g in rows:
        if g["calls_per_step"] == 0 and not g["name"].startswith("square"):
            continue
        tg = torch_gemm_gflops(torch, openblas, g["op"], g["M"], g["N"], g["K"], g["threads"], args.gemm_seconds)
        ratio = g["gflops"] / tg
        print(f"{g['name']:14s} {g['op']:2s} {g['M']:5d} {g['N']:5d} {g['K']:5d} {g['threads']:3d} "
              f"{g['gflops']:8.1f} {tg:9.1f} {ratio:6.2f}", flush=True)
        out.append({**g, "openblas_gflops": tg, "rcts_over_openblas": ratio})
        if g["threads"] == args.threads and (worst is None or ratio < worst[0]):
            worst = (ratio, g["name"])
    if openblas is not None:
        openblas.openblas_set_num_threads(int(os.environ.get("OPENBLAS_NUM_THREADS", "1")))
    torch.set_num_threads(args.threads)
    if worst:
        verdict = "met" if worst[0] >= 0.6 else "NOT met"
        print(f"GEMM target (rcts >= 60% of OpenBLAS at every shape, {args.threads} thread(s)): {verdict}; "
              f"lowest ratio {worst[0]:.2f} ({worst[1]})")
    return out


def main():
    args = parse_args()
    modes = [m for m in args.modes.split(",") if m]
    for m in modes:
        if m not in MODES:
            sys.exit(f"peer_bench: unknown mode {m!r} (known: {', '.join(MODES)})")
    if args.openblas_threads is not None:
        os.environ["OPENBLAS_NUM_THREADS"] = str(args.openblas_threads)
    elif "OPENBLAS_NUM_THREADS" not in os.environ:
        os.environ["OPENBLAS_NUM_THREADS"] = "1"
        print("peer_bench: OPENBLAS_NUM_THREADS unset: using 1 (see --openblas-threads)")
    import torch  # after OPENBLAS_NUM_THREADS: OpenBLAS reads it when it loads

    torch.set_num_threads(args.threads)
    step = build_torch(args)

    print("== environment")
    print(f"python {sys.version.split()[0]}  torch {torch.__version__}  torch threads {torch.get_num_threads()}  "
          f"rcts OMP_NUM_THREADS {args.threads}")
    for var in ("OPENBLAS_CORETYPE", "OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS", "MKL_NUM_THREADS"):
        print(f"{var}={os.environ.get(var, '(unset)')}")
    print("torch.__config__.show():")
    for line in torch.__config__.show().splitlines()[:7]:
        print("   " + line[:160])
    # One matmul so the BLAS library is loaded, then list what is mapped.
    torch.ones(64, 64) @ torch.ones(64, 64)
    libs = blas_libraries()
    print("BLAS / OpenMP libraries mapped:", ", ".join(libs) or "(none found)")
    ob = openblas_info(libs)
    if ob:
        print(f"OpenBLAS core: {ob[0]}  OpenBLAS threads: {ob[1]}")
        if ob[0].lower() in ("prescott", "core2", "penryn", "dunnington", "nehalem", "atom", "unknown"):
            print(f"WARNING: OpenBLAS runs its generic {ob[0]} (SSE) kernels: it did not recognise this CPU. "
                  "PyTorch's GEMMs are then several times slower than they can be; for a fair comparison rerun "
                  "with OPENBLAS_CORETYPE=Haswell (AVX2, like rcts's kernel) or SkylakeX (AVX-512).")
    try:
        print("torch.backends.mkldnn enabled:", torch.backends.mkldnn.is_available() and torch.backends.mkldnn.enabled)
    except Exception:  # noqa: BLE001
        pass
    print("load average (1, 5, 15 min): %.2f %.2f %.2f  cpus: %d" % (*os.getloadavg(), os.cpu_count()))
    print(f"config: L={args.layers} h={args.hidden} a={args.heads} s={args.seq} b={args.batch} ffn={args.ffn} "
          f"dropout={args.dropout} rcts dtype={args.dtype} torch fp32; {args.rounds} rounds x {args.reps} steps/mode/side")
    sys.stdout.flush()

    torch_times = {m: [] for m in modes}
    rcts_times = {m: [] for m in modes}
    rcts_info = {}
    for m in modes:  # PyTorch warm-up (allocator, thread pool, first-touch)
        for _ in range(args.warmup):
            step(m)
    for r in range(args.rounds):
        order = ("torch", "rcts") if r % 2 == 0 else ("rcts", "torch")
        for side in order:
            waited = wait_idle(args.wait_idle) if args.wait_idle > 0 else 0.0
            load1 = os.getloadavg()[0]
            t0 = time.perf_counter()
            if side == "torch":
                for m in modes:
                    for _ in range(args.reps):
                        torch_times[m].append(step(m))
            else:
                res = run_rcts(args, modes, args.reps, args.warmup)
                for m in modes:
                    rcts_times[m].extend(res[m]["times_s"])
                    rcts_info[m] = res[m]
            print(f"round {r + 1}/{args.rounds} {side:5s} {time.perf_counter() - t0:6.1f} s"
                  f"  (waited {waited:4.1f} s for idle CPUs, load1 {load1:.2f})", flush=True)

    def stats(v):
        return min(v), statistics.median(v)

    tn = stats(torch_times["none"]) if "none" in modes else None
    rn = stats(rcts_times["none"]) if "none" in modes else None
    print()
    print("== step time, one micro-batch forward+backward (ms); ratio columns: min / min(none)")
    hdr = (f"{'mode':14s} {'torch_min':>9s} {'torch_med':>9s} {'rcts_min':>9s} {'rcts_med':>9s} "
           f"{'rcts/torch':>10s} {'torch_x':>8s} {'rcts_x':>8s} {'pred_x':>7s}")
    print(hdr)
    summary = []
    for m in modes:
        t_min, t_med = stats(torch_times[m])
        r_min, r_med = stats(rcts_times[m])
        tx = t_min / tn[0] if tn else float("nan")
        rx = r_min / rn[0] if rn else float("nan")
        pred = rcts_info[m]["predicted_step_ratio"]
        print(f"{m:14s} {t_min * 1e3:9.1f} {t_med * 1e3:9.1f} {r_min * 1e3:9.1f} {r_med * 1e3:9.1f} "
              f"{r_min / t_min:10.2f} {tx:8.3f} {rx:8.3f} {pred:7.3f}")
        summary.append({"mode": m, "torch_min_s": t_min, "torch_median_s": t_med, "rcts_min_s": r_min,
                        "rcts_median_s": r_med, "rcts_over_torch": r_min / t_min, "torch_ratio_vs_none": tx,
                        "rcts_ratio_vs_none": rx, "predicted_step_ratio": pred,
                        "rcts_saved_bytes": rcts_info[m]["saved_bytes"]})
    print("pred_x = rcts recompute_overhead() step ratio (matmul FLOPs only); torch_x / rcts_x: measured")
    print(f"PyTorch GEMMs ran on OpenBLAS core {ob[0] if ob else '?'} with {ob[1] if ob else '?'} OpenBLAS thread(s), "
          f"OPENBLAS_CORETYPE={os.environ.get('OPENBLAS_CORETYPE', '(unset)')}; "
          "load average now %.2f %.2f %.2f" % os.getloadavg())
    gemm_rows = [] if args.no_gemm else gemm_section(args, torch, libs)
    if args.json:
        with open(args.json, "w") as f:
            json.dump({"args": vars(args), "torch_times_s": torch_times, "rcts_times_s": rcts_times,
                       "summary": summary, "gemm": gemm_rows, "torch_version": torch.__version__,
                       "openblas_coretype_env": os.environ.get("OPENBLAS_CORETYPE"),
                       "openblas_num_threads_env": os.environ.get("OPENBLAS_NUM_THREADS"),
                       "openblas_core": ob[0] if ob else None, "openblas_threads": ob[1] if ob else None,
                       "load_average": os.getloadavg()}, f, indent=2)


if __name__ == "__main__":
    main()
