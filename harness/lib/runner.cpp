#include "harness/lib/runner.hpp"

#include <chrono>
#include <ctime>
#include <fstream>
#include <iomanip>
#include <map>
#include <ostream>
#include <sstream>

#include "harness/lib/agreement.hpp"
#include "harness/lib/checks.hpp"
#include "harness/lib/golden.hpp"
#include "harness/lib/npy.hpp"
#include "harness/lib/ranks.hpp"
#include "harness/lib/version.hpp"
#include "kernels/cpu/dropout.hpp"
#include "reference/config/config_json.hpp"
#include "reference/config/validate.hpp"
#include "reference/core/faults.hpp"
#include "reference/memory_model/activation_memory.hpp"

namespace rcts::harness {

namespace fs = std::filesystem;

namespace {

bool contains(const std::vector<std::string>& v, const std::string& s) {
  return std::find(v.begin(), v.end(), s) != v.end();
}

// The config_error expectation: the config must be rejected with exactly this code.
CheckResult check_config_error(const Case& c, const std::string& code) {
  std::vector<std::string> got;
  try {
    Config cfg = config_from_json(c.config, c.file.string());
    for (const auto& issue : validate(cfg)) got.push_back(issue.code);
  } catch (const ConfigError& e) {
    got.push_back(e.code());
  }
  if (contains(got, code)) return {"config_error", Outcome::pass, "rejected with " + code};
  std::string list;
  for (const auto& g : got) list += (list.empty() ? "" : ", ") + g;
  return {"config_error", Outcome::fail,
          "expected rejection with '" + code + "', got " + (got.empty() ? std::string("no error: the config is valid") : list)};
}

Config load_config(const Case& c, const nlohmann::json* patch, const std::string& label) {
  Config cfg = config_from_json(c.config, c.file.string() + " (config)");
  if (patch) cfg = apply_overrides(cfg, *patch, c.file.string() + " (variant '" + label + "')");
  validate_or_throw(cfg, c.file.string() + " (" + label + ")");
  return cfg;
}

void dump_run(DumpWriter& w, const RunRecord& r, const std::string& run_label) {
  const int per = r.config.run.micro_batches;
  for (size_t i = 0; i < r.inputs.size(); ++i) {
    const std::string tag = run_label + ".step" + std::to_string(static_cast<int>(i) / per) + ".mb" +
                            std::to_string(static_cast<int>(i) % per);
    w.add(r.inputs[i], "input", tag);
    w.add(r.outputs[i], "output", tag);
    if (r.input_grads[i].defined()) w.add(r.input_grads[i], "grad", tag);
  }
  for (size_t i = 0; i < r.params.size(); ++i) {
    w.add(r.params[i].tensor, "param", run_label);
    w.add(r.grads[i].tensor, "grad", run_label);
  }
  int k = 0;
  for (const auto& m : r.masks) {
    Tensor t = Tensor::empty({m.numel}, DType::u8, {nullptr, Domain::host, Category::activation},
                             m.site + ".mask" + (m.recompute ? ".recompute" : ""));
    cpu::dropout_mask(t.data<uint8_t>(), m.numel, m.p, m.seed, m.offset);
    w.add(t, "mask", run_label + ".mb" + std::to_string(m.micro_batch) + ".draw" + std::to_string(k++));
  }
}

// Where one configuration runs: its process groups in a multi-rank run, and the
// rank coordinates its RNG is seeded for.
struct RankContext {
  GroupLayout layout;
  std::optional<ProcessGroups> groups;
  RankCoords coords;
};

RankContext rank_context(const Config& cfg, const Case& c, const RunOptions& o) {
  RankContext rc;
  if (!o.world || o.world->size() == 1) {
    rc.coords = c.seed_ranks;
    return rc;
  }
  const auto& p = cfg.parallel;
  rc.layout = make_layout(o.world->size(), p.tensor_model_parallel_size, p.expert_model_parallel_size,
                          p.expert_tensor_parallel_size);
  rc.groups.emplace(make_groups(*o.world, rc.layout));
  rc.coords = coords_of(rc.layout, o.world->rank());
  return rc;
}

RunRecord run_config(const Config& cfg, const RankContext& rc) {
  return execute(cfg, rc.coords, rc.groups ? &*rc.groups : nullptr);
}

Outcome combine(const std::vector<CheckResult>& checks) {
  for (const auto& c : checks)
    if (c.outcome == Outcome::fail || c.outcome == Outcome::error) return Outcome::fail;
  return Outcome::pass;
}

}  // namespace

CaseResult run_case_on_this_rank(const Case& c, const RunOptions& o);

Config case_config(const Case& c, const Variant* v) {
  return load_config(c, v ? &v->patch : nullptr, v ? v->name : "baseline");
}

CaseResult run_case(const Case& c, const RunOptions& o) {
  if (!o.world || o.world->size() == 1) return run_case_on_this_rank(c, o);
  if (!o.agreement) return merge_across_ranks(run_case_on_this_rank(c, o), *o.world);
  // Every rank checks that all ranks can run the same case before any collective.
  if (auto refused = agree_before_case(c, o)) return *refused;
  return agree_after_case(run_case_on_this_rank(c, o), o);
}

CaseResult run_case_on_this_rank(const Case& c, const RunOptions& o) {
  CaseResult res;
  res.id = c.id;
  res.file = c.file.string();
  const auto t0 = std::chrono::steady_clock::now();
  auto finish = [&]() -> CaseResult {
    res.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    return res;
  };
  if (!contains(c.backends, o.backend)) {
    res.outcome = Outcome::skip;
    res.reason = "case runs on backends other than '" + o.backend + "'";
    return finish();
  }
  if (std::find(c.ranks.begin(), c.ranks.end(), o.world_size) == c.ranks.end()) {
    std::string r;
    for (int n : c.ranks) r += (r.empty() ? "" : ", ") + std::to_string(n);
    res.outcome = Outcome::skip;
    res.reason = "needs " + r + " ranks, this run has " + std::to_string(o.world_size);
    return finish();
  }
  try {
    if (c.expect.config_error) {
      res.checks.push_back(check_config_error(c, *c.expect.config_error));
    } else {
      Config base_cfg = load_config(c, nullptr, "baseline");
      auto unsupported = check_supported(base_cfg);
      if (unsupported.empty())
        for (const auto& v : c.variants) {
          auto more = check_supported(apply_overrides(base_cfg, v.patch, c.file.string()));
          unsupported.insert(unsupported.end(), more.begin(), more.end());
        }
      if (!unsupported.empty()) {
        res.outcome = Outcome::skip;
        res.reason = "not implemented yet: " + unsupported.front().message;
        return finish();
      }
      const RankContext base_rc = rank_context(base_cfg, c, o);
      const RunRecord base = run_config(base_cfg, base_rc);
      const bool multi = o.world && o.world->size() > 1;
      if (o.world && o.world->rank() == o.test_throw_on_rank) throw Error("injected failure (RCTS_TEST_THROW_ON_RANK)");
      if (o.golden_only) {
        if (c.expect.golden) res.checks.push_back(check_golden(c, base, o.golden_dir, o.backend, o.world));
        res.outcome = combine(res.checks);
        return finish();
      }
      std::optional<DumpWriter> dump;
      if (o.dump_dir) {
        dump.emplace(*o.dump_dir / (multi ? c.id + ".rank" + std::to_string(o.world->rank()) : c.id));
        dump_run(*dump, base, "baseline");
      }
      const Expect& ce = c.expect;
      if (ce.masks) res.checks.push_back(check_masks(base, base, "baseline"));
      if (ce.rng) res.checks.push_back(check_rng(base, base, "baseline"));
      if (ce.memory) {
        MemoryExpect own = *ce.memory;
        own.max_ratio.reset();  // a ratio compares a variant with the baseline
        res.checks.push_back(check_memory(own, base, base, "baseline"));
      }
      if (!ce.counts.empty()) res.checks.push_back(check_counts(ce.counts, base, "baseline"));
      if (ce.masks_across_ranks && multi) {
        res.checks.push_back(check_masks_across_ranks(base, base_rc.layout, *o.world, "baseline"));
        res.checks.push_back(check_tp_replicas(base, base_rc.layout, *o.world, "baseline"));
      }
      for (const auto& v : c.variants) {
        const Config vcfg = load_config(c, &v.patch, v.name);
        const RankContext vrc = rank_context(vcfg, c, o);
        const RunRecord run = run_config(vcfg, vrc);
        if (dump) dump_run(*dump, run, v.name);
        const Expect& ve = v.expect;
        if (ce.bitwise || ve.bitwise) res.checks.push_back(check_bitwise(base, run, v.name));
        if (ce.rng || ve.rng) res.checks.push_back(check_rng(base, run, v.name));
        if (ce.masks || ve.masks) res.checks.push_back(check_masks(base, run, v.name));
        if (ce.offload || ve.offload) {
          Config plain = vcfg;
          plain.offload.fine_grained_activation_offloading = plain.offload.cpu_offloading = false;
          res.checks.push_back(check_offload(run_config(plain, vrc), run, v.name));
        }
        MemoryExpect mem;
        if (ce.memory) mem = *ce.memory;
        if (ve.memory) {
          mem.analytic = mem.analytic || ve.memory->analytic;
          if (ve.memory->max_ratio) mem.max_ratio = ve.memory->max_ratio;
          if (ve.memory->budget_bytes) mem.budget_bytes = ve.memory->budget_bytes;
        }
        if (ce.memory || ve.memory) res.checks.push_back(check_memory(mem, base, run, v.name));
        auto counts = ce.counts;
        counts.insert(counts.end(), ve.counts.begin(), ve.counts.end());
        if (!counts.empty()) res.checks.push_back(check_counts(counts, run, v.name));
        if ((ce.masks_across_ranks || ve.masks_across_ranks) && multi)
          res.checks.push_back(check_masks_across_ranks(run, vrc.layout, *o.world, v.name));
      }
      if (ce.golden && o.collect_goldens) {
        (*o.collect_goldens)[c.id] = golden_of(c, base, o.backend, o.world);  // collective like check_golden
        res.checks.push_back({"golden", Outcome::pass, "digests collected for regen-golden"});
      } else if (ce.golden) {
        res.checks.push_back(check_golden(c, base, o.golden_dir, o.backend, o.world));
      }
      if (dump) dump->finish();
    }
    res.outcome = combine(res.checks);
  } catch (const std::exception& e) {
    res.outcome = Outcome::error;
    res.reason = e.what();
  }
  if (res.checks.empty() && res.outcome == Outcome::pass) {
    res.outcome = Outcome::error;
    res.reason = "the case checks nothing: add an 'expect' entry";
  }
  if (res.outcome == Outcome::fail || res.outcome == Outcome::error) {
    if (res.reason.empty())
      for (const auto& ch : res.checks)
        if (ch.outcome == Outcome::fail) {
          res.reason = ch.kind + ": " + ch.detail;
          break;
        }
    if (c.xfail) {
      res.outcome = Outcome::xfail;
      res.reason = "expected failure (" + *c.xfail + "): " + res.reason;
    }
  } else if (c.xfail && res.outcome == Outcome::pass) {
    res.outcome = Outcome::fail;
    res.reason = "unexpected pass: the case is listed as expected to fail (" + *c.xfail + ")";
  }
  return finish();
}

std::vector<CaseResult> run_cases(const std::vector<Case>& cases, const RunOptions& o, std::ostream* progress) {
  std::vector<const Case*> selected;
  for (const auto& c : cases)
    if (o.filter.empty() || glob_match(o.filter, c.id)) selected.push_back(&c);
  agree_on_case_list(selected, o);
  std::vector<CaseResult> results;
  int i = 0;
  for (const Case* c : selected) {
    results.push_back(run_case(*c, o));
    if (progress) {
      *progress << progress_line(++i, static_cast<int>(selected.size()), results.back()) << '\n';
      const auto& r = results.back();
      if (r.outcome == Outcome::pass)
        for (const auto& ch : r.checks)
          if (ch.kind == "offload") {
            std::istringstream lines(ch.detail);
            for (std::string line; std::getline(lines, line);) *progress << "        " << line << '\n';
          }
      if ((r.outcome == Outcome::fail || r.outcome == Outcome::error) && !r.reason.empty()) {
        std::istringstream lines(r.reason);
        for (std::string line; std::getline(lines, line);) *progress << "        " << line << '\n';
      }
      progress->flush();
    }
  }
  return results;
}

RunHeader make_header(const RunOptions& o) {
  RunHeader h;
  h.version = kVersion;
  h.git_sha = kGitSha;
  h.backend = o.backend;
  h.ranks = o.world_size;
  const std::time_t now = std::time(nullptr);
  std::ostringstream os;
  os << std::put_time(std::gmtime(&now), "%Y-%m-%dT%H:%M:%SZ");
  h.started_at = os.str();
  return h;
}

std::vector<MutantResult> run_mutants(const std::vector<Case>& cases, const RunOptions& o, bool all_killers,
                                      const std::vector<std::string>& only, std::ostream& out) {
  // Only cases that pass cleanly can kill a mutant.
  std::vector<const Case*> selected, clean;
  for (const auto& c : cases)
    if (o.filter.empty() || glob_match(o.filter, c.id)) selected.push_back(&c);
  agree_on_case_list(selected, o);
  for (const Case* c : selected)
    if (run_case(*c, o).outcome == Outcome::pass) clean.push_back(c);
  out << "mutants: " << clean.size() << " clean cases\n";
  std::vector<MutantResult> results;
  for (const auto& f : all_faults()) {
    if (!only.empty() && !contains(only, std::string(f.name))) continue;
    if (f.min_ranks > o.world_size) {
      out << "n/a      " << std::left << std::setw(32) << f.name << std::right << "  needs " << f.min_ranks
          << "+ ranks: run `mpirun -np " << f.min_ranks << " rcts mutants`\n";
      continue;
    }
    MutantResult m{std::string(f.name), std::string(f.description), {}, 0};
    const auto t0 = std::chrono::steady_clock::now();
    FaultScope scope(f.fault);
    for (const Case* c : clean) {
      const auto r = run_case(*c, o);
      if (r.outcome == Outcome::fail || r.outcome == Outcome::error) {
        m.killers.push_back(c->id);
        if (!all_killers) break;
      }
    }
    m.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    out << (m.killers.empty() ? "SURVIVED " : "killed   ") << std::left << std::setw(32) << m.name << std::right
        << std::fixed << std::setprecision(2) << std::setw(7) << m.seconds << " s  ";
    for (size_t i = 0; i < m.killers.size() && i < 4; ++i) out << (i ? ", " : "by ") << m.killers[i];
    if (m.killers.size() > 4) out << ", ... (" << m.killers.size() << " cases)";
    out << '\n';
    out.flush();
    results.push_back(std::move(m));
  }
  return results;
}

std::string explain_case(const Case& c) {
  std::ostringstream os;
  os << "case " << c.id << "  (" << c.file.string() << ")\n  " << c.description << "\n";
  os << "  ranks: ";
  for (size_t i = 0; i < c.ranks.size(); ++i) os << (i ? ", " : "") << c.ranks[i];
  os << "   backends: ";
  for (size_t i = 0; i < c.backends.size(); ++i) os << (i ? ", " : "") << c.backends[i];
  os << "\n";
  if (c.expect.config_error) {
    os << "  expects the config to be rejected with '" << *c.expect.config_error << "'\n";
    return os.str();
  }
  auto describe = [&](const std::string& label, const Config& cfg) {
    const auto& m = cfg.model;
    const auto& r = cfg.recompute;
    os << "\n  [" << label << "]\n";
    os << "    model: L=" << m.num_layers << " h=" << m.hidden_size << " a=" << m.num_attention_heads << " s=" << m.seq_length
       << " b=" << m.micro_batch_size << " ffn=" << m.ffn_hidden_size << " " << m.activation << " "
       << dtype_name(m.activation_dtype) << " dropout attn=" << m.attention_dropout << " hidden=" << m.hidden_dropout
       << "\n";
    os << "    run: seed=" << cfg.run.seed << " steps=" << cfg.run.steps << " micro_batches=" << cfg.run.micro_batches
       << (cfg.run.training ? " training" : " eval") << "\n";
    os << "    recompute: " << r.recompute_granularity.value_or("none");
    if (r.recompute_method) os << " method=" << *r.recompute_method;
    if (r.recompute_num_layers) os << " num_layers=" << *r.recompute_num_layers;
    if (r.recompute_granularity == "selective") {
      os << " modules=[";
      for (size_t i = 0; i < r.recompute_modules.size(); ++i) os << (i ? ", " : "") << r.recompute_modules[i];
      os << "]";
    }
    os << "\n    plan (segments, * = checkpointed): " << plan_str(recompute_plan(cfg)) << "\n";
    if (cfg.offload.fine_grained_activation_offloading || cfg.offload.cpu_offloading) {
      // A dry run (warmup + one offloading micro-batch) lists what each group moves.
      Config dry = cfg;
      dry.run.steps = 1;
      dry.run.micro_batches = 2;
      const RunRecord r = execute(dry, c.seed_ranks);
      os << "    offload (threshold " << cfg.offload.min_offloaded_tensor_size << " elements; margin groups:";
      for (const auto& g : r.offload->margin_groups) os << ' ' << g;
      os << "):\n";
      std::map<std::string, std::vector<std::string>> by_group;
      for (const auto& t : r.offload->tensors)
        by_group[t.group].push_back(t.tensor + " (" + std::to_string(t.numel) + ")" +
                                    (t.offloaded ? "" : " kept: " + t.kept_because));
      for (const auto& [g, list] : by_group) {
        os << "      " << g << ":";
        for (const auto& t : list) os << "\n        " << t;
        os << "\n";
      }
    } else {
      os << "    offloaded modules: none\n";
    }
    if (cfg.model.num_moe_experts > 0) {
      os << "    expected saved bytes: the analytic model covers dense layers only\n";
      return;
    }
    const auto st = stage_memory(cfg);
    os << "    expected saved bytes per layer:";
    for (auto b : st.per_layer_bytes()) os << ' ' << b;
    os << "  (total " << st.stored_bytes << ", backward peak " << st.peak_backward_bytes << ")\n";
  };
  const Config base = load_config(c, nullptr, "baseline");
  os << "  seeds (DESIGN §5) for tp_rank " << c.seed_ranks.tp << ", ep_rank " << c.seed_ranks.ep << ", etp_rank "
     << c.seed_ranks.etp << ": device-default=" << base.run.seed
     << " model-parallel-rng=" << expected_stream_seed("model-parallel-rng", base.run.seed, c.seed_ranks)
     << " expert-parallel-rng=" << expected_stream_seed("expert-parallel-rng", base.run.seed, c.seed_ranks) << "\n";
  const auto& par = base.parallel;
  if (par.tensor_model_parallel_size > 1 || par.expert_model_parallel_size > 1 || par.expert_tensor_parallel_size > 1 ||
      c.ranks != std::vector<int>{1}) {
    for (int w : c.ranks) {
      if (w == 1) continue;
      try {
        os << "\n  process groups at " << w << " ranks (rank order tp-cp-ep-dp-pp, DESIGN §8):\n"
           << rcts::describe(make_layout(w, par.tensor_model_parallel_size, par.expert_model_parallel_size,
                                   par.expert_tensor_parallel_size));
      } catch (const std::exception& e) {
        os << "    " << e.what() << "\n";
      }
    }
  }
  describe("baseline", base);
  for (const auto& v : c.variants) describe("variant " + v.name, load_config(c, &v.patch, v.name));
  os << "\n  checks:";
  const auto& e = c.expect;
  if (e.bitwise) os << " bitwise";
  if (e.masks) os << " masks";
  if (e.rng) os << " rng";
  if (e.memory) os << " memory";
  if (!e.counts.empty()) os << " counts";
  if (e.golden) os << " golden";
  os << "\n";
  return os.str();
}

}  // namespace rcts::harness
