// rcts-bench: step time of the reference GPT block under each recompute (and offload) mode, next to
// the FLOP model's prediction, plus GEMM throughput at the block's shapes.
//
// One "step" here is one micro-batch forward + backward (GptModel::run_micro_batch),
// timed on a model built once per mode; the modes are interleaved round by round so a
// load spike on a shared machine hits all of them alike. Reported per mode: min and
// median wall time, achieved GFLOP/s (matmul FLOPs: 3·L·F for forward + backward, plus
// the recompute FLOPs of the memory model), the measured overhead (mode / none) next to
// recompute_overhead()'s predicted step ratio, and the saved bytes per micro-batch
// (sum of the block's measured saved_bytes_per_layer; the analytic stage_memory() next
// to it), the op scratch held at once (device workspace) and, for the offload mode,
// the bytes moved per step. Every mode must give, call for call, the bitwise-same loss,
// input gradient and parameter gradients as "none" (column "same"; the modes consume
// the same RNG streams, so call i of every mode sees the same dropout masks); otherwise
// rcts-bench exits with status 3 — a benchmark of a wrong result is no benchmark.
//
//   rcts-bench [--layers 4 --hidden 256 --heads 4 --seq 256 --batch 2 --ffn 1024]
//              [--dtype f32|bf16|f64] [--dropout 0.1] [--threads N] [--repeats 10]
//              [--warmup 2] [--modes none,core_attn,...] [--no-gemm] [--gemm-only]
//              [--openblas auto|PATH] [--json FILE]
#include <omp.h>
#include <time.h>

#include <CLI/CLI.hpp>
#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <functional>
#include <memory>
#include <optional>
#include <nlohmann/json.hpp>
#include <sstream>
#include <string>
#include <vector>

#include "backends/registry.hpp"
#include "bench/openblas.hpp"
#include "reference/core/faults.hpp"
#include "kernels/cpu/gemm.hpp"
#include "reference/config/validate.hpp"
#include "reference/memory_model/activation_memory.hpp"
#include "reference/memory_model/checkpoint_math.hpp"
#include "reference/driver/model.hpp"

namespace {

using rcts::Config;
using rcts::cpu::Trans;
using nlohmann::json;

double now_seconds() {
  timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return static_cast<double>(ts.tv_sec) + 1e-9 * static_cast<double>(ts.tv_nsec);
}

double median(std::vector<double> v) {
  if (v.empty()) return 0;
  std::sort(v.begin(), v.end());
  const size_t n = v.size();
  return n % 2 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
}

double min_of(const std::vector<double>& v) { return v.empty() ? 0 : *std::min_element(v.begin(), v.end()); }

// ---------------------------------------------------------------------------------
// Modes. THE EXTENSION POINT: a mode is a name and an edit of the Config; to
// benchmark another strategy, append an entry to this list. Nothing else changes —
// the table, the JSON, the FLOP prediction and the peer script's --modes all key on
// the name.
struct Mode {
  std::string name;
  std::string description;
  std::function<void(Config&)> apply;
};

std::vector<Mode> all_modes() {
  auto selective = [](std::vector<std::string> modules) {
    return [modules](Config& c) {
      c.recompute.recompute_granularity = "selective";
      c.recompute.recompute_method.reset();
      c.recompute.recompute_num_layers.reset();
      c.recompute.recompute_modules = modules;
    };
  };
  return {
      {"none", "no recompute",
       [](Config& c) {
         c.recompute.recompute_granularity.reset();
         c.recompute.recompute_method.reset();
         c.recompute.recompute_num_layers.reset();
       }},
      {"core_attn", "selective [core_attn]", selective({"core_attn"})},
      {"mlp", "selective [mlp]", selective({"mlp"})},
      {"layernorm", "selective [layernorm]", selective({"layernorm"})},
      {"selective_all", "selective [core_attn, mlp, layernorm]", selective({"core_attn", "mlp", "layernorm"})},
      {"full", "full uniform, 1 layer per chunk",
       [](Config& c) {
         c.recompute.recompute_granularity = "full";
         c.recompute.recompute_method = "uniform";
         c.recompute.recompute_num_layers = 1;
       }},
      // Every dense module group offloaded (tensors of >= 1024 elements), no recompute;
      // strict copy streams, so each reload waits for its copy: the copying is all
      // exposed, the worst case of a real overlap.
      {"offload", "fine-grained offload of the five dense module groups",
       [](Config& c) {
         c.recompute.recompute_granularity.reset();
         c.recompute.recompute_method.reset();
         c.recompute.recompute_num_layers.reset();
         c.offload.fine_grained_activation_offloading = true;
         c.offload.offload_modules = {"attn_norm", "qkv_linear", "core_attn", "attn_proj", "mlp_norm"};
         c.offload.min_offloaded_tensor_size = 1024;
       }},
  };
}

struct ModeRun {
  const Mode* mode = nullptr;
  Config config;
  std::unique_ptr<rcts::Runtime> rt;
  std::unique_ptr<rcts::GptModel> model;
  std::vector<rcts::Parameter*> params;
  std::vector<double> times;
  int64_t saved_bytes = 0;       // sum of saved_bytes_per_layer (last call)
  int64_t peak_saved_bytes = 0;  // last call
  double first_loss = 0;
  bool have_first = false;
  std::vector<uint64_t> digests;  // per call: loss, input gradient and parameter gradients
  rcts::RecomputeOverhead predicted;
  int64_t model_saved_bytes = 0;  // stage_memory(config).stored_bytes
  int64_t workspace_peak = 0;      // op scratch held at once (device workspace), last call
  int64_t workspace_heap_allocations = 0;  // the workspace pool's heap allocations, after the last call
  int64_t offloaded_bytes = 0;     // device -> host bytes per call, after warm-up (offload modes)

