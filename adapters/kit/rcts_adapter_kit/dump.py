"""Dump format 1 (docs/dump-format.md) for any adapter: reads the parts of an rcts
baseline dump an adapter starts from (resolved config, parameters before step 0, inputs
and targets) and writes the adapter's own runs as format-1 dumps.

Promises: every tensor keeps its shape; bf16 is written as its raw bits ('<u2'); each
tensor's sha256 in the manifest is of exactly the bytes in its .npy file. Reading is
strict about what it uses: a missing field or a tensor file that disagrees with the
manifest is a DumpError naming the file and the JSON path.
"""
import hashlib
import json
import os
import shutil

import numpy as np
import torch

from .errors import AdapterError, DumpError, where  # noqa: F401 (adapters import DumpError from here)
from .json_value import Json  # noqa: F401 (adapters and tests import it from here)
from .layout import ERRORED, MANIFEST, MAX_MARKER_BYTES, SKIPPED, case_dir, mark_case, rank_dir, safe_stem  # noqa: F401 (adapters import these from here)
from .names import megatron_name
FORMAT = "rcts-dump"
VERSION = 1

_TORCH = {"f32": torch.float32, "f64": torch.float64, "bf16": torch.bfloat16, "u8": torch.uint8}
_NUMPY = {"f32": "<f4", "f64": "<f8", "bf16": "<u2", "u8": "|u1"}


# The optional top-level fields a dump may declare it did not record (docs/dump-format.md).
NOT_RECORDED = ("side_effects", "counts")


def dtype_name(t):
    for name, dt in _TORCH.items():
        if t.dtype == dt:
            return name
    raise DumpError(f"no dump dtype for torch dtype {t.dtype}")


def torch_dtype(name):
    if name not in _TORCH:
        raise DumpError(f"unknown dtype '{name}' (expected one of {sorted(_TORCH)})")
    return _TORCH[name]


def _to_numpy(t):
    t = t.detach().contiguous().cpu()
    if t.dtype == torch.bfloat16:
        return t.view(torch.int16).numpy().view("<u2")
    if t.dtype == torch.bool:
        return t.to(torch.uint8).numpy()
    return t.numpy()


# The markers `rcts check --expect` reads in a case's directory (docs/expectations.md): the
# adapter cannot express the case (SKIPPED), or the framework raised while running it
# (ERRORED, an error result that only an "error" entry expects). One per case, a plain
# file holding one short reason.


def out_dir(out):
    """An adapter's --out, made if missing; what cannot hold dumps is an AdapterError naming it."""
    if os.path.lexists(out) and not os.path.isdir(out):
        raise AdapterError(f"--out {out}: exists and is not a directory")
    try:
        os.makedirs(out, exist_ok=True)
    except OSError as e:
        raise AdapterError(f"--out {out}: cannot make the directory: {e.strerror}") from e
    if not os.access(out, os.W_OK | os.X_OK):
        raise AdapterError(f"--out {out}: not writable")
    return out


def run_dir(root, case_id, backend, run, world_rank=0):
    """Where a run's dump lives below a dump root (the layout `rcts run --dump` uses)."""
    return os.path.join(rank_dir(root, case_id, backend, world_rank), safe_stem(run))


class Writer:
    """Writes one dump directory: tensors as .npy, then dump.json last."""

    def __init__(self, directory):
        self.dir = directory
        os.makedirs(directory, exist_ok=True)
        if os.listdir(directory):
            raise DumpError(f"dump directory {directory} is not empty")
        self.used = set()

    def tensor(self, t, stem):
        stem = safe_stem(stem)
        name, n = stem + ".npy", 2
        while name in self.used:
            name, n = f"{stem}-{n}.npy", n + 1
        self.used.add(name)
        arr = _to_numpy(t)
        np.save(os.path.join(self.dir, name), arr, allow_pickle=False)
        return {"file": name, "dtype": "u8" if t.dtype == torch.bool else dtype_name(t),
                "shape": list(t.shape), "sha256": hashlib.sha256(arr.tobytes()).hexdigest()}

    def named(self, pairs, prefix, parameters=False):
        """Named tensors; parameters also carry their Megatron-LM name where it has one."""
        out = []
        for name, t in pairs:
            e = self.tensor(t, prefix + name)
            e["name"] = name
            if parameters and megatron_name(name):
                e["megatron_name"] = megatron_name(name)
            out.append(e)
        return out

    def finish(self, manifest):
        path = os.path.join(self.dir, MANIFEST)
        tmp = path + ".tmp"
        with open(tmp, "w") as f:
            json.dump(manifest, f, indent=1)
            f.write("\n")
        os.replace(tmp, path)


