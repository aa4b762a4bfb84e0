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

// The entry `e` rewritten to expect what result `r` (its verdict `v`) showed: a skip, a
// raise, or failing checks (pinned by their signature where `e` names one case); nullopt
// for any other error, which is no expectation. Its reason is the caller's to write.
std::optional<ExpectationEntry> expecting_what_was_seen(ExpectationEntry e, const CaseResult& r,
                                                       const ResultVerdict& v) {
  const auto failed = failing_checks(r);
  const bool can_fail = r.outcome != Outcome::error && !failed.empty();
  const bool raised = r.outcome == Outcome::error && r.reason.rfind(kImplementationRaised, 0) == 0;
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
}

std::string outcome_text(const ExpectationEntry& e) {
  return e.outcome == ExpectedOutcome::fail ? "fail " + list_text(e.checks)
                                            : std::string(expected_outcome_name(e.outcome));
}

// One proposal under construction: the file's entries as edited so far, those to drop,
// those to add, and the update's lines. One method per kind of difference a result shows.
class Proposal {
 public:
  Proposal(const ExpectationComparison& cmp, const std::vector<CaseInfo>& cases,
           const std::vector<CaseResult>& results)
      : cmp_(cmp), file_(*cmp.file), w_(cmp.world_size), cases_(cases), results_(results),
        entries_(file_.entries), drop_(file_.entries.size(), false) {}

  // What result `i` asks of the file, if anything.
  void take(size_t i) {
    const CaseResult& r = results_[i];
    const ResultVerdict& v = cmp_.results.at(i);
    if (v.verdict == Verdict::expected_fail && v.entry) return pin_signature(entries_.at(*v.entry), r);
    if (!verdict_fails(v.verdict, true) || !seen_.insert(r.id).second) return;
    if (!v.entry) return add_entry(r, v);
    ExpectationEntry& e = entries_.at(*v.entry);
    if (v.verdict == Verdict::unexpected_pass) return drop_passed(e, r);
    rewrite_entry(e, r, v);
  }

  // Entries matching no case: dropped, except a glob in a filtered run.
  void drop_stale() {
    for (const auto& e : file_.entries) {
      if (cmp_.entries[e.index].status != EntryStatus::stale || drop_[e.index]) continue;
      if (filtered() && is_case_glob(e.case_pattern)) {
        up_.by_hand.push_back(e.label() + ": matches no selected case at the world sizes it names, but may match "
                              "cases outside --filter: run without it");
        continue;
      }
      drop_[e.index] = true;
      up_.removed.push_back(e.label() + ": matches no case (" + e.reason + ")");
    }
  }

  // The file as proposed: the kept entries in their order, then the added ones.
  ExpectationUpdate finish() && {
    up_.proposed = file_;
    up_.proposed.entries.clear();
    for (const auto& e : entries_)
      if (!drop_[e.index]) up_.proposed.entries.push_back(e);
    for (auto& e : added_) up_.proposed.entries.push_back(e);
    for (size_t i = 0; i < up_.proposed.entries.size(); ++i) up_.proposed.entries[i].index = i;
    return std::move(up_);
  }

 private:
  // A filtered run cannot see every case a glob covers: it never drops one.
  bool filtered() const { return cmp_.subset; }

  // The entry covers exactly this case at this world size: safe to edit.
  bool owns_only(const ExpectationEntry& e, const std::string& id) const {
    return coverage(e, cases_) == std::set<Pair>{{id, w_}};
  }

  // Every (case, world size) the entry covers was judged by this run, and passed.
  bool every_covered_pair_passed(const ExpectationEntry& e) const {
    for (const auto& [id, size] : coverage(e, cases_)) {
      bool found = false;
      for (size_t j = 0; j < results_.size(); ++j)
        if (results_[j].id == id && size == w_) {
          found = true;
          if (cmp_.results[j].verdict != Verdict::unexpected_pass) return false;
        }
      if (!found) return false;
    }
    return true;
  }

  // A new entry's ranks: none where the case runs at this world size only.
  std::vector<int> fresh_ranks(const std::string& id) const {
    const auto c = std::find_if(cases_.begin(), cases_.end(), [&](const CaseInfo& x) { return x.id == id; });
    return c != cases_.end() && c->ranks == std::vector<int>{w_} ? std::vector<int>{} : std::vector<int>{w_};
  }

