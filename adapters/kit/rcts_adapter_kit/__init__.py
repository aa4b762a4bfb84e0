"""rcts adapter kit: the framework-independent parts of an rcts adapter (docs/adapter-contract.md).

  errors    AdapterError: bad input, the message names file, JSON path and value (exit 2); DumpError
  json_value  Json: a JSON value with its file and path; read_json (stdlib only)
  case      finding case files, a case file and the rcts dumps of its runs, read strictly (stdlib only)
  config    refusal(): every config key the adapter does not model refuses the case
  dump      format-1 dumps: read rcts's baseline, write the adapter's runs (sha256 per tensor)
  layout    the dump's directory names, the SKIPPED / ERRORED markers (stdlib only)
  judge     rcts check (and --expect) over an adapter's dumps, each case's outcome in its report; the --out rule
  names     rcts parameter names beside Megatron-LM's; the fused-QKV row permutation
  recorder  module invocations, dropout masks, phase (forward / recompute)
  saved     saved-tensor hooks, bytes at the save or at the end of the forward, per layer; save_on_cpu counted
  rng       generator states per micro-batch; a guard failing the run on an unrecorded draw
  worker    one adapter process serving many cases, restarted after a leak, crash or hang (stdlib only)
  isolation the torch state a case must not leave changed for the next one a worker serves
"""
__version__ = "1.0.0"
