// regen-golden (design §10): the only writer of golden files, all or nothing. Every
// selected golden case runs with all its checks at this run's world size; its
// baseline digests are collected instead of being compared. Only when every case
// passes are the files written, into a copy of the golden directory that takes its
// place in one step, so a failure (a failing check, a full disk, kill -9) leaves every
// golden as it was.
// It prints one line per new or changed file (golden_review.hpp); --check prints the
// same and writes nothing, failing when any file would change.
//
// At one rank every golden case's baseline is also compared with the f64 oracle
// (oracle/compare.hpp) where the oracle applies: one that disagrees is refused like a
// failing check, so a regen cannot bless a math bug that every variant shares. The
// review line says what the oracle found (or why it does not apply).
#include <algorithm>
#include <cstring>
#include <fstream>
#include <iomanip>
#include <memory>
#include <ostream>
#include <sstream>

#include "harness/run/case_agreement.hpp"
#include "harness/io/atomic_file.hpp"
#include "harness/golden/golden.hpp"
#include "harness/golden/golden_review.hpp"
#include "harness/run/runner.hpp"
#include "oracle/compare.hpp"

namespace rcts::harness {

namespace fs = std::filesystem;

namespace {

void print_indented(std::ostream& out, const std::string& text) {
  std::istringstream lines(text);
  for (std::string line; std::getline(lines, line);) out << "        " << line << '\n';
}

// What writing `now` to `file` changes, in one line: empty when the file already holds it.
std::string change_to(const fs::path& file, const Golden& now, std::string& verb) {
  std::ifstream in(file);
  if (!in) {
    verb = "new";
    return "new golden file";
  }
  try {
    const Golden old = golden_from_json(nlohmann::json::parse(in), file.string());
    verb = "changed";
    return golden_changes(old, now).empty() ? std::string() : golden_review(old, now);
  } catch (const std::exception& e) {
    verb = "replaced";  // e.g. truncated by an interrupted write
    return std::string("the old file is not a valid golden: ") + e.what();
  }
}

// The f64 oracle's word on a golden case's baseline at this world size: "" when it
// agrees or does not apply (`summary` says which), else why it disagrees.
std::string oracle_disagreement(const Case& c, const RunOptions& o, std::string& summary) {
  if (o.scope.world_size != 1) {
    summary = "f64 oracle: not applicable at " + std::to_string(o.scope.world_size) + " ranks";
    return "";
  }
  const oracle::OraclePlan plan = oracle::plan_oracle_comparison(c.id, case_config(c, nullptr), c.seed_ranks);
  if (!plan.skip.empty()) {
    summary = "f64 oracle: not applicable (" + plan.skip + ")";
    return "";
  }
  const RunRecord ref = execute(plan.config, *o.scope.backend, c.seed_ranks);
  const oracle::OracleComparison cmp = oracle::compare_with_oracle(plan.id, plan.config, ref, plan.run);
  if (cmp.failures.empty()) {
    summary = "f64 oracle agrees" + std::string(plan.note.empty() ? "" : " (as f32)");
    return "";
  }
  summary = "f64 oracle DISAGREES";
  std::string why = cmp.failures.front();  // "<id>: <what> differs from the f64 oracle by ..."
  if (cmp.failures.size() > 1) why += " (and " + std::to_string(cmp.failures.size() - 1) + " more)";
  return why;
}

}  // namespace

namespace {

// The selected cases that keep a golden file; none selected, or none of them keeping
// one, is an error.
std::vector<const Case*> golden_selection(const std::vector<Case>& cases, const std::string& filter) {
  std::vector<const Case*> selected, golden_cases;
  for (const auto& c : cases)
    if (filter.empty() || glob_match(filter, c.id)) selected.push_back(&c);
  if (selected.empty())
    throw Error(filter.empty() ? std::string("regen-golden: the given paths hold no case")
                               : "regen-golden: no case matches --filter '" + filter + "' (see `rcts list`)");
  for (const Case* c : selected)
    if (c->expect.golden) golden_cases.push_back(c);
  if (golden_cases.empty())
    throw Error("regen-golden: none of the " + std::to_string(selected.size()) +
                " selected case(s) expects a golden file");
  return golden_cases;
}

// Every changed file is written into a copy of the backend's golden directory, which
// then takes the directory's place in one step (put_directory): a run killed at any
// moment leaves the old set or the new one, never a mix.
void write_golden_set(const fs::path& golden_dir, const fs::path& set_dir,
                      const std::vector<std::pair<fs::path, std::string>>& changed) {
  try {
    std::error_code ec;
    fs::create_directories(golden_dir, ec);
    if (ec) throw Error("cannot create " + golden_dir.string() + ": " + ec.message());
    sweep_leftovers(set_dir, "regen");
    const fs::path staging = make_sibling_dir(set_dir, "regen", "regen-golden " + set_dir.string());
    struct Cleanup {
      fs::path dir;
      ~Cleanup() {
        std::error_code e;
        fs::remove_all(dir, e);
      }
    } cleanup{staging};
    if (fs::is_directory(set_dir)) {
      fs::copy(set_dir, staging, fs::copy_options::recursive | fs::copy_options::copy_symlinks, ec);
      if (ec) throw Error("cannot copy " + set_dir.string() + " to " + staging.string() + ": " + ec.message());
    }
    for (const auto& [file, text] : changed) {
      const fs::path in_staging = staging / fs::relative(file, set_dir);
      fs::create_directories(in_staging.parent_path(), ec);
      write_file_atomic(in_staging, text, /*durable=*/true, /*sweep=*/false);
    }
    bool exchanged = false;
    if (const int err = put_directory(staging, set_dir, /*replace=*/true, exchanged); err != 0)
      throw Error("cannot put " + staging.string() + " in the place of " + set_dir.string() + ": " +
                  std::strerror(err));
    if (!exchanged) cleanup.dir.clear();  // staging is set_dir now
  } catch (const Error& e) {
    throw Error(e.message() + "\nno golden file was written");
  }
}

}  // namespace

std::vector<fs::path> regen_leftovers(const fs::path& golden_dir) {
  std::vector<fs::path> out;
  std::error_code ec;
  for (fs::directory_iterator it(golden_dir, ec), end; !ec && it != end; it.increment(ec)) {
    const std::string name = it->path().filename().string();
    if (name.size() > 1 && name[0] == '.' && name.find(".regen-", 1) != std::string::npos) out.push_back(it->path());
  }
  std::sort(out.begin(), out.end());
  return out;
}

int regen_golden(const std::vector<Case>& cases, const RunOptions& o, std::ostream& out, bool check_only) {
  RCTS_CHECK(o.scope.backend, "regen-golden: no backend");
  const Backend& backend = *o.scope.backend;
  if (!o.scope.world || o.scope.world->rank() == 0)  // before anything can fail or return
    for (const auto& left : regen_leftovers(o.scope.golden_dir)) {
      const std::string name = left.filename().string();  // ".<set>.regen-<host>-<pid>-XXXXXX"
      sweep_leftovers(o.scope.golden_dir / name.substr(1, name.find(".regen-", 1) - 1), "regen");
    }
  RCTS_CHECK(backend.has_goldens(), "backend '" + backend.name() + "' keeps no golden files (its bits depend on "
                                    "the GPU model and library versions)");
  RCTS_CHECK(backend.golden_name() == backend.name(),
             "backend '" + backend.name() + "' reproduces the golden files of '" + backend.golden_name() +
                 "': regenerate them on '" + backend.golden_name() + "'");
  const std::vector<const Case*> golden_cases = golden_selection(cases, o.scope.filter);
  agree_on_case_list(golden_cases, o);

  // Run every case first; nothing is written before all of them passed.
  std::map<std::string, Golden> goldens;
  RunOptions ro = o;
  ro.sinks.collect_goldens = &goldens;
  ro.scope.golden_only = false;
  ro.sinks.dump_dir.reset();
  std::vector<CaseResult> refused;
  const int n = static_cast<int>(golden_cases.size());
  for (int i = 0; i < n; ++i) {
    const CaseResult r = run_case(*golden_cases[static_cast<size_t>(i)], ro);
    out << progress_line(i + 1, n, r) << '\n';
    if (r.outcome == Outcome::fail || r.outcome == Outcome::error || r.outcome == Outcome::xfail) {
      print_indented(out, r.reason);
      refused.push_back(r);
    }
    out.flush();
  }
  if (!refused.empty()) {
    out << "refusing to write any golden file: " << refused.size() << " case(s) fail their checks at "
        << o.scope.world_size << " rank(s):\n";
    for (const auto& r : refused) out << "  " << r.id << ": " << short_detail(r, 100) << '\n';
    return 1;
  }
  // Every case passed its checks: now the oracle (design §10). Every rank computes the
  // same verdict (the oracle runs at one rank only).
  std::map<std::string, std::string> oracle_summary;
  std::vector<std::pair<std::string, std::string>> disagree;
  for (const Case* c : golden_cases) {
    if (!goldens.count(c->id)) continue;  // skipped at this world size
    std::string why = oracle_disagreement(*c, o, oracle_summary[c->id]);
    if (!why.empty()) disagree.emplace_back(c->id, std::move(why));
  }
  if (!disagree.empty()) {
    out << "refusing to write any golden file: " << disagree.size()
        << " case(s) disagree with the f64 oracle (oracle/compare.hpp; a golden must not bless a math bug):\n";
    for (const auto& [id, why] : disagree) out << "  " << why << '\n';
    return 1;
  }
  if (goldens.empty()) {
    out << "no golden case runs at " << o.scope.world_size << " rank(s); 0 golden file(s) written\n";
    return 0;
  }
  if (o.scope.world && o.scope.world->rank() != 0) return 0;  // rank 0 holds every rank's digests and writes

  const fs::path set_dir = o.scope.golden_dir / o.scope.backend->golden_name();
  std::vector<std::pair<fs::path, std::string>> changed;  // file in set_dir, new text
  int unchanged = 0, would_change = 0;
  for (const Case* c : golden_cases) {
    const auto it = goldens.find(c->id);
    if (it == goldens.end()) continue;  // skipped at this world size
    const fs::path file = golden_path(o.scope.golden_dir, o.scope.backend->golden_name(), c->id, o.scope.world_size);
    std::string verb;
    const std::string change = change_to(file, it->second, verb);
    if (change.empty()) {
      ++unchanged;
      continue;
    }
    out << std::left << std::setw(11) << verb << file.string() << ": " << change << "; "
        << oracle_summary[c->id] << '\n';
    ++would_change;
    changed.emplace_back(file, golden_to_json(it->second).dump(1) + "\n");
  }
  if (!check_only && !changed.empty()) write_golden_set(o.scope.golden_dir, set_dir, changed);
  if (unchanged) out << unchanged << " golden file(s) unchanged\n";
  if (check_only) {
    out << (would_change ? std::to_string(would_change) + " golden file(s) would change; --check wrote nothing\n"
                         : std::string("every golden file is up to date; --check wrote nothing\n"));
    return would_change ? 1 : 0;
  }
  out << changed.size() << " golden file(s) written\n";
  return 0;
}

}  // namespace rcts::harness