def _load_npy(path, fail):
    """The array in a .npy file, read as rcts's reader does (harness/io/npy.cpp): C order
    only, and exactly header plus data bytes, nothing after them. `fail(msg)` raises."""
    with open(path, "rb") as f:
        try:
            version = np.lib.format.read_magic(f)
            read_header = {(1, 0): np.lib.format.read_array_header_1_0,
                           (2, 0): np.lib.format.read_array_header_2_0}.get(version)
            if read_header is None:
                fail(f"tensor file {path}: .npy version {version[0]}.{version[1]} (1.0 and 2.0 are read)")
            shape, fortran_order, dtype = read_header(f)
        except ValueError as e:  # numpy says what is wrong with the header
            fail(f"tensor file {path}: {e}")
        if dtype.hasobject:
            fail(f"tensor file {path} holds Python objects")
        if fortran_order:
            fail(f"tensor file {path} is in Fortran order; dumps are C order")
        count = 1
        for n in shape:
            count *= n
        data = f.tell()
        size = os.fstat(f.fileno()).st_size
        if size != data + count * dtype.itemsize:
            fail(f"tensor file {path} holds {size - data} data bytes, shape {list(shape)} of '{dtype.str}' needs "
                 f"{count * dtype.itemsize}" + (" (bytes after the data)" if size > data + count * dtype.itemsize
                                                else " (truncated)"))
        return np.fromfile(f, dtype=dtype, count=count).reshape(shape)


def _read_tensor(d, entry):
    fname = entry["file"].value
    if not isinstance(fname, str) or "/" in fname or fname.startswith("."):
        entry["file"].fail("a tensor file is a plain file name inside the dump directory")
    path = os.path.join(d, fname)
    if os.path.islink(path):  # a link may not lead out of the dump (a tensor of the machine's)
        real, root = os.path.realpath(path), os.path.realpath(d)
        if os.path.commonpath([real, root]) != root:
            entry["file"].fail(f"tensor file {path} is a symbolic link to '{os.readlink(path)}', outside the dump "
                               f"directory {root}")
    if not os.path.isfile(path):
        entry["file"].fail(f"tensor file {path} " + ("is not a regular file (a FIFO, socket, device or directory)"
                                                     if os.path.lexists(path) else "does not exist"))
    dt = entry["dtype"].value
    if dt not in _NUMPY:
        entry["dtype"].fail(f"unknown dtype '{dt}'")
    arr = _load_npy(path, entry["file"].fail)
    if arr.dtype.str != _NUMPY[dt]:
        entry["dtype"].fail(f"tensor file {path} holds '{arr.dtype.str}', dtype {dt} is stored as '{_NUMPY[dt]}'")
    if list(arr.shape) != entry["shape"].value:
        entry["shape"].fail(f"tensor file {path} has shape {list(arr.shape)}")
    if hashlib.sha256(np.ascontiguousarray(arr).tobytes()).hexdigest() != entry["sha256"].value:
        entry["sha256"].fail(f"tensor file {path} has another sha256 (changed after the manifest was written)")
    arr = np.ascontiguousarray(arr).copy()
    if dt == "bf16":  # torch has no uint16: reinterpret the raw bits as int16, then bf16
        return torch.from_numpy(arr.view("<i2")).view(torch.bfloat16)
    return torch.from_numpy(arr)


