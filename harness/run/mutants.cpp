// `rcts mutants`: every compiled-in fault (reference/core/faults.hpp) switched on in
// turn over the cases that pass cleanly; a fault no case fails or errors on survives.
#include <algorithm>
#include <chrono>
#include <iomanip>
#include <ostream>

#include "harness/run/case_agreement.hpp"
#include "harness/run/runner.hpp"
#include "reference/core/faults.hpp"

namespace rcts::harness {

namespace {

bool contains(const std::vector<std::string>& v, const std::string& s) {
  return std::find(v.begin(), v.end(), s) != v.end();
}

}  // namespace

std::vector<MutantResult> run_mutants(const std::vector<Case>& cases, const RunOptions& o, bool all_killers,
                                      const std::vector<std::string>& only, std::ostream& out) {
  for (const auto& name : only) {
    const auto& all = all_faults();
    if (std::none_of(all.begin(), all.end(), [&](const auto& f) { return name == f.name; }))
      throw Error("no mutant named '" + name + "' (`rcts mutants --list` names them)");
  }
  // Only cases that pass cleanly can kill a mutant.
  std::vector<const Case*> selected = select_cases(cases, o.scope.filter), clean;
  agree_on_case_list(selected, o);
  for (const Case* c : selected)
    if (run_case(*c, o).outcome == Outcome::pass) clean.push_back(c);
  out << "mutants: " << clean.size() << " clean cases\n";
  std::vector<MutantResult> results;
  for (const auto& f : all_faults()) {
    if (!only.empty() && !contains(only, std::string(f.name))) continue;
    if (f.min_ranks > o.scope.world_size) {
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

}  // namespace rcts::harness