  // An expected failure whose entry pins nothing yet: pin what was seen, where the entry
  // is this case's alone.
  void pin_signature(ExpectationEntry& e, const CaseResult& r) {
    if (!e.signature.empty()) return;
    if (is_case_glob(e.case_pattern) || !owns_only(e, r.id)) {
      if (unpinned_.insert(e.index).second)
        up_.by_hand.push_back(e.label() + ": pins no failure signature; an entry per case and world size would");
      return;
    }
    e.signature = failure_signature(r);
    up_.changed.push_back(r.id + ": pinned the signature of its expected failure (the reason stands)");
  }

  // A difference no entry expected: an entry expecting what was seen, its reason a placeholder.
  void add_entry(const CaseResult& r, const ResultVerdict& v) {
    ExpectationEntry fresh;
    fresh.case_pattern = r.id;
    fresh.ranks = fresh_ranks(r.id);
    auto e = expecting_what_was_seen(fresh, r, v);
    if (!e) {
      up_.by_hand.push_back(r.id + ": " + v.note + ": an error is no expectation; fix the run");
      return;
    }
    e->reason = std::string(kReasonPlaceholder) + " " + first_line(r.reason);
    up_.added.push_back(r.id + ": expect " + outcome_text(*e) + " (" + std::string(verdict_name(v.verdict)) +
                        "); give the reason");
    added_.push_back(*std::move(e));
  }

  // An unexpected pass: the entry is dropped when everything it covers passed here.
  void drop_passed(const ExpectationEntry& e, const CaseResult& r) {
    const bool all = every_covered_pair_passed(e);
    if (all && filtered() && is_case_glob(e.case_pattern)) {
      up_.by_hand.push_back(e.label() + ": " + r.id + " passes, but a filtered run does not see every case the glob "
                            "covers: run without --filter, or narrow it");
    } else if (all && !drop_[e.index]) {
      drop_[e.index] = true;
      up_.removed.push_back(e.label() + ": " + r.id + " passes (" + e.reason + ")");
    } else if (!all) {
      up_.by_hand.push_back(e.label() + ": " + r.id + " passes at " + std::to_string(w_) +
                            " rank(s), but the entry covers more than this run judged: narrow it");
    }
  }

  // Any other difference: the entry, where it is this case's alone, rewritten to expect
  // what was seen, its old reason kept behind the placeholder.
  void rewrite_entry(ExpectationEntry& e, const CaseResult& r, const ResultVerdict& v) {
    if (!owns_only(e, r.id)) {
      up_.by_hand.push_back(e.label() + ": " + r.id + ": " + v.note +
                            ": the entry covers more cases or world sizes; edit it");
      return;
    }
    auto seen = expecting_what_was_seen(e, r, v);
    if (!seen) {
      up_.by_hand.push_back(e.label() + ": " + r.id + ": " + v.note + ": an error is no expectation; fix the run");
      return;
    }
    e = *std::move(seen);
    e.reason = std::string(kReasonPlaceholder) + " was: " + e.reason;
    up_.changed.push_back(r.id + ": " + v.note + "; check the reason");
  }

  const ExpectationComparison& cmp_;
  const ExpectationFile& file_;
  const int w_;
  const std::vector<CaseInfo>& cases_;
  const std::vector<CaseResult>& results_;
  std::vector<ExpectationEntry> entries_;  // the file's, as edited
  std::vector<bool> drop_;                 // by entry index
  std::vector<ExpectationEntry> added_;
  std::set<std::string> seen_;  // case ids whose difference was taken (the first result of each)
  std::set<size_t> unpinned_;   // entries already named as pinning no signature
  ExpectationUpdate up_;
};

}  // namespace

ExpectationUpdate propose_update(const ExpectationComparison& cmp, const std::vector<CaseInfo>& cases,
                                 const std::vector<CaseResult>& results) {
  Proposal p(cmp, cases, results);
  for (size_t i = 0; i < results.size(); ++i) p.take(i);
  p.drop_stale();
  return std::move(p).finish();
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