class BaselineDump:
    """What the adapter takes from an rcts dump: config, initial parameters, data."""

    def __init__(self, directory):
        path = os.path.join(directory, MANIFEST)
        if not os.path.isfile(path):
            raise DumpError(f"{path}: no dump manifest (a dump directory holds {MANIFEST})")
        try:
            with open(path) as f:
                root = Json(path, json.load(f))
        except json.JSONDecodeError as e:
            raise DumpError(f"{path}: not JSON: {e}") from e
        if root["format"].value != FORMAT:
            root["format"].fail(f"not an rcts dump (expected \"{FORMAT}\")")
        if root["version"].value != VERSION:
            root["version"].fail(f"the adapter reads dump format version {VERSION}")
        self.dir = directory
        self.case_id = root["case"]["id"].value
        self.run = root["run"]["name"].value
        self.config = root["config"].value
        self.implementation = root["implementation"]["name"].value
        steps = root["steps"]
        self.params = [(e["name"].value, _read_tensor(directory, e)) for e in steps[0]["params_before"].items()]
        self.inputs, self.targets, self.outputs = [], [], []
        self.grads_after = []  # per micro-batch: accumulated parameter gradients
        self.input_grads, self.losses = [], []
        for mb in root["micro_batches"].items():
            self.inputs.append(_read_tensor(directory, mb["input"]))
            self.targets.append(_read_tensor(directory, mb["target"]))
            self.outputs.append(_read_tensor(directory, mb["output"]))
            ig = mb["input_grad"]
            self.input_grads.append(None if ig.value is None else _read_tensor(directory, ig))
            self.grads_after.append([(e["name"].value, _read_tensor(directory, e)) for e in mb["param_grads"].items()])
            self.losses.append(mb["loss"]["value"].value)


LAYOUTS = {
    "tokens": "activations are (s*b, h) row-major with row = s_index * b + b_index (Megatron's [s, b, h])",
    "linear_weight": "(out_features, in_features): y = x W^T + bias, as torch.nn.Linear",
    "qkv_rows": "attention.qkv output columns [q | k | v], each h wide and head-major inside (head * d + j)",
    "fc1_swiglu": "with swiglu, mlp.fc1 output columns [gate | up]: out = silu(gate) * up",
    "attention_mask": "(b, heads, s_query, s_key), the layout of the softmax probabilities",
    "hidden_mask": "(s*b, h) in token order, like the activations",
    "mask_values": "u8, 1 keep / 0 drop; kept values are scaled by 1 / (1 - p)",
    "bf16": "stored as '<u2' raw bits; dtype 'bf16' in the manifest",
}


def _bits(v):
    import struct
    return "0x%016x" % struct.unpack("<Q", struct.pack("<d", v))[0]


# The implementation's rules the kit's writer can state: RNG states as a digest per
# generator (rng_after is written {"opaque": ...}) and masks rcts does not regenerate.
WRITTEN_RULES = {"rng_states": "opaque", "mask_rule": "none"}


def implementation_entry(directory, implementation):
    """The manifest's `implementation`: name, version, backend and the declared rules.
    `arithmetic` must be declared (anything but "rcts" turns off the golden digests); a
    declared rng_states or mask_rule other than what the writer writes is refused."""
    for key in ("name", "version", "backend", "arithmetic"):
        if not isinstance(implementation.get(key), str) or not implementation[key]:
            raise DumpError(f"{directory}: implementation '{key}' must be declared (a non-empty string)")
    entry = {k: implementation[k] for k in ("name", "version", "backend", "arithmetic")}
    for key, written in WRITTEN_RULES.items():
        declared = implementation.get(key, written)
        if declared != written:
            raise DumpError(f"{directory}: implementation {key} '{declared}': the kit writes only '{written}'")
        entry[key] = declared
    return entry


def not_recorded(directory, declared):
    """The validated `not_recorded` object: keys from NOT_RECORDED, each with a reason."""
    for field, why in declared.items():
        if field not in NOT_RECORDED:
            raise DumpError(f"{directory}: not_recorded '{field}' is not an optional field ({sorted(NOT_RECORDED)})")
        if not isinstance(why, str) or not why.strip():
            raise DumpError(f"{directory}: not_recorded '{field}' needs a reason")
    return dict(declared)


