#include "harness/expectations/expectation_update.hpp"

#include "harness/expectations/case_pattern.hpp"

#include <algorithm>
#include <optional>
#include <set>
#include <sstream>

namespace rcts::harness {

namespace {

using Pair = std::pair<std::string, int>;  // (case id, world size)

std::string list_text(const std::vector<std::string>& v) {
  std::string s;
  for (const auto& x : v) s += (s.empty() ? "" : ", ") + x;
  return "[" + s + "]";
}

std::string first_line(const std::string& s) { return s.substr(0, s.find('\n')); }

// Every (case, world size) of the set the entry could match.
std::set<Pair> coverage(const ExpectationEntry& e, const std::vector<CaseInfo>& cases) {
  std::set<Pair> out;
  for (const auto& c : cases)
    if (e.matches(c.id))
      for (int w : c.ranks)
        if (e.applies_at(w)) out.insert({c.id, w});
  return out;
}

std::vector<std::string> split_lines(const std::string& s) {
  std::vector<std::string> out;
  std::istringstream in(s);
  for (std::string line; std::getline(in, line);) out.push_back(line);
  return out;
}

}  // namespace

ExpectationUpdate propose_update(const ExpectationComparison& cmp, const std::vector<CaseInfo>& cases,
                                 const std::vector<CaseResult>& results) {
  const ExpectationFile& f = *cmp.file;
  const int w = cmp.world_size;
  ExpectationUpdate up;
  std::vector<bool> drop(f.entries.size(), false);
  std::vector<ExpectationEntry> entries = f.entries;
  std::vector<ExpectationEntry> added;
  std::set<std::string> seen;
  auto ranks_of = [&](const std::string& id) {
    const auto c = std::find_if(cases.begin(), cases.end(), [&](const CaseInfo& x) { return x.id == id; });
    return c != cases.end() && c->ranks == std::vector<int>{w} ? std::vector<int>{} : std::vector<int>{w};
  };
  // The entry covers exactly this case at this world size: safe to edit.
  auto owns_only = [&](const ExpectationEntry& e, const std::string& id) {
    return coverage(e, cases) == std::set<Pair>{{id, w}};
  };
  // A filtered run cannot see every case a glob covers: it never drops one.
  const bool may_drop_globs = !cmp.subset;
  std::set<size_t> unpinned_globs;
  for (size_t i = 0; i < results.size(); ++i) {
    const CaseResult& r = results[i];
    const ResultVerdict& v = cmp.results.at(i);
    if (v.verdict == Verdict::expected_fail && v.entry) {
      // An expected failure whose entry pins nothing yet: pin what was seen.
      ExpectationEntry& e = entries.at(*v.entry);
      if (!e.signature.empty()) continue;
      if (is_case_glob(e.case_pattern) || !owns_only(e, r.id)) {
        if (unpinned_globs.insert(e.index).second)
          up.by_hand.push_back(e.label() + ": pins no failure signature; an entry per case and world size would");
        continue;
      }
      e.signature = failure_signature(r);
      up.changed.push_back(r.id + ": pinned the signature of its expected failure (the reason stands)");
      continue;
    }
    if (!verdict_fails(v.verdict, true) || !seen.insert(r.id).second) continue;
    const auto failed = failing_checks(r);
    const bool can_fail = r.outcome != Outcome::error && !failed.empty();
    const bool raised = r.outcome == Outcome::error && r.reason.rfind(kImplementationRaised, 0) == 0;
    // The entry expecting what was seen (nullopt: an error, which is no expectation).
    auto expect_seen = [&](ExpectationEntry e) -> std::optional<ExpectationEntry> {
      e.checks.clear();
      e.signature.clear();
      e.reason_pattern.clear();
      if (v.verdict == Verdict::unexpected_skip || (r.outcome == Outcome::skip && v.verdict == Verdict::regression)) {
        e.outcome = ExpectedOutcome::skip;
      } else if (raised) {
        e.outcome = ExpectedOutcome::error;
      } else if (can_fail) {
        e.outcome = ExpectedOutcome::fail;
        e.checks = failed;
        if (!is_case_glob(e.case_pattern)) e.signature = failure_signature(r);
        return e;
      } else {
        return std::nullopt;
      }
      e.reason_pattern = literal_reason_pattern(first_line(r.reason));
      return e;
    };
    auto seen_text = [](const ExpectationEntry& e) {
      return e.outcome == ExpectedOutcome::fail ? "fail " + list_text(e.checks) : std::string(expected_outcome_name(e.outcome));
    };
    const std::string todo = std::string(kReasonPlaceholder) + " " + first_line(r.reason);
    if (!v.entry) {
      ExpectationEntry fresh;
      fresh.case_pattern = r.id;
      fresh.ranks = ranks_of(r.id);
      auto seen_entry = expect_seen(fresh);
      if (!seen_entry) {
        up.by_hand.push_back(r.id + ": " + v.note + ": an error is no expectation; fix the run");
        continue;
      }
      ExpectationEntry& e = *seen_entry;
      e.reason = todo;
      added.push_back(e);
      up.added.push_back(r.id + ": expect " + seen_text(e) +
                         " (" + std::string(verdict_name(v.verdict)) + "); give the reason");
      continue;
    }
    ExpectationEntry& e = entries.at(*v.entry);
    if (v.verdict == Verdict::unexpected_pass) {
      // Removed when every (case, world size) it covers was judged here and passed.
      bool all = true;
      for (const auto& [id, size] : coverage(e, cases)) {
        bool found = false, passed = true;
        for (size_t j = 0; j < results.size(); ++j)
          if (results[j].id == id && size == w) {
            found = true;
            passed = passed && cmp.results[j].verdict == Verdict::unexpected_pass;
          }
        all = all && found && passed;
      }
      if (all && !may_drop_globs && is_case_glob(e.case_pattern)) {
        up.by_hand.push_back(e.label() + ": " + r.id + " passes, but a filtered run does not see every case the glob "
                             "covers: run without --filter, or narrow it");
      } else if (all && !drop[e.index]) {
        drop[e.index] = true;
        up.removed.push_back(e.label() + ": " + r.id + " passes (" + e.reason + ")");
      } else if (!all) {
        up.by_hand.push_back(e.label() + ": " + r.id + " passes at " + std::to_string(w) +
                             " rank(s), but the entry covers more than this run judged: narrow it");
      }
      continue;
    }
    if (!owns_only(e, r.id)) {
      up.by_hand.push_back(e.label() + ": " + r.id + ": " + v.note + ": the entry covers more cases or world sizes; edit it");
      continue;
    }
    auto seen_entry = expect_seen(e);
    if (!seen_entry) {
      up.by_hand.push_back(e.label() + ": " + r.id + ": " + v.note + ": an error is no expectation; fix the run");
      continue;
    }
    e = *seen_entry;
    e.reason = std::string(kReasonPlaceholder) + " was: " + e.reason;
    up.changed.push_back(r.id + ": " + v.note + "; check the reason");
  }
  for (const auto& e : f.entries) {
    if (cmp.entries[e.index].status != EntryStatus::stale || drop[e.index]) continue;
    if (!may_drop_globs && is_case_glob(e.case_pattern)) {
      up.by_hand.push_back(e.label() + ": matches no selected case at the world sizes it names, but may match "
                           "cases outside --filter: run without it");
      continue;
    }
    drop[e.index] = true;
    up.removed.push_back(e.label() + ": matches no case (" + e.reason + ")");
  }
  up.proposed = f;
  up.proposed.entries.clear();
  for (const auto& e : entries)
    if (!drop[e.index]) up.proposed.entries.push_back(e);
  for (auto& e : added) up.proposed.entries.push_back(e);
  for (size_t i = 0; i < up.proposed.entries.size(); ++i) up.proposed.entries[i].index = i;
  return up;
}

// Longest common subsequence of lines, then hunks with three lines of context.
std::string unified_diff(const std::string& a, const std::string& b, const std::string& a_name,
                         const std::string& b_name) {
  const auto x = split_lines(a), y = split_lines(b);
  const size_t n = x.size(), m = y.size();
  std::vector<std::vector<int>> lcs(n + 1, std::vector<int>(m + 1, 0));
  for (size_t i = n; i-- > 0;)
    for (size_t j = m; j-- > 0;)
      lcs[i][j] = x[i] == y[j] ? lcs[i + 1][j + 1] + 1 : std::max(lcs[i + 1][j], lcs[i][j + 1]);
  struct Op {
    char tag;
    size_t i, j;  // positions in x and y before the op
  };
  std::vector<Op> ops;
  size_t i = 0, j = 0;
  while (i < n || j < m) {
    if (i < n && j < m && x[i] == y[j]) {
      ops.push_back({' ', i++, j++});
    } else if (i < n && (j == m || lcs[i + 1][j] >= lcs[i][j + 1])) {
      ops.push_back({'-', i++, j});  // removals before additions, as diff -u prints them
    } else {
      ops.push_back({'+', i, j++});
    }
  }
  std::ostringstream os;
  constexpr size_t kContext = 3;
  size_t k = 0;
  bool any = false;
  while (k < ops.size()) {
    if (ops[k].tag == ' ') {
      ++k;
      continue;
    }
    // A hunk: from kContext before this change to kContext after the last change
    // that lies within 2 * kContext of the previous one.
    const size_t begin = k >= kContext ? k - kContext : 0;
    size_t end = k;
    for (size_t q = k; q < ops.size(); ++q) {
      if (ops[q].tag != ' ') end = q;
      else if (q - end > 2 * kContext) break;
    }
    const size_t stop = std::min(ops.size(), end + kContext + 1);
    if (!any) os << "--- " << a_name << "\n+++ " << b_name << "\n";
    any = true;
    size_t a_len = 0, b_len = 0;
    for (size_t q = begin; q < stop; ++q) {
      if (ops[q].tag != '+') ++a_len;
      if (ops[q].tag != '-') ++b_len;
    }
    os << "@@ -" << (a_len ? ops[begin].i + 1 : ops[begin].i) << "," << a_len << " +"
       << (b_len ? ops[begin].j + 1 : ops[begin].j) << "," << b_len << " @@\n";
    for (size_t q = begin; q < stop; ++q) {
      const auto& op = ops[q];
      os << op.tag << (op.tag == '+' ? y[op.j] : x[op.i]) << "\n";
    }
    k = stop;
  }
  return os.str();
}

}  // namespace rcts::harness