  uint64_t result_digest(const rcts::MicroBatchResult& r) const {
    std::vector<uint64_t> parts{rcts::fnv1a64(&r.loss, sizeof r.loss),
                                rcts::fnv1a64(r.input_grad.bytes(), static_cast<size_t>(r.input_grad.nbytes()))};
    for (const rcts::Parameter* p : params)
      parts.push_back(rcts::fnv1a64(p->grad.bytes(), static_cast<size_t>(p->grad.nbytes())));
    return rcts::fnv1a64(parts.data(), parts.size() * sizeof(uint64_t));
  }

  void step() {
    // Housekeeping outside the timed region: the mask log and save log would
    // otherwise grow with every call; gradients are zeroed as a real step would.
    rt->masks.clear();
    rt->save_log.clear();
    rt->counters.clear();
    rt->side_effects.clear();
    rcts::zero_grads(params);
    const double t0 = now_seconds();
    rcts::MicroBatchResult r = model->run_micro_batch(0, 0);
    const double t = now_seconds() - t0;
    if (!have_first) {
      first_loss = r.loss;
      have_first = true;
    }
    digests.push_back(result_digest(r));
    saved_bytes = 0;
    for (int64_t b : r.saved_bytes_per_layer) saved_bytes += b;
    workspace_peak = rt->memory.category(rcts::Domain::device, rcts::Category::workspace).peak;
    workspace_heap_allocations = rt->workspace.heap_allocations();
    if (rt->offload) {
      const rcts::OffloadReport rep = rt->offload->report();
      int64_t total = 0;
      for (const auto& [name, g] : rep.by_name) total += g.offloaded_bytes;
      offloaded_bytes = rep.iterations > 0 ? total / rep.iterations : 0;
    }
    peak_saved_bytes = r.peak_saved_bytes;
    times.push_back(t);
  }
};

// ---------------------------------------------------------------------------------
// GEMM section.
struct GemmShape {
  std::string name;
  Trans ta, tb;
  int64_t M, N, K;
  int64_t calls_per_step;  // per micro-batch forward + backward, no recompute (for the estimate)
  bool per_head;           // runs inside the attention's loop over heads (heads in parallel)
};

std::vector<GemmShape> block_gemm_shapes(const Config& c) {
  const auto& m = c.model;
  const int64_t T = int64_t{m.seq_length} * m.micro_batch_size, h = m.hidden_size, f = m.ffn_hidden_size;
  const int64_t s = m.seq_length, d = h / m.num_attention_heads;
  const int64_t L = m.num_layers, bh = int64_t{m.micro_batch_size} * m.num_attention_heads;
  const int64_t f1 = m.activation == "swiglu" ? 2 * f : f;
  std::vector<GemmShape> v;
  auto linear = [&](const std::string& name, int64_t out, int64_t in) {
    // Linear: y = x W^T (NT), dx = dy W (NN), dW += dy^T x (TN, K = tokens).
    v.push_back({name + ".fwd", Trans::N, Trans::T, T, out, in, L, false});
    v.push_back({name + ".dgrad", Trans::N, Trans::N, T, in, out, L, false});
    v.push_back({name + ".wgrad", Trans::T, Trans::N, out, in, T, L, false});
  };
  linear("qkv", 3 * h, h);
  // Core attention, per head (s x d blocks): forward QK^T and PV; backward dP, dV, dQ, dK.
  v.push_back({"attn.scores", Trans::N, Trans::T, s, s, d, L * bh, true});
  v.push_back({"attn.context", Trans::N, Trans::N, s, d, s, L * bh, true});
  v.push_back({"attn.dprobs", Trans::N, Trans::T, s, s, d, L * bh, true});
  v.push_back({"attn.dv", Trans::T, Trans::N, s, d, s, L * bh, true});
  v.push_back({"attn.dq", Trans::N, Trans::N, s, d, s, L * bh, true});
  v.push_back({"attn.dk", Trans::T, Trans::N, s, d, s, L * bh, true});
  linear("proj", h, h);
  linear("fc1", f1, h);
  linear("fc2", h, f);
  v.push_back({"square512", Trans::N, Trans::N, 512, 512, 512, 0, false});
  v.push_back({"square1024", Trans::N, Trans::N, 1024, 1024, 1024, 0, false});
  return v;
}

struct GemmResult {
  GemmShape shape;
  int threads;
  double seconds;  // best
  double gflops;
};

// Best time of rcts::cpu::gemm (or, with `blas`, OpenBLAS's sgemm) on this shape.
double gemm_best_seconds(const GemmShape& g, double budget, const rcts::bench::OpenBlas* blas = nullptr) {
  const int64_t lda = g.ta == Trans::N ? g.K : g.M, ldb = g.tb == Trans::N ? g.N : g.K;
  std::vector<float> A(static_cast<size_t>(g.M * g.K)), B(static_cast<size_t>(g.K * g.N)),
      C(static_cast<size_t>(g.M * g.N));
  for (size_t i = 0; i < A.size(); ++i) A[i] = static_cast<float>((i * 7919) % 1000) / 1000.0f - 0.5f;
  for (size_t i = 0; i < B.size(); ++i) B[i] = static_cast<float>((i * 104729) % 1000) / 1000.0f - 0.5f;
  auto run = [&] {
    if (blas) blas->sgemm(g.ta, g.tb, g.M, g.N, g.K, A.data(), lda, B.data(), ldb, C.data(), g.N);
    else rcts::cpu::gemm<float>(g.ta, g.tb, g.M, g.N, g.K, A.data(), lda, B.data(), ldb, C.data(), g.N, false);
  };
  run();  // warm-up: scratch, page faults, thread pool
  double best = 1e30, total = 0;
  for (int rep = 0; rep < 100000 && (rep < 3 || total < budget); ++rep) {
    const double t0 = now_seconds();
    run();
    const double t = now_seconds() - t0;
    total += t;
    best = std::min(best, t);
  }
  return best;
}

std::string op_name(const GemmShape& g) {
  return std::string(1, g.ta == Trans::N ? 'N' : 'T') + std::string(1, g.tb == Trans::N ? 'N' : 'T');
}

std::vector<int> parse_int_list(const std::string& s) {
  std::vector<int> v;
  std::stringstream ss(s);
  std::string item;
  while (std::getline(ss, item, ','))
    if (!item.empty()) v.push_back(std::atoi(item.c_str()));
  return v;
}

std::vector<std::string> parse_list(const std::string& s) {
  std::vector<std::string> v;
  std::stringstream ss(s);
  std::string item;
  while (std::getline(ss, item, ','))
    if (!item.empty()) v.push_back(item);
  return v;
}

json config_json(const Config& c) {
  const auto& m = c.model;
  return {{"num_layers", m.num_layers},
          {"hidden_size", m.hidden_size},
          {"num_attention_heads", m.num_attention_heads},
          {"seq_length", m.seq_length},
          {"micro_batch_size", m.micro_batch_size},
          {"ffn_hidden_size", m.ffn_hidden_size},
          {"activation", m.activation},
          {"activation_dtype", std::string(rcts::dtype_name(m.activation_dtype))},
          {"attention_dropout", m.attention_dropout},
          {"hidden_dropout", m.hidden_dropout}};
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"rcts-bench: step time per recompute mode and GEMM throughput"};
  int layers = 4, hidden = 256, heads = 4, seq = 256, batch = 2, ffn = 1024;
  std::string dtype = "f32", activation = "gelu", modes_arg, json_path, gemm_threads_arg = "1,2";
  double dropout = 0.1, gemm_seconds = 0.2;
  int threads = 0, repeats = 10, warmup = 2;
  bool no_gemm = false, gemm_only = false, quiet = false;
  app.add_option("-L,--layers", layers, "number of layers")->capture_default_str();
  app.add_option("--hidden,--h", hidden, "hidden size h")->capture_default_str();
  app.add_option("--heads,--a", heads, "attention heads a")->capture_default_str();
  app.add_option("--seq,--s", seq, "sequence length s")->capture_default_str();
  app.add_option("--batch,--b", batch, "micro-batch size b")->capture_default_str();
  app.add_option("--ffn", ffn, "ffn hidden size")->capture_default_str();
  app.add_option("--activation", activation, "gelu or swiglu")->capture_default_str();
  app.add_option("--dtype", dtype, "activation dtype: f32, bf16 or f64")->capture_default_str();
  app.add_option("--dropout", dropout, "attention and hidden dropout")->capture_default_str();
  app.add_option("--threads", threads, "OpenMP threads (0: OMP_NUM_THREADS / all)")->capture_default_str();
  app.add_option("--repeats", repeats, "timed steps per mode")->capture_default_str();
  app.add_option("--warmup", warmup, "untimed steps per mode first")->capture_default_str();
  std::string all_names;
  for (const auto& m : all_modes()) all_names += (all_names.empty() ? "" : ",") + m.name;
  app.add_option("--modes", modes_arg, "comma-separated subset of: " + all_names);
  app.add_option("--json", json_path, "write the results as JSON to FILE");
  app.add_flag("--no-gemm", no_gemm, "skip the GEMM section");
  app.add_flag("--gemm-only", gemm_only, "only the GEMM section");
  app.add_option("--gemm-threads", gemm_threads_arg, "thread counts for the GEMM section")->capture_default_str();
  app.add_option("--gemm-seconds", gemm_seconds, "time budget per GEMM measurement")->capture_default_str();
  const char* blas_env = std::getenv("RCTS_BENCH_OPENBLAS");
  std::string openblas_path = blas_env ? blas_env : "";
  app.add_option("--openblas", openblas_path,
                 "also time OpenBLAS's cblas_sgemm (dlopen'ed: a path, or 'auto' for libopenblas.so.0; "
                 "default $RCTS_BENCH_OPENBLAS) and check the GEMM target, rcts >= 60% of OpenBLAS");
  std::string fault_name;
  std::string backend_name = "cpu";
  app.add_option("--backend", backend_name, "backend the block runs on: " + rcts::backend_names())->capture_default_str();
  app.add_option("--fault", fault_name, "switch on a compiled-in mutant for the whole run (the bench's own check)");
  app.add_flag("-q,--quiet", quiet, "no table on stdout (with --json)");
  CLI11_PARSE(app, argc, argv);

