#include "harness/run/runner.hpp"

#include <algorithm>
#include <chrono>
#include <ctime>
#include <fstream>
#include <iomanip>
#include <map>
#include <new>
#include <ostream>
#include <sstream>

#include "backends/registry.hpp"
#include "harness/checks/applicability.hpp"
#include "harness/checks/check_kinds.hpp"
#include "harness/run/case_agreement.hpp"
#include "harness/checks/checks.hpp"
#include "harness/checks/device_pool_check.hpp"
#include "harness/checks/divergence.hpp"
#include "harness/golden/golden.hpp"
#include "harness/dumps/dump_v1.hpp"
#include "harness/io/npy.hpp"
#include "harness/io/provenance.hpp"
#include "harness/ranks/ranks.hpp"
#include "harness/checks/reference_compare.hpp"
#include "harness/reports/progress.hpp"
#include "harness/reports/run_report.hpp"
#include "harness/io/version.hpp"
#include "harness/checks/mask_oracle.hpp"
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

// Writes one run of case c as a format-1 dump under options.dump_dir.
void dump_record(const Case& c, const RunRecord& r, const std::string& run, const std::string& role,
                 const std::string& of_variant, const RunOptions& o) {
  DumpMeta meta;
  meta.case_id = c.id;
  meta.case_file = c.file.string();
  meta.run = run;
  meta.role = role;
  meta.of_variant = of_variant;
  meta.world_rank = o.world ? o.world->rank() : 0;
  meta.world_size = o.world ? o.world->size() : 1;
  meta.version = std::string(kVersion) + " (" + kGitSha + ")";
  try {
    write_dump(dump_dir_of(*o.dump_dir, c.id, r.backend, run, meta.world_rank), meta, r);
  } catch (const std::exception& e) {
    if (o.dump_failure && o.dump_failure->empty()) *o.dump_failure = "case " + c.id + ", run '" + run + "': " + e.what();
    throw;
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
                          p.expert_tensor_parallel_size, p.pipeline_model_parallel_size);
  if (!o.records || o.reference)  // dumps need no communication, rcts's reference runs do
    rc.groups.emplace(make_groups(o.device_world ? *o.device_world : *o.world, rc.layout));
  rc.coords = coords_of(rc.layout, o.world->rank());
  return rc;
}

RunRecord run_config(const Config& cfg, const RankContext& rc, const RunOptions& o) {
  RCTS_CHECK(o.backend, "run options name no backend");
  // The MPI communicator moves host bytes; device memory needs the backend's device world.
  RCTS_CHECK(!rc.groups || o.device_world || o.backend->memory().host_accessible(Domain::device),
             "backend '" + o.backend->name() + "' keeps tensors in device memory, which the host communicator cannot "
             "move, and has no device communicator");
  ExecuteOptions eo;
  eo.record_all = o.dump_dir.has_value() || o.reference.has_value();
  RunRecord r = execute(cfg, *o.backend, rc.coords, rc.groups ? &*rc.groups : nullptr, eo);
  if (auto why = device_pool_disagreement(r)) throw Error(*why);
  return r;
}

// run_config after the resource estimate: a config over the limits never starts.
RunRecord run_within_limits(const Config& cfg, const RankContext& rc, const Case& c, const std::string& label,
                            const RunOptions& o) {
  check_run_limits(cfg, "case " + c.id + " (" + label + ")", o.limits);
  return run_config(cfg, rc, o);
}

// Run `run` of case c (labelled `label` in errors): executed here, or read from the
// record source (and compared with rcts's reference when asked: into `checks`);
// written as a dump when asked.
RunRecord obtain(const Config& cfg, const RankContext& rc, const Case& c, const std::string& run,
                 const std::string& label, const std::string& of_variant, const RunOptions& o,
                 std::vector<CheckResult>& checks) {
  if (o.records) {
    RunRecord r = o.records->record(c, run, cfg, rc.coords);
    if (o.reference)
      checks.push_back(compare_with_reference(run_within_limits(cfg, rc, c, label, o), r, *o.reference, label));
    return r;
  }
  RunRecord r = run_within_limits(cfg, rc, c, label, o);
  if (o.dump_dir)
    dump_record(c, r, run, run == "baseline" ? "baseline" : of_variant.empty() ? "variant" : "rerun", of_variant, o);
  return r;
}

