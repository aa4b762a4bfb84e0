// Megatron-LM arguments -> rcts Config. One table names every argument rcts maps, with
// the field it sets; a second list names the settings rcts does not model but that
// would change the memory figures (an error, never a silently wrong number); a third
// names what cannot change them (ignored, listed). Anything else is an unknown
// argument. Defaults follow Megatron-LM (docs/megatron.md), not rcts's small built-in
// test config. Over 400 lines on purpose: the tables are the file, one row per argument.
#include "harness/megatron/megatron_args.hpp"

#include <algorithm>
#include <charconv>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <functional>
#include <limits>
#include <map>
#include <optional>
#include <set>
#include <sstream>

#include "reference/config/config_error.hpp"
#include "reference/config/limits.hpp"
#include "reference/config/megatron_defaults.hpp"
#include "reference/config/validate.hpp"

namespace rcts::harness {

namespace fs = std::filesystem;
namespace {

std::string join(const std::vector<std::string>& v, const std::string& sep) {
  std::string s;
  for (const auto& x : v) s += (s.empty() ? "" : sep) + x;
  return s;
}

std::string problems_message(const std::string& where, const std::vector<std::string>& problems) {
  return std::to_string(problems.size()) + " problem" + (problems.size() == 1 ? "" : "s") + " in the Megatron-LM " +
         "arguments of " + where + ":\n  " + join(problems, "\n  ");
}

// ---- values ----------------------------------------------------------------------------
// What a table entry sets, given the argument's values; it records a problem and
// returns on a bad value.
struct Setter {
  Config& c;
  const MegatronArg& a;
  std::vector<std::string>& problems;

