#include "harness/expectations/expectation_file.hpp"

#include <fnmatch.h>

#include <algorithm>
#include <set>

#include "harness/checks/check_kinds.hpp"
#include "harness/io/json_reader.hpp"
#include "harness/io/strict_json.hpp"
#include "reference/core/error.hpp"

namespace rcts::harness {

using nlohmann::json;

bool ExpectationEntry::applies_at(int world_size) const {
  return ranks.empty() || std::find(ranks.begin(), ranks.end(), world_size) != ranks.end();
}

// fnmatch(3) without flags: '*' also crosses the dots of a case id.
bool ExpectationEntry::matches(const std::string& case_id) const {
  return fnmatch(case_pattern.c_str(), case_id.c_str(), 0) == 0;
}

std::string ExpectationEntry::label() const { return "entry " + std::to_string(index) + " ('" + case_pattern + "')"; }

std::vector<std::string> expectable_check_kinds() {
  std::vector<std::string> kinds;
  for (const auto& k : check_kinds()) {
    kinds.emplace_back(k.name);
    for (auto also : k.also_reports) kinds.emplace_back(also);
  }
  kinds.emplace_back("reference");  // rcts check --reference-tolerance (reference_compare.hpp)
  return kinds;
}

namespace {

// A bracket expression must close: fnmatch would read "[ab" as the literal text.
void check_glob(const JsonReader& r, const std::string& p) {
  if (p.empty()) r.fail("empty case pattern");
  for (size_t i = 0; i < p.size(); ++i) {
    if (p[i] != '[') continue;
    size_t j = i + 1;
    if (j < p.size() && (p[j] == '!' || p[j] == '^')) ++j;
    if (j < p.size() && p[j] == ']') ++j;  // a leading ']' is a member
    j = p.find(']', j);
    if (j == std::string::npos) r.fail("unclosed '[' in the case pattern");
    i = j;
  }
}

std::string non_empty(const JsonReader& r, const char* what) {
  std::string s = r.str();
  if (s.find_first_not_of(" \t\n") == std::string::npos) r.fail(std::string(what) + " must not be empty");
  return s;
}

ExpectationEntry parse_entry(const JsonReader& r, size_t index, const std::vector<std::string>& kinds) {
  r.expect_object({"case", "ranks", "outcome", "checks", "skip_reason", "reason", "issue"});
  for (const char* key : {"case", "outcome", "reason"})
    if (!r.has(key)) r.fail("missing key '" + std::string(key) + "'");
  ExpectationEntry e;
  e.index = index;
  e.case_pattern = r.at("case").str();
  check_glob(r.at("case"), e.case_pattern);
  if (r.has("ranks")) {
    const JsonReader rr = r.at("ranks");
    if (rr.array_size() == 0) rr.fail("empty: leave \"ranks\" out for every world size");
    for (size_t i = 0; i < rr.array_size(); ++i) {
      const int n = static_cast<int>(rr.at(i).integer(1, 1 << 16));
      if (std::find(e.ranks.begin(), e.ranks.end(), n) != e.ranks.end()) rr.at(i).fail("world size listed twice");
      e.ranks.push_back(n);
    }
  }
  const std::string outcome = r.at("outcome").str();
  if (outcome == "fail") {
    e.outcome = ExpectedOutcome::fail;
  } else if (outcome == "skip") {
    e.outcome = ExpectedOutcome::skip;
  } else {
    r.at("outcome").fail("expected \"fail\" or \"skip\"");
  }
  if (e.outcome == ExpectedOutcome::fail) {
    if (!r.has("checks")) r.fail("missing key 'checks': a \"fail\" entry lists the check kinds expected to fail");
    const JsonReader cr = r.at("checks");
    if (cr.array_size() == 0) cr.fail("empty: a \"fail\" entry lists the check kinds expected to fail");
    for (size_t i = 0; i < cr.array_size(); ++i) {
      const std::string k = cr.at(i).str();
      if (std::find(kinds.begin(), kinds.end(), k) == kinds.end()) {
        std::string list;
        for (const auto& x : kinds) list += (list.empty() ? "" : ", ") + x;
        cr.at(i).fail("unknown check kind (known: " + list + ")");
      }
      if (std::find(e.checks.begin(), e.checks.end(), k) != e.checks.end()) cr.at(i).fail("check kind listed twice");
      e.checks.push_back(k);
    }
    std::sort(e.checks.begin(), e.checks.end());
  } else if (r.has("checks")) {
    r.at("checks").fail("a \"skip\" entry names no checks");
  }
  if (r.has("skip_reason")) {
    if (e.outcome != ExpectedOutcome::skip) r.at("skip_reason").fail("only a \"skip\" entry names a skip reason");
    e.skip_reason = non_empty(r.at("skip_reason"), "the skip reason");
    check_glob(r.at("skip_reason"), e.skip_reason);
  }
  e.reason = non_empty(r.at("reason"), "the reason");
  if (e.reason.rfind(kReasonPlaceholder, 0) == 0)
    r.at("reason").fail("a placeholder left by --update-expectations: say why the case does not pass");
  if (r.has("issue")) {
    e.issue = r.at("issue").str();
    if (e.issue.rfind("https://", 0) != 0 && e.issue.rfind("http://", 0) != 0)
      r.at("issue").fail("expected a URL (http:// or https://)");
  }
  return e;
}

std::string ranks_text(const std::vector<int>& ranks) {
  std::string s;
  for (int n : ranks) s += (s.empty() ? "" : ", ") + std::to_string(n);
  return s;
}

}  // namespace

ExpectationFile parse_expectation_file(const json& j, const std::string& file) {
  const JsonReader r(file, j);
  r.expect_object({"format", "version", "implementation", "implementation_version", "entries"});
  for (const char* key : {"format", "version", "implementation", "implementation_version", "entries"})
    if (!r.has(key)) r.fail("missing key '" + std::string(key) + "'");
  if (r.at("format").str() != kExpectationsFormat)
    r.at("format").fail("not an expectation file (expected \"" + std::string(kExpectationsFormat) + "\")");
  if (r.at("version").integer(0, 1 << 20) != kExpectationsVersion)
    r.at("version").fail("this rcts reads expectation format version " + std::to_string(kExpectationsVersion));
  ExpectationFile f;
  f.file = file;
  f.implementation = non_empty(r.at("implementation"), "the implementation");
  f.implementation_version = non_empty(r.at("implementation_version"), "the implementation version");
  const JsonReader er = r.at("entries");
  const auto kinds = expectable_check_kinds();
  for (size_t i = 0; i < er.array_size(); ++i) f.entries.push_back(parse_entry(er.at(i), i, kinds));
  // The same pattern twice at a common world size conflicts whatever the case set.
  for (size_t a = 0; a < f.entries.size(); ++a)
    for (size_t b = a + 1; b < f.entries.size(); ++b) {
      const auto &x = f.entries[a], &y = f.entries[b];
      if (x.case_pattern != y.case_pattern) continue;
      const bool overlap = x.ranks.empty() || y.ranks.empty() ||
                           std::any_of(x.ranks.begin(), x.ranks.end(), [&](int n) { return y.applies_at(n); });
      if (overlap)
        er.at(b).at("case").fail("conflicts with " + x.label() + ": both apply to '" + x.case_pattern +
                                 "' at a common world size");
    }
  return f;
}

ExpectationFile read_expectation_file(const std::filesystem::path& file) {
  return parse_expectation_file(read_json_file(file, "expectation file"), file.string());
}

std::vector<std::string> expectation_conflicts(const ExpectationFile& f, const std::vector<CaseInfo>& cases) {
  std::vector<std::string> out;
  for (const auto& c : cases)
    for (int w : c.ranks) {
      const ExpectationEntry* first = nullptr;
      for (const auto& e : f.entries) {
        if (!e.applies_at(w) || !e.matches(c.id)) continue;
        if (!first) {
          first = &e;
          continue;
        }
        out.push_back(f.file + ": /entries/" + std::to_string(first->index) + " and /entries/" +
                      std::to_string(e.index) + " conflict: " + first->label() + " and " + e.label() +
                      " both match case '" + c.id + "' at " + std::to_string(w) + " rank(s)");
      }
    }
  return out;
}

void refuse_conflicts(const ExpectationFile& f, const std::vector<CaseInfo>& cases) {
  const auto conflicts = expectation_conflicts(f, cases);
  if (conflicts.empty()) return;
  std::string all;
  for (size_t i = 0; i < conflicts.size() && i < 10; ++i) all += (i ? "\n  " : "") + conflicts[i];
  if (conflicts.size() > 10) all += "\n  ... and " + std::to_string(conflicts.size() - 10) + " more";
  throw Error(all + "\n(one entry per case and world size: narrow a glob or split \"ranks\")");
}

std::string expectation_file_text(const ExpectationFile& f) {
  auto q = [](const std::string& s) { return json(s).dump(); };
  std::string t = "{\n";
  t += "  \"format\": " + q(kExpectationsFormat) + ",\n";
  t += "  \"version\": " + std::to_string(kExpectationsVersion) + ",\n";
  t += "  \"implementation\": " + q(f.implementation) + ",\n";
  t += "  \"implementation_version\": " + q(f.implementation_version) + ",\n";
  t += "  \"entries\": [";
  for (size_t i = 0; i < f.entries.size(); ++i) {
    const auto& e = f.entries[i];
    t += i ? ",\n" : "\n";
    t += "    {\n      \"case\": " + q(e.case_pattern) + ",\n";
    if (!e.ranks.empty()) t += "      \"ranks\": [" + ranks_text(e.ranks) + "],\n";
    t += std::string("      \"outcome\": ") + (e.outcome == ExpectedOutcome::fail ? "\"fail\"" : "\"skip\"") + ",\n";
    if (e.outcome == ExpectedOutcome::fail) {
      std::string list;
      for (const auto& k : e.checks) list += (list.empty() ? "" : ", ") + q(k);
      t += "      \"checks\": [" + list + "],\n";
    }
    if (!e.skip_reason.empty()) t += "      \"skip_reason\": " + q(e.skip_reason) + ",\n";
    t += "      \"reason\": " + q(e.reason);
    if (!e.issue.empty()) t += ",\n      \"issue\": " + q(e.issue);
    t += "\n    }";
  }
  t += f.entries.empty() ? "]\n}\n" : "\n  ]\n}\n";
  return t;
}

}  // namespace rcts::harness