Outcome combine(const std::vector<CheckResult>& checks) {
  for (const auto& c : checks)
    if (c.outcome == Outcome::fail || c.outcome == Outcome::error) return Outcome::fail;
  return Outcome::pass;
}

// What the checks see of the options: the world, the backend the runs executed on
// (none when they come from dumps) and where golden files are.
CheckEnv check_env(const RunOptions& o) {
  return {o.world, o.records ? nullptr : o.backend, o.golden_dir, o.collect_goldens};
}

}  // namespace

CaseResult run_case_on_this_rank(const Case& c, const RunOptions& o);

CaseResult run_case(const Case& c, const RunOptions& o) {
  CaseResult r = [&] {
    if (!o.world || o.world->size() == 1) return run_case_on_this_rank(c, o);
    if (!o.agreement) return merge_across_ranks(run_case_on_this_rank(c, o), *o.world);
    // Every rank checks that all ranks can run the same case before any collective.
    if (auto refused = agree_before_case(c, o)) return *refused;
    return agree_after_case(run_case_on_this_rank(c, o), o);
  }();
  r.backend = o.backend ? o.backend->name() : "";
  if (o.report) o.report->finish_case(c, r);
  return r;
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
  RCTS_CHECK(o.backend || o.records, "run options name no backend");
  if (!o.records && !case_runs_on(c, *o.backend)) {
    std::string listed;
    for (const auto& b : c.backends) listed += (listed.empty() ? "" : ", ") + b;
    res.outcome = Outcome::skip;
    res.reason = "case runs on " + listed + ", not on '" + o.backend->name() + "'";
    return finish();
  }
  if (std::find(c.ranks.begin(), c.ranks.end(), o.world_size) == c.ranks.end()) {
    std::string r;
    for (int n : c.ranks) r += (r.empty() ? "" : ", ") + std::to_string(n);
    res.outcome = Outcome::skip;
    res.reason = "needs " + r + " ranks, this run has " + std::to_string(o.world_size);
    return finish();
  }
  // Each failing run's first divergence, for a reason that leads with the cause.
  std::vector<std::pair<std::string, Divergence>> firsts;
  const CheckEnv env = check_env(o);
  try {
    const auto kinds = requested_kinds(c.expect);
    if (c.expect.config_error) {
      // Judged on the config alone: nothing runs.
      static const RunRecord nothing;
      static const GroupLayout one_rank;
      const CheckContext x{c, env, false, nothing, one_rank, nullptr, nullptr, nullptr, {}};
      for (const CheckKind* k : kinds)
        if (k->runs_without_execution) k->on_case_end(x, res.checks);
    } else {
      Config base_cfg = case_config(c, nullptr);
      const Supported gate = o.backend ? supported_on(*o.backend) : Supported{};
      auto unsupported = check_supported(base_cfg, gate);
      if (unsupported.empty())
        for (const auto& v : c.variants) {
          auto more = check_supported(apply_overrides(base_cfg, v.patch, c.file.string()), gate);
          unsupported.insert(unsupported.end(), more.begin(), more.end());
        }
      if (!unsupported.empty()) {
        res.outcome = Outcome::skip;
        res.reason = "not implemented yet: " + unsupported.front().message;
        return finish();
      }
      const RankContext base_rc = rank_context(base_cfg, c, o);
      const RunRecord base = obtain(base_cfg, base_rc, c, "baseline", "baseline", "", o, res.checks);
      if (o.report) o.report->add_run(base, "baseline");
      const bool multi = o.world && o.world->size() > 1;
      if (o.world && o.world->rank() == o.test_throw_on_rank) throw Error("injected failure (RCTS_TEST_THROW_ON_RANK)");
      CheckContext x{c, env, multi, base, base_rc.layout, nullptr, nullptr, nullptr, {}};
      if (o.golden_only) {
        if (const CheckKind* g = find_check_kind("golden"); g->requested(c.expect)) g->on_case_end(x, res.checks);
        res.outcome = combine(res.checks);
        return finish();
      }
      // Registry order: every kind the case asks for, on the baseline, then on each
      // variant (when the case or the variant asks), then once at the end.
      for (const CheckKind* k : kinds)
        if (k->on_baseline) run_check_pass(*k, k->on_baseline, x, res.checks);
      place_failures(base, base, "baseline", res.checks, 0, firsts);
      for (const auto& v : c.variants) {
        const Config vcfg = case_config(c, &v);
        const RankContext vrc = rank_context(vcfg, c, o);
        const RunRecord run = obtain(vcfg, vrc, c, v.name, "variant '" + v.name + "'", "", o, res.checks);
        if (o.report) o.report->add_run(run, v.name);
        CheckContext vx = x;
        vx.variant = &v;
        vx.run = &run;
        vx.layout = &vrc.layout;
        vx.rerun = [&](const Config& cfg, const std::string& label) {
          return obtain(cfg, vrc, c, label, label, v.name, o, res.checks);
        };
        const size_t before = res.checks.size();
        for (const auto& k : check_kinds())
          if (k.on_variant && (k.requested(c.expect) || k.requested(v.expect))) run_check_pass(k, k.on_variant, vx, res.checks);
        place_failures(base, run, v.name, res.checks, before, firsts);
      }
      for (const CheckKind* k : kinds)
        if (k->on_case_end) run_check_pass(*k, k->on_case_end, x, res.checks);
    }
    res.outcome = combine(res.checks);
  } catch (const std::bad_alloc&) {
    // The estimate let it through, yet an allocation failed: this case errors, the
    // run goes on with the others.
    res.outcome = Outcome::error;
    res.reason = "case " + c.id + " (" + c.file.string() + "): out of memory (std::bad_alloc) while running it";
  } catch (const std::exception& e) {
    res.outcome = Outcome::error;
    res.reason = e.what();
  }
  if (res.checks.empty() && res.outcome == Outcome::pass) {
    res.outcome = Outcome::error;
    res.reason = "the case checks nothing: add an 'expect' entry";
  }
  if (res.outcome == Outcome::fail || res.outcome == Outcome::error) {
    if (res.reason.empty()) res.reason = failure_reason(firsts, res.checks);
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

Backend* BackendPool::get(const std::string& name, std::string& why) {
  if (auto it = made_.find(name); it != made_.end()) return it->second.get();
  if (auto it = refused_.find(name); it == refused_.end()) {
    const BackendEntry* e = find_backend(name);
    std::string reason = e ? e->unavailable() : "no such backend (known: " + backend_names() + ")";
    if (reason.empty()) return (made_[name] = e->make()).get();
    refused_[name] = std::move(reason);
  }
  why = refused_[name];
  return nullptr;
}

Communicator* BackendPool::device_world(const std::string& name, Communicator& host_world) {
  if (auto it = worlds_.find(name); it != worlds_.end()) return it->second.get();
  Backend* b = made_.at(name).get();
  return (worlds_[name] = b->make_world(host_world)).get();
}

std::vector<CaseResult> run_cases(const std::vector<Case>& cases, const RunOptions& o, std::ostream* progress) {
  const std::vector<const Case*> selected = select_cases(cases, o.filter);
  agree_on_case_list(selected, o);
  // (case, backend) pairs: the given backend, or every backend each case lists.
  std::vector<std::pair<const Case*, std::string>> runs;
  for (const Case* c : selected) {
    if (o.backend || !o.pool) runs.emplace_back(c, "");
    else
      for (const auto& b : c->backends) runs.emplace_back(c, b);
  }
  std::vector<CaseResult> results;
  int i = 0;
  if (o.meter) o.meter->begin(static_cast<int>(runs.size()));
  for (const auto& [c, name] : runs) {
    if (name.empty()) {
      results.push_back(run_case(*c, o));
    } else {
      std::string why;
      RunOptions on = o;
      on.backend = o.pool->get(name, why);
      if (on.backend && o.world && o.world->size() > 1) on.device_world = o.pool->device_world(name, *o.world);
      if (on.backend) {
        results.push_back(run_case(*c, on));
      } else {
        CaseResult skip;
        skip.id = c->id;
        skip.file = c->file.string();
        skip.outcome = Outcome::skip;
        skip.reason = "backend '" + name + "' cannot run here: " + why;
        results.push_back(std::move(skip));
      }
      results.back().backend = name;
    }
    if (progress) {
      *progress << progress_line(++i, static_cast<int>(runs.size()), results.back()) << '\n';
      const auto& r = results.back();
      if (r.outcome == Outcome::pass)
        for (const auto& ch : r.checks)
          if (ch.kind == "offload") {
            std::istringstream lines(ch.detail + (ch.timing.empty() ? "" : "\n" + ch.timing));
            for (std::string line; std::getline(lines, line);) *progress << "        " << line << '\n';
          }
      if ((r.outcome == Outcome::fail || r.outcome == Outcome::error) && !r.reason.empty()) {
        std::istringstream lines(r.reason);
        for (std::string line; std::getline(lines, line);) *progress << "        " << line << '\n';
      }
      progress->flush();
    }
    if (o.meter) o.meter->case_done(static_cast<int>(results.size()));
  }
  return results;
}

RunHeader make_header(const RunOptions& o) {
  RunHeader h;
  h.version = kVersion;
  h.git_sha = run_git_sha();
  h.backend = o.backend ? o.backend->name() : "the backends each case lists";
  h.ranks = o.world_size;
  const std::time_t now = std::time(nullptr);
  std::ostringstream os;
  os << std::put_time(std::gmtime(&now), "%Y-%m-%dT%H:%M:%SZ");
  h.started_at = os.str();
  return h;
}

std::vector<MutantResult> run_mutants(const std::vector<Case>& cases, const RunOptions& o, bool all_killers,
                                      const std::vector<std::string>& only, std::ostream& out) {
  for (const auto& name : only) {
    const auto& all = all_faults();
    if (std::none_of(all.begin(), all.end(), [&](const auto& f) { return name == f.name; }))
      throw Error("no mutant named '" + name + "' (`rcts mutants --list` names them)");
  }
  // Only cases that pass cleanly can kill a mutant.
  std::vector<const Case*> selected = select_cases(cases, o.filter), clean;
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

std::string explain_case(const Case& c, Backend& backend, const RunLimits& limits) {
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
    if (m.multi_latent_attention)
      os << "    mla (design §14): q_lora_rank=" << m.q_lora_rank << " kv_lora_rank=" << m.kv_lora_rank
         << " qk_head_dim=" << m.qk_head_dim << " qk_pos_emb_head_dim=" << m.qk_pos_emb_head_dim
         << " v_head_dim=" << m.v_head_dim << " rotary_base=" << m.rotary_base << "\n";
    if (m.gated_delta_net) {
      os << "    layers (G = gated delta net, A = attention; design §15):";
      for (int i = 0; i < m.num_layers; ++i) os << (cfg.gdn_layer(i) ? " G" : " A");
      os << "\n    gdn: key heads=" << m.linear_num_key_heads << " dk=" << m.linear_key_head_dim
         << " value heads=" << m.linear_num_value_heads << " dv=" << m.linear_value_head_dim
         << " conv=" << m.linear_conv_kernel_dim << "\n";
    }
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
      check_run_limits(dry, "case " + c.id + " (" + label + ", dry run for the offload plan)", limits);
      const RunRecord r = execute(dry, backend, c.seed_ranks);
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
  const Config base = case_config(c, nullptr);
  os << "  seeds (design §5) for tp_rank " << c.seed_ranks.tp << ", ep_rank " << c.seed_ranks.ep << ", etp_rank "
     << c.seed_ranks.etp << ": device-default=" << base.run.seed
     << " model-parallel-rng=" << expected_stream_seed("model-parallel-rng", base.run.seed, c.seed_ranks)
     << " expert-parallel-rng=" << expected_stream_seed("expert-parallel-rng", base.run.seed, c.seed_ranks) << "\n";
  const auto& par = base.parallel;
  if (par.tensor_model_parallel_size > 1 || par.expert_model_parallel_size > 1 || par.expert_tensor_parallel_size > 1 ||
      c.ranks != std::vector<int>{1}) {
    for (int w : c.ranks) {
      if (w == 1) continue;
      try {
        os << "\n  process groups at " << w << " ranks (rank order tp-cp-ep-dp-pp, design §8):\n"
           << rcts::describe(make_layout(w, par.tensor_model_parallel_size, par.expert_model_parallel_size,
                                   par.expert_tensor_parallel_size, par.pipeline_model_parallel_size));
      } catch (const std::exception& e) {
        os << "    " << e.what() << "\n";
      }
    }
  }
  describe("baseline", base);
  for (const auto& v : c.variants) describe("variant " + v.name, case_config(c, &v));
  os << "\n  checks (case level; a variant may add its own):\n";
  for (const CheckKind* k : requested_kinds(c.expect)) os << "    " << k->name << ": " << k->summary << "\n";
  for (const auto& v : c.variants)
    for (const CheckKind* k : requested_kinds(v.expect))
      if (!k->requested(c.expect)) os << "    " << k->name << " (variant " << v.name << "): " << k->summary << "\n";
  return os.str();
}

}  // namespace rcts::harness