  std::optional<rcts::FaultScope> fault;
  if (!fault_name.empty()) {
    try {
      fault.emplace(rcts::parse_fault(fault_name));
    } catch (const std::exception& e) {
      std::fprintf(stderr, "rcts-bench: --fault: %s\n", e.what());
      return 2;
    }
  }
  if (threads > 0) omp_set_num_threads(threads);
  const int run_threads = omp_get_max_threads();

  Config base;
  base.model.num_layers = layers;
  base.model.hidden_size = hidden;
  base.model.num_attention_heads = heads;
  base.model.seq_length = seq;
  base.model.micro_batch_size = batch;
  base.model.ffn_hidden_size = ffn;
  base.model.activation = activation;
  base.model.attention_dropout = dropout;
  base.model.hidden_dropout = dropout;
  try {
    base.model.activation_dtype = rcts::parse_dtype(dtype);
  } catch (const std::exception& e) {
    std::fprintf(stderr, "rcts-bench: %s\n", e.what());
    return 2;
  }
  base.run.steps = 1;
  base.run.micro_batches = 1;

  std::vector<const Mode*> modes;
  static const std::vector<Mode> catalogue = all_modes();
  if (modes_arg.empty()) {
    for (const auto& m : catalogue) modes.push_back(&m);
  } else {
    for (const auto& name : parse_list(modes_arg)) {
      auto it = std::find_if(catalogue.begin(), catalogue.end(), [&](const Mode& m) { return m.name == name; });
      if (it == catalogue.end()) {
        std::fprintf(stderr, "rcts-bench: unknown mode '%s' (known: %s)\n", name.c_str(), all_names.c_str());
        return 2;
      }
      modes.push_back(&*it);
    }
  }

