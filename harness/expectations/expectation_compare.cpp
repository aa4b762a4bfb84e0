#include "harness/expectations/expectation_compare.hpp"

#include "harness/cases/case.hpp"
#include "harness/expectations/case_pattern.hpp"

#include <algorithm>
#include <iterator>
#include <cctype>
#include <sstream>

namespace rcts::harness {

using nlohmann::json;

namespace {

constexpr Verdict kVerdicts[] = {Verdict::pass,       Verdict::expected_fail,   Verdict::expected_skip,
                                 Verdict::expected_error, Verdict::xfail,      Verdict::not_applicable,  Verdict::regression,
                                 Verdict::unexpected_pass, Verdict::different_failure, Verdict::unexpected_skip};

std::string list_text(const std::vector<std::string>& v) {
  std::string s;
  for (const auto& x : v) s += (s.empty() ? "" : ", ") + x;
  return "[" + s + "]";
}

std::string first_line(const std::string& s) { return s.substr(0, s.find('\n')); }

std::string upper(std::string_view s) {
  std::string u(s);
  for (auto& ch : u) ch = static_cast<char>(std::toupper(static_cast<unsigned char>(ch)));
  return u;
}

std::string expected_text(const ExpectationEntry& e) {
  switch (e.outcome) {
    case ExpectedOutcome::fail: return "expected to fail " + list_text(e.checks);
    case ExpectedOutcome::skip: return "expected to be skipped for a reason matching '" + e.reason_pattern + "'";
    case ExpectedOutcome::error: return "expected to error with a reason matching '" + e.reason_pattern + "'";
  }
  return "?";
}

std::string item_text(const SignatureItem& i) {
  return i.check + " " + (i.run.empty() ? "" : i.run + ": ") + i.differs;
}

// The first item each side has that the other lacks.
std::string signature_difference(const std::vector<SignatureItem>& pinned, const std::vector<SignatureItem>& seen) {
  std::vector<SignatureItem> extra, missing;
  std::set_difference(seen.begin(), seen.end(), pinned.begin(), pinned.end(), std::back_inserter(extra));
  std::set_difference(pinned.begin(), pinned.end(), seen.begin(), seen.end(), std::back_inserter(missing));
  std::string s;
  if (!extra.empty()) s = "now " + item_text(extra.front()) + (extra.size() > 1 ? " (and " + std::to_string(extra.size() - 1) + " more)" : "");
  if (!missing.empty())
    s += (s.empty() ? "" : "; ") + std::string("pinned ") + item_text(missing.front()) +
         (missing.size() > 1 ? " (and " + std::to_string(missing.size() - 1) + " more)" : "");
  return s;
}

// The verdict of one result that rcts ran here.
ResultVerdict judge(const CaseResult& r, const ExpectationEntry* e) {
  ResultVerdict v;
  if (e) v.entry = e->index;
  const std::string by = e ? " (" + e->label() + ")" : "";
  switch (r.outcome) {
    case Outcome::pass:
      if (e) {
        v.verdict = Verdict::unexpected_pass;
        v.note = expected_text(*e) + by + ", passed: remove the entry";
      }
      return v;
    case Outcome::skip:
      if (e && e->outcome == ExpectedOutcome::skip && !reason_pattern_matches(e->reason_pattern, r.reason)) {
        v.verdict = Verdict::regression;
        v.note = expected_text(*e) + by + ", skipped for another: " + first_line(r.reason);
      } else if (e && e->outcome == ExpectedOutcome::skip) {
        v.verdict = Verdict::expected_skip;
      } else {
        v.verdict = Verdict::unexpected_skip;
        v.note = (e ? expected_text(*e) + by : std::string("expected to pass")) + ", skipped: " + first_line(r.reason);
      }
      return v;
    case Outcome::xfail:
      if (!e) {
        v.verdict = Verdict::xfail;
        return v;
      }
      [[fallthrough]];  // an entry for it judges it like any failure
    case Outcome::fail:
    case Outcome::error: {
      const auto failed = failing_checks(r);
      const std::string got = r.outcome == Outcome::error ? "errored: " + first_line(r.reason)
                                                          : "failed " + list_text(failed);
      if (!e) {
        v.verdict = Verdict::regression;
        v.note = "expected to pass, " + got;
      } else if (e->outcome == ExpectedOutcome::skip) {
        v.verdict = Verdict::regression;
        v.note = expected_text(*e) + by + ", ran and " + got;
      } else if (e->outcome == ExpectedOutcome::error && r.outcome == Outcome::error &&
                 reason_pattern_matches(e->reason_pattern, r.reason)) {
        v.verdict = Verdict::expected_error;
      } else if (e->outcome == ExpectedOutcome::error) {
        v.verdict = Verdict::different_failure;
        v.note = expected_text(*e) + by + ", " + got;
      } else if (r.outcome != Outcome::error && failed == e->checks && !e->signature.empty() &&
                 failure_signature(r) != e->signature) {
        v.verdict = Verdict::different_failure;
        v.note = expected_text(*e) + by + ", failed them differently: " + signature_difference(e->signature, failure_signature(r));
      } else if (r.outcome != Outcome::error && failed == e->checks) {
        v.verdict = Verdict::expected_fail;
      } else {
        v.verdict = Verdict::different_failure;
        v.note = expected_text(*e) + by + ", " + got;
      }
      return v;
    }
  }
  return v;
}

}  // namespace

std::string_view verdict_name(Verdict v) {
  switch (v) {
    case Verdict::pass: return "pass";
    case Verdict::expected_fail: return "expected-fail";
    case Verdict::expected_skip: return "expected-skip";
    case Verdict::expected_error: return "expected-error";
    case Verdict::xfail: return "xfail";
    case Verdict::not_applicable: return "not-applicable";
    case Verdict::regression: return "regression";
    case Verdict::unexpected_pass: return "unexpected-pass";
    case Verdict::different_failure: return "different-failure";
    case Verdict::unexpected_skip: return "unexpected-skip";
  }
  return "?";
}

std::optional<Verdict> parse_verdict(std::string_view name) {
  for (Verdict v : kVerdicts)
    if (verdict_name(v) == name) return v;
  return std::nullopt;
}

const std::vector<Verdict>& all_verdicts() {
  static const std::vector<Verdict> all(std::begin(kVerdicts), std::end(kVerdicts));
  return all;
}

// The outcomes judge() gives each verdict to (an entry for an xfail case judges it as a failure).
bool verdict_allows(Verdict v, Outcome o) {
  switch (v) {
    case Verdict::pass:
    case Verdict::unexpected_pass: return o == Outcome::pass;
    case Verdict::expected_fail: return o == Outcome::fail || o == Outcome::xfail;
    case Verdict::expected_skip:
    case Verdict::unexpected_skip: return o == Outcome::skip;
    case Verdict::expected_error: return o == Outcome::error;
    case Verdict::xfail: return o == Outcome::xfail;
    case Verdict::not_applicable: return true;
    case Verdict::regression:  // also a skip for another reason than its entry's skip_reason
      return o == Outcome::fail || o == Outcome::error || o == Outcome::xfail || o == Outcome::skip;
    case Verdict::different_failure: return o == Outcome::fail || o == Outcome::error || o == Outcome::xfail;
  }
  return false;
}

bool verdict_fails(Verdict v, bool strict) {
  return v == Verdict::regression || v == Verdict::different_failure || v == Verdict::unexpected_skip ||
         (strict && v == Verdict::unexpected_pass);
}

std::string_view entry_status_name(EntryStatus s) {
  switch (s) {
    case EntryStatus::matched: return "matched";
    case EntryStatus::not_in_run: return "not-in-run";
    case EntryStatus::stale: return "stale-entry";
  }
  return "?";
}

std::vector<std::string> failing_checks(const CaseResult& r) {
  std::vector<std::string> out;
  for (const auto& k : r.checks)
    if (k.outcome == Outcome::fail) out.push_back(k.kind);
  std::sort(out.begin(), out.end());
  out.erase(std::unique(out.begin(), out.end()), out.end());
  return out;
}

std::vector<SignatureItem> failure_signature(const CaseResult& r) {
  std::vector<SignatureItem> out;
  for (const auto& k : r.checks)
    if (k.outcome == Outcome::fail) out.push_back(signature_item(k.kind, k.detail));
  std::sort(out.begin(), out.end());
  return out;
}

int ExpectationComparison::count(Verdict v) const {
  return static_cast<int>(std::count_if(results.begin(), results.end(), [&](const auto& r) { return r.verdict == v; }));
}

int ExpectationComparison::stale() const {
  return static_cast<int>(
      std::count_if(entries.begin(), entries.end(), [](const auto& e) { return e.status == EntryStatus::stale; }));
}

bool ExpectationComparison::ok() const {
  for (const auto& r : results)
    if (verdict_fails(r.verdict, strict)) return false;
  return !(strict && stale() > 0);
}

ExpectationComparison compare_expectations(const ExpectationFile& file, const std::vector<CaseInfo>& cases,
                                           const std::vector<CaseResult>& results, const std::vector<bool>& runs_here,
                                           int world_size, bool strict, const std::string& filter,
                                           bool named_files) {
  ExpectationComparison cmp;
  cmp.file = &file;
  cmp.world_size = world_size;
  cmp.strict = strict;
  cmp.filter = filter;
  cmp.subset = named_files || !filter.empty();
  cmp.entries.resize(file.entries.size());
  for (size_t i = 0; i < results.size(); ++i) {
    const CaseResult& r = results[i];
    const ExpectationEntry* e = nullptr;
    for (const auto& x : file.entries)
      if (x.applies_at(world_size) && x.matches(r.id)) {
        e = &x;
        break;
      }
    if (i < runs_here.size() && !runs_here[i]) {
      ResultVerdict v{Verdict::not_applicable, std::nullopt, ""};
      if (e) v.entry = e->index;
      cmp.results.push_back(v);
      continue;
    }
    if (e) ++cmp.entries[e->index].matches;
    cmp.results.push_back(judge(r, e));
  }
  // Stale: matches no case of the set at a world size it names. A filtered run judges
  // that over the cases it selected, and leaves an entry for none of them alone.
  std::vector<const CaseInfo*> scope;
  for (const auto& c : cases)
    if (filter.empty() || glob_match(filter, c.id)) scope.push_back(&c);
  for (const auto& e : file.entries) {
    EntryReport& rep = cmp.entries[e.index];
    if (rep.matches > 0) continue;
    bool named = false, at_size = false;
    for (const CaseInfo* c : scope) {
      if (!e.matches(c->id)) continue;
      named = true;
      at_size = at_size || std::any_of(c->ranks.begin(), c->ranks.end(), [&](int w) { return e.applies_at(w); });
    }
    rep.status = at_size || (cmp.subset && !named) ? EntryStatus::not_in_run : EntryStatus::stale;
  }
  return cmp;
}

std::string expectation_summary(const ExpectationComparison& cmp, const std::vector<CaseResult>& results) {
  const ExpectationFile& f = *cmp.file;
  std::ostringstream os;
  os << "expectations  " << f.file << " (" << f.implementation << ", " << f.implementation_version << "), "
     << cmp.world_size << " rank(s)" << (cmp.strict ? ", strict" : "") << "\n  ";
  bool first = true;
  for (Verdict v : kVerdicts) {
    const int n = cmp.count(v);
    if (n == 0 && v != Verdict::pass && v != Verdict::regression) continue;
    os << (first ? "" : ", ") << n << " " << verdict_name(v);
    first = false;
  }
  os << ", " << cmp.stale() << " stale-entry\n";
  size_t width = 0;
  for (Verdict v : kVerdicts) width = std::max(width, verdict_name(v).size());
  for (size_t i = 0; i < cmp.results.size(); ++i) {
    const auto& v = cmp.results[i];
    if (v.note.empty()) continue;
    std::string tag = upper(verdict_name(v.verdict));
    tag.append(width + 2 - std::min(width + 2, tag.size()), ' ');
    const bool warning = v.verdict == Verdict::unexpected_pass && !cmp.strict;
    os << "  " << tag << display_id(results[i]) << ": " << v.note << (warning ? " (warning)" : "") << "\n";
  }
  for (const auto& e : f.entries)
    if (cmp.entries[e.index].status == EntryStatus::stale) {
      std::string tag = "STALE-ENTRY";
      tag.append(width + 2 - std::min(width + 2, tag.size()), ' ');
      os << "  " << tag << e.label() << ": matches no " << (cmp.subset ? "selected " : "") << "case"
         << (e.ranks.empty() ? "" : " at the world sizes it names")
         << (cmp.strict ? "" : " (warning)") << "\n";
    }
  os << (cmp.ok() ? "expectations met\n" : "expectations NOT met\n");
  return os.str();
}

json result_expectation_json(const ExpectationComparison& cmp, size_t i) {
  const auto& v = cmp.results.at(i);
  return {{"verdict", verdict_name(v.verdict)}, {"entry", v.entry ? json(*v.entry) : json(nullptr)}, {"note", v.note}};
}

json expectations_json(const ExpectationComparison& cmp) {
  const ExpectationFile& f = *cmp.file;
  json counts = json::object();
  for (Verdict v : kVerdicts) counts[std::string(verdict_name(v))] = cmp.count(v);
  counts["stale-entry"] = cmp.stale();
  json entries = json::array();
  for (const auto& e : f.entries)
    entries.push_back({{"index", e.index},
                       {"case", e.case_pattern},
                       {"status", entry_status_name(cmp.entries[e.index].status)},
                       {"matches", cmp.entries[e.index].matches}});
  return {{"file", f.file},
          {"implementation", f.implementation},
          {"implementation_version", f.implementation_version},
          {"world_size", cmp.world_size},
          {"filter", cmp.filter},
          {"strict", cmp.strict},
          {"ok", cmp.ok()},
          {"counts", counts},
          {"entries", entries}};
}

void add_expectations_json(json& report, const ExpectationComparison& cmp) {
  json& cases = report.at("cases");
  for (size_t i = 0; i < cases.size() && i < cmp.results.size(); ++i)
    cases[i]["expectation"] = result_expectation_json(cmp, i);
  report["expectations"] = expectations_json(cmp);
}

std::vector<CaseResult> junit_view(const ExpectationComparison& cmp, const std::vector<CaseResult>& results) {
  const ExpectationFile& f = *cmp.file;
  std::vector<CaseResult> out;
  for (size_t i = 0; i < results.size(); ++i) {
    CaseResult r = results[i];
    const ResultVerdict& v = cmp.results.at(i);
    const std::string why = v.entry ? f.entries.at(*v.entry).reason : "";
    const std::string entry = v.entry ? f.entries.at(*v.entry).label() : "";
    switch (v.verdict) {
      case Verdict::pass:
      case Verdict::xfail:
      case Verdict::not_applicable: break;
      case Verdict::expected_fail:
        r.outcome = Outcome::xfail;
        r.reason = "expected-fail (" + entry + ": " + why + ")\n" + r.reason;
        break;
      case Verdict::expected_skip:
        r.reason = "expected-skip (" + entry + ": " + why + "): " + r.reason;
        break;
      case Verdict::expected_error:  // a known failure: shown as one, never as an error of the run
        r.outcome = Outcome::xfail;
        r.reason = "expected-error (" + entry + ": " + why + ")\n" + r.reason;
        break;
      case Verdict::unexpected_pass:
        if (!cmp.strict) break;
        r.outcome = Outcome::fail;
        r.reason = "unexpected-pass: " + v.note;
        break;
      case Verdict::regression:
      case Verdict::different_failure:
      case Verdict::unexpected_skip:
        r.outcome = r.outcome == Outcome::error ? Outcome::error : Outcome::fail;
        r.reason = std::string(verdict_name(v.verdict)) + ": " + v.note + (r.reason.empty() ? "" : "\n" + r.reason);
        break;
    }
    out.push_back(std::move(r));
  }
  for (const auto& e : f.entries) {
    if (cmp.entries[e.index].status != EntryStatus::stale) continue;
    CaseResult r;
    r.id = "expectations." + e.label();
    r.file = f.file;
    r.backend = f.implementation;
    r.outcome = cmp.strict ? Outcome::fail : Outcome::skip;
    r.reason = "stale-entry: " + e.label() + " matches no case" +
               (cmp.strict ? "" : " (a warning; an error under --expect-strict)");
    out.push_back(std::move(r));
  }
  return out;
}

}  // namespace rcts::harness