# Per-micro-batch fields an adapter gives only where it records them (docs/dump-format.md).
OPTIONAL_MB = ("held_after_backward", "saved_after_forward", "host_resident_after_forward", "offloaded_bytes",
               "reloaded_bytes")


def write_run(directory, meta, cfg, out, implementation, layouts=None):
    """Writes one recorded run as a format-1 dump. `meta`: case id and file, run name,
    role ("baseline", "variant", "rerun"), of_variant and the rank coordinates (rcts's
    dump of the same run gives them: a case may seed as another rank). `out`: what the
    adapter recorded (see the kit's README: micro_batches, steps, parameters, masks,
    counts, side_effects, not_recorded). `implementation`: name, version, backend,
    arithmetic (and rng_states, mask_rule: implementation_entry), generator (the stream
    of a mask that names none), memory_profile. Parameters, in `parameters` and each
    step's `params_before`, get their Megatron-LM name (names.py)."""
    impl = implementation_entry(directory, implementation)
    declared = not_recorded(directory, out.get("not_recorded", {}))
    streams = [m.get("stream", implementation.get("generator")) for m in out["masks"]]
    for k, stream in enumerate(streams):
        if not stream:
            raise DumpError(f"{directory}: mask {k} ({out['masks'][k]['site']}) names no stream and the "
                            "implementation no generator")
    w = Writer(directory)
    mbs = []
    for e in out["micro_batches"]:
        stem = f"s{e['step']}.mb{e['micro_batch']}"
        mbs.append({
            "step": e["step"], "micro_batch": e["micro_batch"],
            "loss": {"value": e["loss"], "bits": _bits(e["loss"])},
            "input": w.tensor(e["input"], stem + ".input"),
            "target": w.tensor(e["target"], stem + ".target"),
            "output": w.tensor(e["output"], stem + ".output"),
            "input_grad": None if e["input_grad"] is None else w.tensor(e["input_grad"], stem + ".input_grad"),
            "param_grads": w.named(e["param_grads"], stem + ".grad."),
            "rng_after": {"opaque": e["rng_after"]},
            "saved_bytes_per_layer": e["saved_bytes_per_layer"],
            "saved_tensors": e["saved_tensors"],
            **{k: e[k] for k in OPTIONAL_MB if k in e}})
    steps = [{"step": s["step"], "params_before": w.named(s["params_before"], f"s{s['step']}.param.", True),
              "grads": w.named(s["grads"], f"s{s['step']}.grad.")} for s in out["steps"]]
    masks = []
    for k, (m, stream) in enumerate(zip(out["masks"], streams)):
        masks.append({"site": m["site"], "kind": m["kind"], "stream": stream,
                      "step": m["step"], "micro_batch": m["micro_batch"], "draw": m["draw"], "p": m["p"],
                      "layout": "attention_mask" if m["kind"] == "attention" else "hidden_mask",
                      "mask": w.tensor(m["mask"], f"mask.{k:05d}.{m['site']}")})
    run = {"name": meta["run"], "role": meta["role"]}
    if meta.get("of_variant"):
        run["of_variant"] = meta["of_variant"]
    manifest = {
        "format": FORMAT, "version": VERSION,
        "case": {"id": meta["case_id"], "file": meta.get("case_file", "")},
        "run": run,
        "implementation": impl,
        "rank": meta.get("rank") or {"world_rank": 0, "world_size": 1, "tp": 0, "cp": 0, "dp": 0, "pp": 0,
                                     "etp": 0, "ep": 0, "edp": 0},
        "config": cfg, "layouts": layouts or LAYOUTS,
        "micro_batches": mbs, "steps": steps,
        "parameters": w.named(out["parameters"], "param.", True),
        "masks": masks, "counts": out["counts"], "side_effects": out.get("side_effects", {}),
        "memory": {},
    }
    # The saved-tensor profile the run's saved_tensors are judged under (docs/dump-format.md).
    if implementation.get("memory_profile"):
        manifest["memory_profile"] = implementation["memory_profile"]
    # What the adapter cannot observe is declared, with why, and left out.
    for field in declared:
        manifest.pop(field, None)
    if declared:
        manifest["not_recorded"] = declared
    w.finish(manifest)
