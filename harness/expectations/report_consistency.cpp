#include "harness/expectations/report_consistency.hpp"

#include <map>

#include "harness/expectations/expectation_compare.hpp"
#include "harness/io/json_reader.hpp"
#include "reference/core/error.hpp"

namespace rcts::harness {

using nlohmann::json;

namespace {

Outcome outcome_at(const JsonReader& c) {
  const JsonReader o = c.at("outcome");
  try {
    return parse_outcome(o.str());
  } catch (const Error&) {
    o.fail("expected pass, fail, skip, xfail or error");
  }
}

// Summary counts as results_json() writes them.
json tally_of(const std::vector<Outcome>& outcomes) {
  std::map<Outcome, int> n;
  for (Outcome o : outcomes) ++n[o];
  return {{"total", outcomes.size()}, {"passed", n[Outcome::pass]}, {"failed", n[Outcome::fail]},
          {"skipped", n[Outcome::skip]}, {"xfail", n[Outcome::xfail]}, {"errors", n[Outcome::error]}};
}

void check_expectations(const JsonReader& r, const JsonReader& cases, const std::vector<Outcome>& outcomes) {
  const bool section = r.has("expectations");
  std::map<std::string, int> counts;
  bool fails = false;
  const JsonReader ex = section ? r.at("expectations") : r;
  const bool strict = section && ex.has("strict") && ex.at("strict").boolean();
  for (size_t i = 0; i < cases.array_size(); ++i) {
    const JsonReader c = cases.at(i);
    if (!c.has("expectation")) {
      if (section) c.fail("no \"expectation\", but the report has an \"expectations\" section");
      continue;
    }
    if (!section) c.at("expectation").fail("a verdict in a report without an \"expectations\" section");
    const JsonReader e = c.at("expectation");
    if (!e.json().is_object() || !e.has("verdict")) e.fail("expected {\"verdict\", ...}");
    const JsonReader vr = e.at("verdict");
    const auto v = parse_verdict(vr.str());
    if (!v) vr.fail("unknown verdict");
    if (!verdict_allows(*v, outcomes[i]))
      vr.fail("contradicts " + c.path() + "/outcome = \"" + std::string(outcome_name(outcomes[i])) +
              "\": judging never gives it to that outcome");
    ++counts[std::string(verdict_name(*v))];
    fails = fails || verdict_fails(*v, strict);
  }
  if (!section) return;
  int stale = 0;
  if (ex.has("entries")) {
    const JsonReader es = ex.at("entries");
    for (size_t i = 0; i < es.array_size(); ++i)
      if (es.at(i).has("status") && es.at(i).at("status").str() == entry_status_name(EntryStatus::stale)) ++stale;
  }
  if (ex.has("counts")) {
    const JsonReader cr = ex.at("counts");
    if (!cr.json().is_object()) cr.fail("expected an object");
    for (Verdict v : all_verdicts()) {
      const std::string name(verdict_name(v));
      const int want = counts[name];
      if (!cr.has(name.c_str()) || cr.at(name.c_str()).json() != want)
        (cr.has(name.c_str()) ? cr.at(name.c_str()) : cr)
            .fail("the cases' verdicts count " + std::to_string(want) + " " + name);
    }
    if (ex.has("entries") && (!cr.has("stale-entry") || cr.at("stale-entry").json() != stale))
      (cr.has("stale-entry") ? cr.at("stale-entry") : cr)
          .fail("the entries count " + std::to_string(stale) + " stale-entry");
  }
  if (ex.has("ok")) {
    const bool ok = !fails && !(strict && stale > 0);
    if (ex.at("ok").boolean() != ok)
      ex.at("ok").fail(std::string("the cases' verdicts") + (strict ? " and stale entries under strict" : "") +
                       " say " + (ok ? "true" : "false"));
  }
}

}  // namespace

void check_results_consistency(const json& doc, const std::string& file) {
  const JsonReader r(file, doc);
  if (!r.json().is_object() || !r.has("cases")) return;  // the readers refuse the shape itself
  const JsonReader cases = r.at("cases");
  std::vector<Outcome> outcomes;
  for (size_t i = 0; i < cases.array_size(); ++i) {
    const JsonReader c = cases.at(i);
    if (!c.json().is_object() || !c.has("outcome")) c.fail("expected a case result with an \"outcome\"");
    const Outcome o = outcome_at(c);
    outcomes.push_back(o);
    if (o != Outcome::pass || !c.has("checks")) continue;
    const JsonReader ks = c.at("checks");
    for (size_t k = 0; k < ks.array_size(); ++k) {
      const JsonReader ck = ks.at(k);
      if (ck.has("outcome") && (ck.at("outcome").json() == "fail" || ck.at("outcome").json() == "error"))
        c.at("outcome").fail("but " + ck.path() + " (" + (ck.has("kind") ? ck.at("kind").json().dump() : "?") +
                             ") failed: a case with a failing check does not pass");
    }
  }
  if (r.has("summary")) {
    const json want = tally_of(outcomes);
    const JsonReader s = r.at("summary");
    if (!s.json().is_object()) s.fail("expected an object");
    for (const auto& [key, value] : want.items())
      if (!s.has(key.c_str()) || s.at(key.c_str()).json() != value)
        (s.has(key.c_str()) ? s.at(key.c_str()) : s).fail("the cases count " + value.dump() + " " + key);
  }
  check_expectations(r, cases, outcomes);
}

void check_same_rcts(const std::vector<std::pair<std::string, const json*>>& docs) {
  for (const char* key : {"version", "git_sha", "seed"}) {
    const std::string* first_file = nullptr;
    json first;
    for (const auto& [file, doc] : docs) {
      if (!doc->is_object() || !doc->contains("header") || !(*doc)["header"].is_object() ||
          !(*doc)["header"].contains(key))
        continue;  // the readers refuse a missing header
      const json& v = (*doc)["header"][key];
      if (!first_file) {
        first_file = &file;
        first = v;
      } else if (v != first) {
        throw Error(file + ": /header/" + key + " = " + v.dump() + ", but " + *first_file + ": /header/" + key + " = " +
                    first.dump() + ": reports of different rcts builds or seeds are not one result set (rerun them "
                    "with one rcts)");
      }
    }
  }
}

}  // namespace rcts::harness