  json out;
  out["config"] = config_json(base);
  out["threads"] = run_threads;
  out["gemm_path"] = rcts::cpu::gemm_path_name(rcts::cpu::active_gemm_path());
  for (const char* var : {"OMP_NUM_THREADS", "OMP_WAIT_POLICY", "GOMP_SPINCOUNT"})
    if (const char* v = std::getenv(var)) out[var] = v;
  out["repeats"] = repeats;
  out["warmup"] = warmup;

  const auto& mc = base.model;
  if (!quiet)
    std::printf("rcts-bench  L=%d h=%d a=%d s=%d b=%d ffn=%d %s dtype=%s dropout=%g threads=%d gemm=%s\n",
                mc.num_layers, mc.hidden_size, mc.num_attention_heads, mc.seq_length, mc.micro_batch_size,
                mc.ffn_hidden_size, mc.activation.c_str(), dtype.c_str(), dropout, run_threads,
                out["gemm_path"].get<std::string>().c_str());

  double none_min = 0, none_median = 0;
  bool all_same = true;
  std::unique_ptr<rcts::Backend> backend;
  std::vector<ModeRun> runs;
  if (!gemm_only) {
    try {
      backend = rcts::make_backend(backend_name);
      for (const Mode* m : modes) {
        ModeRun r;
        r.mode = m;
        r.config = base;
        m->apply(r.config);
        rcts::validate_or_throw(r.config, "rcts-bench mode " + m->name);
        r.predicted = rcts::recompute_overhead(r.config);
        r.model_saved_bytes = rcts::stage_memory(r.config).stored_bytes;
        r.rt = std::make_unique<rcts::Runtime>(r.config, *backend);
        rcts::seed_runtime(*r.rt);
        r.model = std::make_unique<rcts::GptModel>(*r.rt);
        r.params = r.model->parameters();
        runs.push_back(std::move(r));
      }
      // Interleaved rounds: the first call of each mode (warm-up or not) gives the
      // loss every mode must reproduce bit for bit.
      for (int i = 0; i < warmup; ++i)
        for (auto& r : runs) {
          r.step();
          r.times.clear();
        }
      for (int i = 0; i < repeats; ++i)
        for (auto& r : runs) r.step();
    } catch (const std::exception& e) {
      std::fprintf(stderr, "rcts-bench: %s\n", e.what());
      return 1;
    }
    const ModeRun* none = nullptr;
    for (const auto& r : runs)
      if (r.mode->name == "none") none = &r;
    if (none) {
      none_min = min_of(none->times);
      none_median = median(none->times);
    }
    if (!quiet) {
      std::printf("\nstep = one micro-batch forward+backward; %d timed (after %d warm-up), modes interleaved\n",
                  repeats, warmup);
      std::printf("%-14s %9s %9s %8s %8s %8s %8s %11s %11s %11s %8s %5s\n", "mode", "min_ms", "med_ms", "GFLOP/s",
                  "ratio", "ratio_md", "pred", "saved_MiB", "model_MiB", "peak_MiB", "ws_MiB", "same");
    }
    json jm = json::array();
    for (const auto& r : runs) {
      const double tmin = min_of(r.times), tmed = median(r.times);
      const double flops = 3.0 * static_cast<double>(r.predicted.forward_flops) +
                           static_cast<double>(r.predicted.recompute_flops);
      const double ratio = none_min > 0 ? tmin / none_min : 0, ratio_md = none_median > 0 ? tmed / none_median : 0;
      const bool same = !none || r.digests == none->digests;
      if (!same) all_same = false;
      if (!quiet)
        std::printf("%-14s %9.2f %9.2f %8.2f %8.3f %8.3f %8.3f %11.3f %11.3f %11.3f %8.3f %5s\n", r.mode->name.c_str(),
                    tmin * 1e3, tmed * 1e3, tmin > 0 ? flops / tmin / 1e9 : 0, ratio, ratio_md,
                    r.predicted.step_ratio, static_cast<double>(r.saved_bytes) / 1048576.0,
                    static_cast<double>(r.model_saved_bytes) / 1048576.0,
                    static_cast<double>(r.peak_saved_bytes) / 1048576.0,
                    static_cast<double>(r.workspace_peak) / 1048576.0, none ? (same ? "yes" : "NO") : "-");
      jm.push_back({{"name", r.mode->name},
                    {"description", r.mode->description},
                    {"times_s", r.times},
                    {"min_s", tmin},
                    {"median_s", tmed},
                    {"flops", flops},
                    {"gflops_at_min", tmin > 0 ? flops / tmin / 1e9 : 0},
                    {"forward_flops", r.predicted.forward_flops},
                    {"recompute_flops", r.predicted.recompute_flops},
                    {"measured_ratio_min", ratio},
                    {"measured_ratio_median", ratio_md},
                    {"predicted_step_ratio", r.predicted.step_ratio},
                    {"saved_bytes", r.saved_bytes},
                    {"model_saved_bytes", r.model_saved_bytes},
                    {"peak_saved_bytes", r.peak_saved_bytes},
                    {"workspace_peak_bytes", r.workspace_peak},
                    {"workspace_heap_allocations", r.workspace_heap_allocations},
                    {"offloaded_bytes_per_step", r.offloaded_bytes},
                    {"first_loss", r.first_loss},
                    {"matches_none", same}});
    }
    out["modes"] = jm;
    if (!quiet)
      std::printf("ratio = min/min(none), ratio_md = median/median(none), pred = recompute_overhead().step_ratio\n"
                  "(matmul FLOPs only); saved = measured saved bytes per micro-batch, model = stage_memory();\n"
                  "ws = op scratch held at once (device workspace); same = loss and all gradients bitwise\n"
                  "equal to mode none, call for call\n");
    for (const auto& r : runs)
      if (!quiet && r.offloaded_bytes > 0)
        std::printf("%s: %.3f MiB offloaded and reloaded per step (strict copy streams: all copying exposed)\n",
                    r.mode->name.c_str(), static_cast<double>(r.offloaded_bytes) / 1048576.0);
  }

