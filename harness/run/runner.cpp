#include "harness/run/runner.hpp"

#include <algorithm>
#include <chrono>
#include <ctime>
#include <fstream>
#include <iomanip>
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
#include "reference/config/config_json.hpp"
#include "reference/parallel/wait_deadline.hpp"
#include "reference/config/validate.hpp"

namespace rcts::harness {

namespace fs = std::filesystem;

namespace {

// Writes one run of case c as a format-1 dump under options.sinks.dump_dir.
void dump_record(const Case& c, const RunRecord& r, const std::string& run, const std::string& role,
                 const std::string& of_variant, const RunOptions& o) {
  DumpMeta meta;
  meta.case_id = c.id;
  meta.case_file = c.file.string();
  meta.run = run;
  meta.role = role;
  meta.of_variant = of_variant;
  meta.world_rank = o.scope.world ? o.scope.world->rank() : 0;
  meta.world_size = o.scope.world ? o.scope.world->size() : 1;
  meta.version = std::string(kVersion) + " (" + kGitSha + ")";
  try {
    write_dump(dump_dir_of(*o.sinks.dump_dir, c.id, r.backend, run, meta.world_rank), meta, r);
  } catch (const std::exception& e) {
    if (o.sinks.dump_failure && o.sinks.dump_failure->empty())
      *o.sinks.dump_failure = "case " + c.id + ", run '" + run + "': " + e.what();
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
  if (!o.scope.world || o.scope.world->size() == 1) {
    rc.coords = c.seed_ranks;
    return rc;
  }
  const auto& p = cfg.parallel;
  rc.layout = make_layout(o.scope.world->size(), p.tensor_model_parallel_size, p.expert_model_parallel_size,
                          p.expert_tensor_parallel_size, p.pipeline_model_parallel_size);
  if (!o.scope.records || o.scope.reference)  // dumps need no communication, rcts's reference runs do
    rc.groups.emplace(make_groups(o.scope.device_world ? *o.scope.device_world : *o.scope.world, rc.layout));
  rc.coords = coords_of(rc.layout, o.scope.world->rank());
  return rc;
}

RunRecord run_config(const Config& cfg, const RankContext& rc, const RunOptions& o) {
  RCTS_CHECK(o.scope.backend, "run options name no backend");
  // The MPI communicator moves host bytes; device memory needs the backend's device world.
  RCTS_CHECK(!rc.groups || o.scope.device_world || o.scope.backend->memory().host_accessible(Domain::device),
             "backend '" + o.scope.backend->name() + "' keeps tensors in device memory, which the host communicator cannot "
             "move, and has no device communicator");
  ExecuteOptions eo;
  eo.record_all = o.sinks.dump_dir.has_value() || o.scope.reference.has_value();
  RunRecord r = execute(cfg, *o.scope.backend, rc.coords, rc.groups ? &*rc.groups : nullptr, eo);
  if (auto why = device_pool_disagreement(r)) throw Error(*why);
  return r;
}

// run_config after the resource estimate: a config over the limits never starts.
RunRecord run_within_limits(const Config& cfg, const RankContext& rc, const Case& c, const std::string& label,
                            const RunOptions& o) {
  check_run_limits(cfg, "case " + c.id + " (" + label + ")", o.scope.limits);
  return run_config(cfg, rc, o);
}

// Run `run` of case c (labelled `label` in errors): executed here, or read from the
// record source (and compared with rcts's reference when asked: into `checks`);
// written as a dump when asked.
RunRecord obtain(const Config& cfg, const RankContext& rc, const Case& c, const std::string& run,
                 const std::string& label, const std::string& of_variant, const RunOptions& o,
                 std::vector<CheckResult>& checks) {
  if (o.scope.records) {
    RunRecord r = o.scope.records->record(c, run, cfg, rc.coords);
    if (o.scope.reference)
      checks.push_back(compare_with_reference(run_within_limits(cfg, rc, c, label, o), r, *o.scope.reference, label));
    return r;
  }
  RunRecord r = run_within_limits(cfg, rc, c, label, o);
  if (o.sinks.dump_dir)
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
  return {o.scope.world, o.scope.records ? nullptr : o.scope.backend, o.scope.golden_dir, o.sinks.collect_goldens};
}

}  // namespace

CaseResult run_case_on_this_rank(const Case& c, const RunOptions& o);

CaseResult run_case(const Case& c, const RunOptions& o) {
  CaseResult r = [&] {
    if (!o.scope.world || o.scope.world->size() == 1) return run_case_on_this_rank(c, o);
    if (!o.scope.agreement) return merge_across_ranks(run_case_on_this_rank(c, o), *o.scope.world);
    // Every rank checks that all ranks can run the same case before any collective.
    if (auto refused = agree_before_case(c, o)) return *refused;
    const double limit = o.scope.agreement->case_timeout_s();
    std::ostringstream from;
    from << "RCTS_CASE_TIMEOUT = " << limit << " s";
    const WaitDeadlineScope deadline(limit, "case " + c.id, from.str());
    return agree_after_case(run_case_on_this_rank(c, o), o);
  }();
  r.backend = o.scope.backend ? o.scope.backend->name() : "";
  if (o.sinks.report) o.sinks.report->finish_case(c, r);
  return r;
}

namespace {

using Firsts = std::vector<std::pair<std::string, Divergence>>;

// Why the case does not run here (it lists other backends or other world sizes).
std::optional<std::string> skip_reason(const Case& c, const RunOptions& o) {
  if (!o.scope.records && !case_runs_on(c, *o.scope.backend)) {
    std::string listed;
    for (const auto& b : c.backends) listed += (listed.empty() ? "" : ", ") + b;
    return "case runs on " + listed + ", not on '" + o.scope.backend->name() + "'";
  }
  if (std::find(c.ranks.begin(), c.ranks.end(), o.scope.world_size) == c.ranks.end()) {
    std::string r;
    for (int n : c.ranks) r += (r.empty() ? "" : ", ") + std::to_string(n);
    return "needs " + r + " ranks, this run has " + std::to_string(o.scope.world_size);
  }
  return std::nullopt;
}

// What rcts does not implement of the baseline or a variant, or nothing.
std::optional<std::string> unsupported_reason(const Case& c, const Config& base_cfg, const RunOptions& o) {
  // The features the backend running it has (e.g. a fused attention for flash_attention).
  const Supported gate = o.scope.backend ? supported_on(*o.scope.backend) : Supported{};
  auto unsupported = check_supported(base_cfg, gate);
  if (unsupported.empty())
    for (const auto& v : c.variants) {
      auto more = check_supported(apply_overrides(base_cfg, v.patch, c.file.string(), variant_config_path(c, v.name)), gate);
      unsupported.insert(unsupported.end(), more.begin(), more.end());
    }
  if (unsupported.empty()) return std::nullopt;
  return "not implemented yet: " + unsupported.front().message;
}

// Runs the case's baseline and variants and their checks into res.checks, noting each
// failing run's first divergence in `firsts`. True when res is final as it stands (a
// skip for what is not implemented, or a --golden-only run).
bool run_and_check(const Case& c, const RunOptions& o, CaseResult& res, Firsts& firsts) {
  const CheckEnv env = check_env(o);
  const auto kinds = requested_kinds(c.expect);
  if (c.expect.config_error) {
    // Judged on the config alone: nothing runs.
    static const RunRecord nothing;
    static const GroupLayout one_rank;
    const CheckContext x{c, env, false, nothing, one_rank, nullptr, nullptr, nullptr, {}};
    for (const CheckKind* k : kinds)
      if (k->runs_without_execution) k->on_case_end(x, res.checks);
    return false;
  }
  Config base_cfg = case_config(c, nullptr);
  if (auto why = unsupported_reason(c, base_cfg, o)) {
    res.outcome = Outcome::skip;
    res.reason = *why;
    return true;
  }
  const RankContext base_rc = rank_context(base_cfg, c, o);
  const RunRecord base = obtain(base_cfg, base_rc, c, "baseline", "baseline", "", o, res.checks);
  if (o.sinks.report) o.sinks.report->add_run(base, "baseline");
  const bool multi = o.scope.world && o.scope.world->size() > 1;
  if (o.scope.world && o.scope.world->rank() == o.hooks.test_throw_on_rank)
    throw Error("injected failure (RCTS_TEST_THROW_ON_RANK)");
  if (o.scope.world && o.scope.world->rank() == o.hooks.test_deadlock_on_rank) {
    char never = 0;  // a message no rank sends: the planted deadlock
    o.scope.world->recv(&never, 1, (o.scope.world->rank() + 1) % o.scope.world->size());
  }
  CheckContext x{c, env, multi, base, base_rc.layout, nullptr, nullptr, nullptr, {}};
  if (o.scope.golden_only) {
    if (const CheckKind* g = find_check_kind("golden"); g->requested(c.expect)) g->on_case_end(x, res.checks);
    res.outcome = combine(res.checks);
    return true;
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
    if (o.sinks.report) o.sinks.report->add_run(run, v.name);
    CheckContext vx = x;
    vx.variant = &v;
    vx.run = &run;
    vx.layout = &vrc.layout;
    vx.rerun = [&](const Config& cfg, const std::string& label) {
      return obtain(cfg, vrc, c, label, label, v.name, o, res.checks);
    };
    const size_t before = res.checks.size();
    for (const auto& k : check_kinds())
      if (k.on_variant && (k.requested(c.expect) || k.requested(v.expect)))
        run_check_pass(k, k.on_variant, vx, res.checks);
    place_failures(base, run, v.name, res.checks, before, firsts);
  }
  for (const CheckKind* k : kinds)
    if (k->on_case_end) run_check_pass(*k, k->on_case_end, x, res.checks);
  return false;
}

// The verdict after the checks: a case that checks nothing errors; a failure leads
// with its cause; an xfail case turns failures into xfail and a pass into a failure.
void settle_outcome(const Case& c, const Firsts& firsts, CaseResult& res) {
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
}

}  // namespace

CaseResult run_case_on_this_rank(const Case& c, const RunOptions& o) {
  CaseResult res;
  res.id = c.id;
  res.file = c.file.string();
  const auto t0 = std::chrono::steady_clock::now();
  auto finish = [&]() -> CaseResult {
    res.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    return res;
  };
  RCTS_CHECK(o.scope.backend || o.scope.records, "run options name no backend");
  if (auto why = skip_reason(c, o)) {
    res.outcome = Outcome::skip;
    res.reason = *why;
    return finish();
  }
  Firsts firsts;  // each failing run's first divergence, for a reason that leads with the cause
  try {
    if (run_and_check(c, o, res, firsts)) return finish();
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
  settle_outcome(c, firsts, res);
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
  const std::vector<const Case*> selected = select_cases(cases, o.scope.filter);
  agree_on_case_list(selected, o);
  // (case, backend) pairs: the given backend, or every backend each case lists.
  std::vector<std::pair<const Case*, std::string>> runs;
  for (const Case* c : selected) {
    if (o.scope.backend || !o.scope.pool) runs.emplace_back(c, "");
    else
      for (const auto& b : c->backends) runs.emplace_back(c, b);
  }
  std::vector<CaseResult> results;
  int i = 0;
  if (o.sinks.meter) o.sinks.meter->begin(static_cast<int>(runs.size()));
  for (const auto& [c, name] : runs) {
    if (name.empty()) {
      results.push_back(run_case(*c, o));
    } else {
      std::string why;
      RunOptions on = o;
      on.scope.backend = o.scope.pool->get(name, why);
      if (on.scope.backend && o.scope.world && o.scope.world->size() > 1)
        on.scope.device_world = o.scope.pool->device_world(name, *o.scope.world);
      if (on.scope.backend) {
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
    if (o.sinks.meter) o.sinks.meter->case_done(static_cast<int>(results.size()));
  }
  return results;
}

RunHeader make_header(const RunOptions& o) {
  RunHeader h;
  h.version = kVersion;
  h.git_sha = run_git_sha();
  h.backend = o.scope.backend ? o.scope.backend->name() : "the backends each case lists";
  h.ranks = o.scope.world_size;
  const std::time_t now = std::time(nullptr);
  std::ostringstream os;
  os << std::put_time(std::gmtime(&now), "%Y-%m-%dT%H:%M:%SZ");
  h.started_at = os.str();
  return h;
}

}  // namespace rcts::harness
