#include "harness/expectations/expectation_file.hpp"

#include <algorithm>
#include <cctype>
#include <optional>
#include <string_view>
#include <set>

#include "harness/checks/check_kinds.hpp"
#include "harness/expectations/case_pattern.hpp"
#include "harness/io/json_reader.hpp"
#include "harness/io/strict_json.hpp"
#include "reference/core/error.hpp"

namespace rcts::harness {

using nlohmann::json;

bool ExpectationEntry::applies_at(int world_size) const {
  return ranks.empty() || std::find(ranks.begin(), ranks.end(), world_size) != ranks.end();
}

bool ExpectationEntry::matches(const std::string& case_id) const { return case_pattern_matches(case_pattern, case_id); }

SignatureItem signature_item(const std::string& kind, const std::string& detail) {
  std::string line = detail.substr(0, detail.find('\n'));
  SignatureItem item{kind, "", line};
  if (const size_t colon = line.find(": "); colon != std::string::npos) {
    item.run = line.substr(0, colon);
    item.differs = line.substr(colon + 2);
  }
  if (item.differs.size() > kMaxDiffersChars) {
    size_t cut = kMaxDiffersChars;  // not inside a UTF-8 sequence
    while (cut > 0 && (static_cast<unsigned char>(item.differs[cut]) & 0xC0) == 0x80) --cut;
    item.differs.resize(cut);
  }
  return item;
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

const char* expected_outcome_name(ExpectedOutcome o) {
  switch (o) {
    case ExpectedOutcome::fail: return "fail";
    case ExpectedOutcome::skip: return "skip";
    case ExpectedOutcome::error: return "error";
  }
  return "?";
}

const char* reason_pattern_key(ExpectedOutcome o) {
  return o == ExpectedOutcome::skip ? "skip_reason" : o == ExpectedOutcome::error ? "error_reason" : "";
}

namespace {

// An issue link: http:// or https://, a host name, then anything without spaces.
std::optional<std::string> url_error(const std::string& u) {
  size_t host = 0;
  for (const char* scheme : {"https://", "http://"})
    if (u.rfind(scheme, 0) == 0) host = std::string_view(scheme).size();
  if (host == 0) return "no http:// or https:// scheme";
  size_t end = host;
  while (end < u.size() && (std::isalnum(static_cast<unsigned char>(u[end])) || u[end] == '.' || u[end] == '-')) ++end;
  if (end == host) return "no host after the scheme";
  if (end < u.size() && u[end] != '/' && u[end] != ':' && u[end] != '?' && u[end] != '#')
    return "the host ends in '" + std::string(1, u[end]) + "'";
  for (char c : u)
    if (static_cast<unsigned char>(c) <= 0x20 || c == 0x7f) return "a space or control character";
  return std::nullopt;
}

std::string non_empty(const JsonReader& r, const char* what) {
  std::string s = r.str();
  if (s.find_first_not_of(" \t\n") == std::string::npos) r.fail(std::string(what) + " must not be empty");
  return s;
}

// The signature of a fail entry: one case, items whose kinds are exactly its checks.
std::vector<SignatureItem> parse_signature(const JsonReader& sr, const ExpectationEntry& e) {
  if (is_case_glob(e.case_pattern))
    sr.fail("a signature pins one case's failure: the entry's case must name one case, not a glob");
  if (sr.array_size() == 0) sr.fail("empty: leave \"signature\" out, or list every failing check");
  std::vector<SignatureItem> items;
  std::set<std::string> kinds;
  for (size_t i = 0; i < sr.array_size(); ++i) {
    const JsonReader ir = sr.at(i);
    ir.expect_object({"check", "run", "differs"});
    for (const char* key : {"check", "run", "differs"})
      if (!ir.has(key)) ir.fail("missing key '" + std::string(key) + "'");
    SignatureItem item{ir.at("check").str(), ir.at("run").str(), ir.at("differs").str()};
    if (std::find(e.checks.begin(), e.checks.end(), item.check) == e.checks.end())
      ir.at("check").fail("not one of the entry's \"checks\"");
    if (item.differs.empty()) ir.at("differs").fail("must not be empty: what the check said differed");
    if (item.differs.size() > kMaxDiffersChars)
      ir.at("differs").fail("longer than the " + std::to_string(kMaxDiffersChars) + " characters rcts keeps of a message");
    kinds.insert(item.check);
    items.push_back(std::move(item));
  }
  for (const auto& k : e.checks)
    if (!kinds.count(k)) sr.fail("names no failure of check '" + k + "', which the entry expects to fail");
  std::sort(items.begin(), items.end());
  return items;
}

ExpectationEntry parse_entry(const JsonReader& r, size_t index, const std::vector<std::string>& kinds) {
  r.expect_object({"case", "ranks", "outcome", "checks", "signature", "skip_reason", "error_reason", "reason", "issue"});
  for (const char* key : {"case", "outcome", "reason"})
    if (!r.has(key)) r.fail("missing key '" + std::string(key) + "'");
  ExpectationEntry e;
  e.index = index;
  e.case_pattern = r.at("case").str();
  if (auto why = case_pattern_error(e.case_pattern)) r.at("case").fail(*why);
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
  if (outcome == "fail") e.outcome = ExpectedOutcome::fail;
  else if (outcome == "skip") e.outcome = ExpectedOutcome::skip;
  else if (outcome == "error") e.outcome = ExpectedOutcome::error;
  else r.at("outcome").fail("expected \"fail\", \"skip\" or \"error\"");
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
    if (r.has("signature")) e.signature = parse_signature(r.at("signature"), e);
  } else if (r.has("checks")) {
    r.at("checks").fail("a \"" + outcome + "\" entry names no checks");
  } else if (r.has("signature")) {
    r.at("signature").fail("a \"" + outcome + "\" entry has no failure to pin");
  }
  // A skip or an error names its reason: another reason is another outcome, not this one.
  for (const ExpectedOutcome o : {ExpectedOutcome::skip, ExpectedOutcome::error}) {
    const char* key = reason_pattern_key(o);
    if (e.outcome == o && !r.has(key))
      r.fail(std::string("missing key '") + key + "': a \"" + outcome + "\" entry names the " + expected_outcome_name(o) +
             "'s reason (a pattern over the reason the report gives, e.g. \"*dense layers only*\")");
    if (!r.has(key)) continue;
    if (e.outcome != o) r.at(key).fail(std::string("only a \"") + expected_outcome_name(o) + "\" entry has it");
    e.reason_pattern = r.at(key).str();
    if (auto why = reason_pattern_error(e.reason_pattern)) r.at(key).fail(*why);
  }
  e.reason = non_empty(r.at("reason"), "the reason");
  if (e.reason.rfind(kReasonPlaceholder, 0) == 0)
    r.at("reason").fail("a placeholder left by --update-expectations: say why the case does not pass");
  if (r.has("issue")) {
    e.issue = r.at("issue").str();
    if (auto why = url_error(e.issue)) r.at("issue").fail("expected a URL (http:// or https://, then a host): " + *why);
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
    t += std::string("      \"outcome\": ") + q(expected_outcome_name(e.outcome)) + ",\n";
    if (e.outcome == ExpectedOutcome::fail) {
      std::string list;
      for (const auto& k : e.checks) list += (list.empty() ? "" : ", ") + q(k);
      t += "      \"checks\": [" + list + "],\n";
      if (!e.signature.empty()) {
        t += "      \"signature\": [";
        for (size_t k = 0; k < e.signature.size(); ++k) {
          const auto& it = e.signature[k];
          t += std::string(k ? ",\n" : "\n") + "        {\"check\": " + q(it.check) + ", \"run\": " + q(it.run) +
               ", \"differs\": " + q(it.differs) + "}";
        }
        t += "\n      ],\n";
      }
    }
    if (e.outcome != ExpectedOutcome::fail)
      t += std::string("      \"") + reason_pattern_key(e.outcome) + "\": " + q(e.reason_pattern) + ",\n";
    t += "      \"reason\": " + q(e.reason);
    if (!e.issue.empty()) t += ",\n      \"issue\": " + q(e.issue);
    t += "\n    }";
  }
  t += f.entries.empty() ? "]\n}\n" : "\n  ]\n}\n";
  return t;
}

}  // namespace rcts::harness