  bool count(size_t n) {
    if (a.values.size() == n) return true;
    problems.push_back(a.name + ": expects " + (n == 0 ? std::string("no value (a flag)") : std::to_string(n) + " value") +
                       ", got " + (a.values.empty() ? std::string("none") : "'" + join(a.values, " ") + "'"));
    return false;
  }
  std::optional<int64_t> integer(int64_t min, int64_t max = std::numeric_limits<int>::max()) {
    if (!count(1)) return std::nullopt;
    const std::string& s = a.values[0];
    int64_t v = 0;
    auto [end, ec] = std::from_chars(s.data(), s.data() + s.size(), v);
    if (ec != std::errc() || end != s.data() + s.size()) {
      problems.push_back(a.name + " " + s + ": expected an integer");
      return std::nullopt;
    }
    if (v < min || v > max) {
      problems.push_back(a.name + " " + s + ": must be in [" + std::to_string(min) + ", " + std::to_string(max) + "]");
      return std::nullopt;
    }
    return v;
  }
  std::optional<double> number() {
    if (!count(1)) return std::nullopt;
    const std::string& s = a.values[0];
    std::istringstream in(s);
    in.imbue(std::locale::classic());
    double v = 0;
    if (!(in >> v) || !in.eof() || !std::isfinite(v)) {
      problems.push_back(a.name + " " + s + ": expected a number");
      return std::nullopt;
    }
    return v;
  }
  std::optional<std::string> choice(const std::vector<std::string>& legal) {
    if (!count(1)) return std::nullopt;
    if (std::find(legal.begin(), legal.end(), a.values[0]) == legal.end()) {
      problems.push_back(a.name + " " + a.values[0] + ": must be one of " + join(legal, ", "));
      return std::nullopt;
    }
    return a.values[0];
  }
  std::optional<std::vector<std::string>> list() {
    if (a.values.empty()) {
      problems.push_back(a.name + ": expects one or more values");
      return std::nullopt;
    }
    return a.values;
  }
};

template <class T> void set_int(std::optional<int64_t> v, T& out) {
  if (v) out = static_cast<T>(*v);
}

using Apply = std::function<void(Setter&)>;

// Every argument rcts maps (Megatron-LM's names; TransformerConfig fields become
// "--field-name", booleans store_true).
const std::map<std::string, Apply>& mapped() {
  static const std::map<std::string, Apply> table = {
      {"--num-layers", [](Setter& s) { set_int(s.integer(1), s.c.model.num_layers); }},
      {"--hidden-size", [](Setter& s) { set_int(s.integer(1), s.c.model.hidden_size); }},
      {"--num-attention-heads", [](Setter& s) { set_int(s.integer(1), s.c.model.num_attention_heads); }},
      {"--seq-length", [](Setter& s) { set_int(s.integer(1), s.c.model.seq_length); }},
      {"--micro-batch-size", [](Setter& s) { set_int(s.integer(1), s.c.model.micro_batch_size); }},
      {"--ffn-hidden-size", [](Setter& s) { set_int(s.integer(1), s.c.model.ffn_hidden_size); }},
      {"--swiglu", [](Setter& s) { if (s.count(0)) s.c.model.activation = "swiglu"; }},
      {"--attention-dropout", [](Setter& s) { if (auto v = s.number()) s.c.model.attention_dropout = *v; }},
      {"--hidden-dropout", [](Setter& s) { if (auto v = s.number()) s.c.model.hidden_dropout = *v; }},
      {"--bf16", [](Setter& s) { if (s.count(0)) s.c.model.activation_dtype = DType::bf16; }},
      {"--norm-epsilon", [](Setter& s) { if (auto v = s.number()) s.c.model.layernorm_epsilon = *v; }},
      {"--use-flash-attn", [](Setter& s) { if (s.count(0)) s.c.model.flash_attention = true; }},
      {"--disable-bias-linear", [](Setter& s) { if (s.count(0)) s.c.model.add_bias_linear = false; }},
      {"--attention-backend",
       [](Setter& s) {
         // flash and fused (cuDNN) keep no s x s scores; auto lets Transformer Engine pick
         // one of them on the GPUs Megatron-LM targets, but rcts cannot know which.
         if (auto v = s.choice({"flash", "fused", "unfused", "local", "auto"})) {
           if (*v == "auto") {
             s.problems.push_back("--attention-backend auto: rcts cannot tell whether the s x s attention scores are "
                                  "saved; give flash or fused (none saved) or unfused or local (saved)");
             return;
           }
           s.c.model.flash_attention = *v == "flash" || *v == "fused";
         }
       }},
      {"--num-experts", [](Setter& s) { set_int(s.integer(1), s.c.model.num_moe_experts); }},
      {"--moe-router-topk", [](Setter& s) { set_int(s.integer(1), s.c.model.moe_router_topk); }},
      {"--moe-grouped-gemm", [](Setter& s) { if (s.count(0)) s.c.model.moe_grouped_gemm = true; }},
      {"--moe-shared-expert-intermediate-size",
       [](Setter& s) { set_int(s.integer(1), s.c.model.moe_shared_expert_intermediate_size); }},
      {"--moe-shared-expert-overlap", [](Setter& s) { if (s.count(0)) s.c.model.moe_shared_expert_overlap = true; }},
      {"--overlap-moe-expert-parallel-comm",
       [](Setter& s) { if (s.count(0)) s.c.model.overlap_moe_expert_parallel_comm = true; }},
      {"--moe-ffn-hidden-size", [](Setter& s) { set_int(s.integer(1), s.c.model.moe_ffn_hidden_size); }},
      {"--moe-layer-freq", [](Setter& s) { set_int(s.integer(1), s.c.model.moe_layer_freq); }},
      {"--moe-aux-loss-coeff", [](Setter& s) { if (auto v = s.number()) s.c.model.moe_aux_loss_coeff = *v; }},
      {"--multi-latent-attention", [](Setter& s) { if (s.count(0)) s.c.model.multi_latent_attention = true; }},
      {"--q-lora-rank", [](Setter& s) { set_int(s.integer(1), s.c.model.q_lora_rank); }},
      {"--kv-lora-rank", [](Setter& s) { set_int(s.integer(1), s.c.model.kv_lora_rank); }},
      {"--qk-head-dim", [](Setter& s) { set_int(s.integer(1), s.c.model.qk_head_dim); }},
      {"--qk-pos-emb-head-dim", [](Setter& s) { set_int(s.integer(1), s.c.model.qk_pos_emb_head_dim); }},
      {"--v-head-dim", [](Setter& s) { set_int(s.integer(1), s.c.model.v_head_dim); }},
      {"--rotary-base", [](Setter& s) { if (auto v = s.number()) s.c.model.rotary_base = *v; }},
      {"--experimental-attention-variant",
       [](Setter& s) { if (s.choice({"gdn", "gated_delta_net"})) s.c.model.gated_delta_net = true; }},
      {"--linear-attention-freq", [](Setter& s) { set_int(s.integer(1), s.c.model.linear_attention_freq); }},
      {"--linear-conv-kernel-dim", [](Setter& s) { set_int(s.integer(1), s.c.model.linear_conv_kernel_dim); }},
      {"--linear-key-head-dim", [](Setter& s) { set_int(s.integer(1), s.c.model.linear_key_head_dim); }},
      {"--linear-value-head-dim", [](Setter& s) { set_int(s.integer(1), s.c.model.linear_value_head_dim); }},
      {"--linear-num-key-heads", [](Setter& s) { set_int(s.integer(1), s.c.model.linear_num_key_heads); }},
      {"--linear-num-value-heads", [](Setter& s) { set_int(s.integer(1), s.c.model.linear_num_value_heads); }},
      {"--tensor-model-parallel-size", [](Setter& s) { set_int(s.integer(1), s.c.parallel.tensor_model_parallel_size); }},
      {"--pipeline-model-parallel-size",
       [](Setter& s) { set_int(s.integer(1), s.c.parallel.pipeline_model_parallel_size); }},
      {"--expert-model-parallel-size", [](Setter& s) { set_int(s.integer(1), s.c.parallel.expert_model_parallel_size); }},
      {"--expert-tensor-parallel-size",
       [](Setter& s) { set_int(s.integer(1), s.c.parallel.expert_tensor_parallel_size); }},
      {"--sequence-parallel", [](Setter& s) { if (s.count(0)) s.c.parallel.sequence_parallel = true; }},
      {"--recompute-granularity",
       [](Setter& s) { if (auto v = s.choice({"full", "selective"})) s.c.recompute.recompute_granularity = *v; }},
      {"--recompute-activations", [](Setter& s) { if (s.count(0)) s.c.recompute.recompute_granularity = "selective"; }},
      {"--recompute-method",
       [](Setter& s) { if (auto v = s.choice({"uniform", "block"})) s.c.recompute.recompute_method = *v; }},
      {"--recompute-num-layers", [](Setter& s) {
         if (auto v = s.integer(0)) s.c.recompute.recompute_num_layers = static_cast<int>(*v);
       }},
      {"--recompute-modules", [](Setter& s) { if (auto v = s.list()) s.c.recompute.recompute_modules = *v; }},
      {"--distribute-saved-activations",
       [](Setter& s) { if (s.count(0)) s.c.recompute.distribute_saved_activations = true; }},
      {"--moe-layer-recompute", [](Setter& s) { if (s.count(0)) s.c.recompute.moe_layer_recompute = true; }},
      {"--fine-grained-activation-offloading",
       [](Setter& s) { if (s.count(0)) s.c.offload.fine_grained_activation_offloading = true; }},
      {"--offload-modules", [](Setter& s) { if (auto v = s.list()) s.c.offload.offload_modules = *v; }},
      {"--min-offloaded-tensor-size",
       [](Setter& s) { set_int(s.integer(0, std::numeric_limits<int64_t>::max()), s.c.offload.min_offloaded_tensor_size); }},
      {"--cpu-offloading-num-layers", [](Setter& s) {
         // arguments.py: a positive count turns layer-level CPU offloading on.
         if (auto v = s.integer(0)) {
           s.c.offload.cpu_offloading_num_layers = static_cast<int>(*v);
           s.c.offload.cpu_offloading = *v > 0;
         }
       }},
      {"--seed", [](Setter& s) { set_int(s.integer(0, std::numeric_limits<int64_t>::max()), s.c.run.seed); }},
  };
  return table;
}

// Settings that change activation memory in ways rcts does not model: an error unless
// given at the value that changes nothing (`harmless`, when there is one).
struct NotModelled {
  const char* why;
  std::function<bool(const MegatronArg&, const Config&)> harmless;
};
bool value_is(const MegatronArg& a, const char* v) { return a.values.size() == 1 && a.values[0] == v; }

const std::map<std::string, NotModelled>& not_modelled() {
  static const std::map<std::string, NotModelled> table = {
      {"--fp16", {"rcts models bf16 or fp32 activations (fp16 needs loss scaling rcts does not have)", nullptr}},
      {"--group-query-attention", {"grouped-query attention is not modelled (K and V are as wide as Q)", nullptr}},
      {"--num-query-groups",
       {"grouped-query attention is not modelled (K and V are as wide as Q)",
        [](const MegatronArg& a, const Config& c) {
          return value_is(a, std::to_string(c.model.num_attention_heads).c_str());
        }}},
      {"--kv-channels",
       {"kv_channels other than hidden_size / num_attention_heads is not modelled",
        [](const MegatronArg& a, const Config& c) {
          return c.model.num_attention_heads > 0 &&
                 value_is(a, std::to_string(c.model.hidden_size / c.model.num_attention_heads).c_str());
        }}},
      {"--normalization",
       {"only LayerNorm is modelled", [](const MegatronArg& a, const Config&) { return value_is(a, "LayerNorm"); }}},
      {"--squared-relu", {"only GeLU and SwiGLU are modelled", nullptr}},
      {"--quick-geglu", {"only GeLU and SwiGLU are modelled", nullptr}},
      {"--context-parallel-size",
       {"context parallelism is not modelled", [](const MegatronArg& a, const Config&) { return value_is(a, "1"); }}},
      {"--virtual-pipeline-model-parallel-size",
       {"the interleaved pipeline schedule is not modelled", nullptr}},
      {"--num-layers-per-virtual-pipeline-stage",
       {"the interleaved pipeline schedule is not modelled", nullptr}},
      {"--num-virtual-stages-per-pipeline-rank",
       {"the interleaved pipeline schedule is not modelled", nullptr}},
  };
  return table;
}

// Arguments that cannot change what rcts models (one transformer layer's activations,
// recompute and offload): optimizer, schedule, data, tokenizer, logging, checkpointing,
// distributed setup, kernels' fusion switches, embeddings and positions.
bool ignorable(const std::string& name) {
  static const std::vector<std::string> prefixes = {
      "--lr", "--min-lr", "--adam-", "--sgd-", "--weight-decay", "--clip-grad", "--loss-scale", "--initial-loss-scale",
      "--data-", "--split", "--tokenizer-", "--vocab-", "--merge-file", "--mock-data", "--num-workers", "--no-mmap",
      "--train-", "--eval-", "--exit-", "--save", "--load", "--no-load", "--ckpt-", "--dist-ckpt", "--use-dist-ckpt",
      "--auto-detect-ckpt", "--finetune", "--pretrained-checkpoint", "--log-", "--tensorboard", "--wandb-",
      "--timing-log", "--no-log", "--distributed-", "--use-distributed-optimizer", "--overlap-grad-reduce",
      "--overlap-param-gather", "--use-mcore-models", "--use-legacy-models", "--transformer-impl", "--global-batch-size",
      "--rampup-batch-size", "--step-batch-size", "--init-method", "--make-vocab-size-divisible-by",
      "--max-position-embeddings", "--position-embedding-type", "--rotary-", "--rope-", "--no-rope", "--use-rope",
      "--untie-embeddings-and-output-weights", "--add-bias-linear", "--add-qkv-bias",
      "--no-masked-softmax-fusion", "--no-bias-", "--no-gradient-accumulation-fusion", "--no-persist-layer-norm",
      "--apply-layernorm-1p", "--attention-softmax-in-fp32", "--accumulate-allreduce-grads-in-fp32",
      "--manual-gc", "--deterministic-mode", "--no-check-for-nan", "--check-for-", "--tp-comm-", "--num-dataset-",
      "--dataloader-type", "--micro-batch-size-per-gpu", "--use-torch-fsdp2", "--ddp-", "--grad-reduce-in-",
      "--cross-entropy-loss-fusion", "--cross-entropy-fusion-impl", "--moe-token-dispatcher-type",
      "--moe-router-load-balancing-type", "--moe-z-loss-coeff", "--moe-router-dtype", "--moe-permute-fusion",
      "--moe-router-fusion", "--moe-router-pre-softmax", "--moe-router-score-function", "--moe-token-drop-policy",
      "--moe-expert-capacity-factor", "--moe-pad-expert-input-to-capacity", "--moe-router-enable-expert-bias",
      "--moe-router-bias-update-rate", "--profile", "--use-pytorch-profiler", "--nvtx-ranges", "--record-memory-history",
      "--memory-snapshot-path", "--empty-unused-memory-level", "--bf16-", "--fp8", "--first-last-layers-bf16",
      "--calculate-per-token-loss", "--sequence-parallel-",
  };
  for (const auto& p : prefixes)
    if (name.rfind(p, 0) == 0) return true;
  return false;
}

size_t edit_distance(const std::string& a, const std::string& b) {
  std::vector<size_t> row(b.size() + 1);
  for (size_t j = 0; j <= b.size(); ++j) row[j] = j;
  for (size_t i = 1; i <= a.size(); ++i) {
    size_t diag = row[0];
    row[0] = i;
    for (size_t j = 1; j <= b.size(); ++j) {
      const size_t up = row[j];
      row[j] = std::min({row[j] + 1, row[j - 1] + 1, diag + (a[i - 1] == b[j - 1] ? 0 : 1)});
      diag = up;
    }
  }
  return row[b.size()];
}

std::string closest(const std::string& name) {
  std::string best;
  size_t best_d = 4;  // suggest only near misses
  for (const auto& [known, _] : mapped()) {
    // The distance is at least the difference in length: long names skip the O(n m) work.
    if ((name.size() > known.size() ? name.size() - known.size() : known.size() - name.size()) >= best_d) continue;
    if (const size_t d = edit_distance(name, known); d < best_d) {
      best = known;
      best_d = d;
    }
  }
  return best.empty() ? "" : " (did you mean " + best + "?)";
}

}  // namespace

MegatronArgsError::MegatronArgsError(const std::string& where, std::vector<std::string> problems, SourceLocation loc)
    : Error(problems_message(where, problems), loc), problems_(std::move(problems)) {}

std::vector<MegatronArg> split_megatron_args(const std::string& text, std::vector<std::string>& problems) {
  std::vector<std::string> words;
  std::string word;
  bool in_word = false;
  for (size_t i = 0; i < text.size(); ++i) {
    const char ch = text[i];
    if (ch == '\\' && i + 1 < text.size() && (text[i + 1] == '\n' || text[i + 1] == '\r')) {
      i += text[i + 1] == '\r' && i + 2 < text.size() && text[i + 2] == '\n' ? 2 : 1;
      continue;
    }
    if (ch == '#' && !in_word) {
      while (i < text.size() && text[i] != '\n') ++i;
      continue;
    }
    if (ch == '\'' || ch == '"') {
      const size_t close = text.find(ch, i + 1);
      if (close == std::string::npos) {
        problems.push_back(std::string("unterminated ") + ch + " quote");
        break;
      }
      word += text.substr(i + 1, close - i - 1);
      in_word = true;
      i = close;
      continue;
    }
    if (std::isspace(static_cast<unsigned char>(ch))) {
      if (in_word) words.push_back(std::move(word));
      word.clear();
      in_word = false;
      continue;
    }
    word += ch;
    in_word = true;
  }
  if (in_word) words.push_back(std::move(word));

  std::vector<MegatronArg> args;
  for (const auto& w : words) {
    if (w.rfind("--", 0) == 0 && w.size() > 2) {
      const size_t eq = w.find('=');
      args.push_back({w.substr(0, eq), {}});
      if (eq != std::string::npos) args.back().values.push_back(w.substr(eq + 1));
    } else if (args.empty()) {
      problems.push_back("'" + w + "' is not an argument (arguments start with --; paste the arguments only, "
                         "without the launcher and script)");
    } else {
      args.back().values.push_back(w);
    }
  }
  return args;
}

MegatronImport import_megatron_args(const std::vector<MegatronArg>& args, const std::string& where,
                                    std::vector<std::string> problems) {
  MegatronImport out;
  Config& c = out.config;
  // Megatron-LM's defaults where they differ from rcts's built-in test config
  // (docs/megatron.md): fp32 activations without --bf16, no MoE aux loss, seed 1234,
  // no recompute; the sizes have no default and must be given.
  c.model.activation_dtype = DType::f32;
  c.model.moe_aux_loss_coeff = 0.0;
  c.run.seed = 1234;
  c.recompute.recompute_granularity.reset();
  // MLA sizes: arguments.py's defaults (--q-lora-rank None, --kv-lora-rank 32,
  // --qk-head-dim 128, --qk-pos-emb-head-dim 64, --v-head-dim 128, --rotary-base 10000).
  c.model.q_lora_rank = 0;
  c.model.kv_lora_rank = 32;
  c.model.qk_head_dim = 128;
  c.model.qk_pos_emb_head_dim = 64;
  c.model.v_head_dim = 128;
  c.model.rotary_base = 10000.0;

  std::map<std::string, const MegatronArg*> given;
  for (const auto& a : args) {
    if (!given.emplace(a.name, &a).second) problems.push_back(a.name + ": given twice");
  }
  std::vector<const MegatronArg*> deferred;  // not-modelled checks need the sizes
  for (const auto& a : args) {
    if (given.at(a.name) != &a) continue;
    if (auto m = mapped().find(a.name); m != mapped().end()) {
      Setter s{c, a, problems};
      m->second(s);
    } else if (not_modelled().count(a.name)) {
      deferred.push_back(&a);
    } else if (ignorable(a.name)) {
      out.ignored.push_back(a.name);
    } else {
      problems.push_back(a.name + ": unknown to rcts" + closest(a.name) +
                         " (docs/megatron.md lists what is mapped, ignored or not modelled)");
    }
  }
  for (const MegatronArg* a : deferred) {
    const NotModelled& n = not_modelled().at(a->name);
    if (n.harmless && n.harmless(*a, c)) continue;
    problems.push_back(a->name + (a->values.empty() ? "" : " " + join(a->values, " ")) + ": not modelled by rcts: " + n.why);
  }
  for (const char* required : {"--num-layers", "--hidden-size", "--num-attention-heads", "--seq-length",
                               "--micro-batch-size"})
    if (!given.count(required)) problems.push_back(std::string(required) + ": required (Megatron-LM has no default)");

  // Derived defaults, as megatron/training/arguments.py derives them.
  if (!given.count("--ffn-hidden-size")) {
    const int64_t ffn = megatron_default_ffn_hidden_size(c.model.hidden_size, c.model.activation == "swiglu");
    if (ffn > std::numeric_limits<int>::max()) {
      problems.push_back("--hidden-size " + std::to_string(c.model.hidden_size) + ": the default --ffn-hidden-size " +
                         std::to_string(ffn) + " is out of range");
    } else {
      c.model.ffn_hidden_size = static_cast<int>(ffn);
      out.notes.push_back("ffn_hidden_size = " + std::to_string(ffn) +
                          (c.model.activation == "swiglu" ? " (Megatron-LM's SwiGLU default: int(4h * 2/3 / 64) * 64)"
                                                          : " (Megatron-LM's default: 4h)"));
    }
  }
  if (c.model.num_moe_experts > 0 && !given.count("--moe-ffn-hidden-size")) c.model.moe_ffn_hidden_size = c.model.ffn_hidden_size;
  // Megatron-LM sets expert_tensor_parallel_size = tensor_model_parallel_size; it only
  // matters (and rcts only accepts it above 1) with experts.
  if (!given.count("--expert-tensor-parallel-size") && c.model.num_moe_experts > 0)
    c.parallel.expert_tensor_parallel_size = c.parallel.tensor_model_parallel_size;
  if (c.parallel.tensor_model_parallel_size == 1 && c.parallel.sequence_parallel) {
    c.parallel.sequence_parallel = false;
    out.notes.push_back("sequence_parallel off: Megatron-LM disables it when tensor_model_parallel_size is 1");
  }
  if (!given.count("--recompute-modules") && c.recompute.recompute_granularity == "selective")
    out.notes.push_back("recompute_modules = core_attn (Megatron-LM's default)");

  // The config's own rules, every one, once the arguments themselves are sound.
  if (problems.empty())
    for (const ConfigIssue& i : validate(c)) problems.push_back("[" + i.code + "] " + i.message);
  if (!problems.empty()) throw MegatronArgsError(where, std::move(problems));
  return out;
}

namespace {

// Refuses texts beyond the limits before they are split or parsed.
void check_text_size(const std::string& where, uint64_t bytes) {
  if (bytes > static_cast<uint64_t>(limits::kMaxMegatronTextBytes))
    throw MegatronArgsError(where, {where + ": " + std::to_string(bytes) + " bytes, more than the " +
                                    std::to_string(limits::kMaxMegatronTextBytes) + " bytes of Megatron-LM arguments rcts reads"});
}

MegatronImport import_checked(const std::vector<MegatronArg>& args, const std::string& where,
                              std::vector<std::string> problems) {
  if (args.size() > static_cast<size_t>(limits::kMaxMegatronArgs))
    throw MegatronArgsError(where, {std::to_string(args.size()) + " arguments, more than the " +
                                    std::to_string(limits::kMaxMegatronArgs) + " rcts reads"});
  return import_megatron_args(args, where, std::move(problems));
}

}  // namespace

MegatronImport import_megatron_arg_string(const std::string& text) {
  check_text_size("--megatron-args", text.size());
  if (text.find_first_not_of(" \t\r\n") == std::string::npos)
    throw MegatronArgsError("--megatron-args", {"--megatron-args: empty; give the arguments, e.g. \"--num-layers 24 ...\""});
  std::vector<std::string> problems;
  auto args = split_megatron_args(text, problems);
  return import_checked(args, "--megatron-args", std::move(problems));
}

MegatronImport import_megatron_file(const std::string& path) {
  std::error_code ec;
  const auto st = fs::status(path, ec);
  if (!fs::exists(st)) throw Error(path + ": no such Megatron-LM arguments file");
  if (!fs::is_regular_file(st)) throw Error(path + ": not a regular file, cannot be a Megatron-LM arguments file");
  check_text_size(path, fs::file_size(path, ec));
  std::ifstream in(path, std::ios::binary);
  if (!in) throw Error(path + ": cannot open the Megatron-LM arguments file");
  std::ostringstream text;
  text << in.rdbuf();
  check_text_size(path, text.str().size());  // it grew while being read
  std::vector<std::string> problems;
  const bool yaml = path.size() > 5 && (path.ends_with(".yaml") || path.ends_with(".yml"));
  auto args = yaml ? megatron_args_from_yaml(text.str(), path, problems) : split_megatron_args(text.str(), problems);
  return import_checked(args, path, std::move(problems));
}

}  // namespace rcts::harness