  if (!no_gemm) {
    const auto shapes = block_gemm_shapes(base);
    const auto thread_list = parse_int_list(gemm_threads_arg);
    const rcts::bench::OpenBlas blas(openblas_path == "auto" ? "libopenblas.so.0" : openblas_path);
    if (blas.loaded()) {
      out["openblas"] = {{"path", blas.path()}, {"core", blas.core()}};
      if (const char* v = std::getenv("OPENBLAS_CORETYPE")) out["openblas"]["OPENBLAS_CORETYPE"] = v;
    }
    double worst_ratio = 1e30;  // rcts / OpenBLAS at run_threads
    std::string worst_shape;
    if (!quiet) {
      std::printf("\nGEMM rcts::cpu::gemm<float>, GFLOP/s (best over %.2f s)", gemm_seconds);
      if (blas.loaded()) std::printf("; ob = OpenBLAS cblas_sgemm (%s, core %s)", blas.path().c_str(), blas.core().c_str());
      std::printf("\n%-14s %2s %5s %5s %5s", "shape", "op", "M", "N", "K");
      for (int t : thread_list) {
        std::printf(" %7s%-2d", "thr=", t);
        if (blas.loaded()) std::printf(" %7s%-2d %6s", "ob=", t, "ratio");
      }
      std::printf(" %10s\n", "calls/step");
    }
    json jg = json::array();
    double est_gemm_seconds = 0;  // at run_threads, for the "none" step
    for (const auto& g : shapes) {
      if (!quiet) std::printf("%-14s %2s %5ld %5ld %5ld", g.name.c_str(), op_name(g).c_str(), static_cast<long>(g.M),
                              static_cast<long>(g.N), static_cast<long>(g.K));
      double t1 = 0, t_run = 0;
      for (int t : thread_list) {
        omp_set_num_threads(t);
        const double sec = gemm_best_seconds(g, gemm_seconds);
        const double gf = 2.0 * static_cast<double>(g.M * g.N * g.K) / sec / 1e9;
        if (t == 1) t1 = sec;
        if (t == run_threads) t_run = sec;
        if (!quiet) std::printf(" %9.1f", gf);
        json row = {{"name", g.name}, {"op", op_name(g)}, {"M", g.M}, {"N", g.N}, {"K", g.K}, {"threads", t},
                    {"seconds", sec}, {"gflops", gf}, {"calls_per_step", g.calls_per_step}};
        if (blas.loaded()) {
          blas.set_threads(t);
          const double ob = 2.0 * static_cast<double>(g.M * g.N * g.K) / gemm_best_seconds(g, gemm_seconds, &blas) / 1e9;
          if (!quiet) std::printf(" %9.1f %6.2f", ob, gf / ob);
          row["openblas_gflops"] = ob;
          row["rcts_over_openblas"] = gf / ob;
          if (t == run_threads && gf / ob < worst_ratio) {
            worst_ratio = gf / ob;
            worst_shape = g.name;
          }
        }
        std::fflush(stdout);
        jg.push_back(row);
      }
      if (!quiet) std::printf(" %10ld\n", static_cast<long>(g.calls_per_step));
      // Attention GEMMs run single-threaded inside a parallel loop over heads.
      if (g.per_head && t1 > 0) est_gemm_seconds += static_cast<double>(g.calls_per_step) * t1 / run_threads;
      else est_gemm_seconds += static_cast<double>(g.calls_per_step) * (t_run > 0 ? t_run : t1);  // no speed-up assumed
    }
    omp_set_num_threads(run_threads);
    out["gemm"] = jg;
    if (blas.loaded() && !worst_shape.empty()) {
      const bool met = worst_ratio >= 0.6;
      out["gemm_target"] = {{"threads", run_threads}, {"lowest_ratio", worst_ratio}, {"shape", worst_shape}, {"met", met}};
      if (!quiet)
        std::printf("GEMM target (rcts >= 60%% of OpenBLAS at every shape, %d thread(s)): %s; lowest ratio %.2f (%s)\n",
                    run_threads, met ? "met" : "NOT met", worst_ratio, worst_shape.c_str());
    }
    out["gemm_estimate_none_step_s"] = est_gemm_seconds;
    if (!quiet && est_gemm_seconds > 0) {
      std::printf("GEMM time of one 'none' step at %d thread(s), from the best times above: %.2f ms", run_threads,
                  est_gemm_seconds * 1e3);
      if (none_min > 0) std::printf(" = %.0f%% of the measured min step (%.2f ms)", 100 * est_gemm_seconds / none_min,
                                    none_min * 1e3);
      std::printf("\n");
    }
  }

  if (!json_path.empty()) {
    std::ofstream f(json_path);
    if (!f) {
      std::fprintf(stderr, "rcts-bench: cannot write %s\n", json_path.c_str());
      return 1;
    }
    f << out.dump(2) << "\n";
  }
  if (!all_same) {
    std::fprintf(stderr, "rcts-bench: FAILED: a mode's loss or gradients differ from mode none (column 'same')\n");
    return 3;
  }
  return 0;
}
