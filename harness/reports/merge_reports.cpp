#include "harness/reports/merge_reports.hpp"

#include <algorithm>
#include <cstdio>
#include <iomanip>
#include <set>
#include <sstream>

#include "harness/ranks/ranks.hpp"
#include "harness/io/json_reader.hpp"
#include "harness/io/strict_json.hpp"
#include "reference/core/error.hpp"

namespace rcts::harness {

namespace {

using Status = WorldSizeResults::Status;

// The value at `key` of object `o`, or an rcts::Error naming the source, the path and the value.
const nlohmann::json& member(const nlohmann::json& o, const char* key, const std::string& source,
                             const std::string& path) {
  if (!o.is_object() || !o.contains(key))
    JsonReader(source, o, path).fail("missing key '" + std::string(key) + "' of an rcts-results document");
  return o.at(key);
}
// The same, read through the JSON reader for its typed reads (str(), integer(), number()).
JsonReader field(const nlohmann::json& o, const char* key, const std::string& source, const std::string& path) {
  return JsonReader(source, member(o, key, source, path), path + "/" + key);
}

std::string fixed(double v, int digits) {
  std::ostringstream os;
  os << std::fixed << std::setprecision(digits) << v;
  return os.str();
}

std::string sizes_text(const std::vector<WorldSizeResults>& sizes, bool ran) {
  std::string s;
  for (const auto& w : sizes)
    if ((w.status == Status::run) == ran) s += (s.empty() ? "" : ", ") + std::to_string(w.ranks);
  return s;
}

std::vector<CaseResult> all_cases(const std::vector<WorldSizeResults>& sizes) {
  std::vector<CaseResult> all;
  for (const auto& w : sizes) all.insert(all.end(), w.cases.begin(), w.cases.end());
  return all;
}

double seconds_of(const std::vector<CaseResult>& cases) {
  double s = 0;
  for (const auto& c : cases) s += c.seconds;
  return s;
}

nlohmann::json tally_json(const std::vector<CaseResult>& cases) {
  const Tally t = tally(cases);
  return {{"total", cases.size()}, {"passed", t.passed}, {"failed", t.failed},
          {"skipped", t.skipped},  {"xfail", t.xfail},   {"errors", t.errors}};
}

std::string status_name(Status s) { return s == Status::run ? "run" : s == Status::skipped ? "skipped" : "missing"; }

}  // namespace

WorldSizeResults results_from_json(const nlohmann::json& doc, const std::string& source) {
  try {
    const auto& schema = member(doc, "schema", source, "");
    if (schema != kResultsSchema)
      throw Error(source + ": /schema = " + schema.dump() + ": not an rcts run report (expected \"" +
                  std::string(kResultsSchema) + "\", from `rcts run --json`)");
    const auto& version = member(doc, "schema_version", source, "");
    if (version != kResultsSchemaVersion)
      throw Error(source + ": /schema_version = " + version.dump() + ": this rcts reads version " +
                  std::to_string(kResultsSchemaVersion));
    WorldSizeResults w;
    const auto& h = member(doc, "header", source, "");
    w.header.version = field(h, "version", source, "/header").str();
    w.header.git_sha = field(h, "git_sha", source, "/header").str();
    w.header.backend = field(h, "backend", source, "/header").str();
    const JsonReader ranks = field(h, "ranks", source, "/header");
    if (ranks.json().is_number_integer() && ranks.json().get<int64_t>() < 1) ranks.fail("not a world size");
    w.header.ranks = static_cast<int>(ranks.integer(1, 1 << 16));
    const JsonReader seed = field(h, "seed", source, "/header");
    if (!seed.json().is_number_unsigned()) seed.fail("expected a seed (an integer >= 0)");
    w.header.seed = seed.json().get<uint64_t>();
    const auto& timing = member(doc, "timing", source, "");
    w.header.started_at = field(timing, "started_at", source, "/timing").str();
    const auto& cases = member(doc, "cases", source, "");
    const auto& times = member(timing, "cases", source, "/timing");
    if (!cases.is_array() || !times.is_array() || cases.size() != times.size())
      throw Error(source + ": /cases and /timing/cases must be arrays of one entry per case");
    for (size_t i = 0; i < cases.size(); ++i) {
      const JsonReader one(source, cases[i], "/cases/" + std::to_string(i));
      if (one.has("outcome")) try {
          parse_outcome(one.at("outcome").str());
        } catch (const Error&) {
          one.at("outcome").fail("expected pass, fail, skip, xfail or error");
        }
      CaseResult c;
      try {
        c = case_result_from_json(cases[i]);
      } catch (const std::exception&) {  // the entry's own shape, not the library's words
        one.fail("not a case result (an object with a string id and outcome: pass, fail, skip, xfail or error)");
      }
      c.backend = cases[i].value("backend", "");
      c.seconds = field(times[i], "seconds", source, "/timing/cases/" + std::to_string(i)).number(0, 1e12);
      w.cases.push_back(std::move(c));
    }
    w.ranks = w.header.ranks;
    w.document = doc;
    return w;
  } catch (const nlohmann::json::exception& e) {  // a value the reads above leave unchecked
    const std::string what = e.what();               // "[json.exception.type_error.302] type must be ..."
    throw Error(source + ": not a well-formed rcts-results document: " + what.substr(what.find("] ") + 2));
  }
}

WorldSizeResults read_results_file(const std::filesystem::path& file, std::optional<int> expect_ranks) {
  WorldSizeResults w = results_from_json(read_json_file(file, "results file"), file.string());
  w.file = file.string();
  if (expect_ranks && w.ranks != *expect_ranks)
    throw Error(file.string() + ": /header/ranks = " + std::to_string(w.ranks) + ": a run at " + std::to_string(w.ranks) +
                " rank(s), expected " + std::to_string(*expect_ranks) +
                (w.ranks == 1 ? " (an rcts built without MPI runs every mpirun process as a one-rank run)" : ""));
  return w;
}

std::vector<WorldSizeResults> order_world_sizes(std::vector<WorldSizeResults> sizes) {
  std::stable_sort(sizes.begin(), sizes.end(), [](const auto& a, const auto& b) { return a.ranks < b.ranks; });
  for (size_t i = 1; i < sizes.size(); ++i)
    if (sizes[i].ranks == sizes[i - 1].ranks) {
      auto name = [](const WorldSizeResults& w) { return w.file.empty() ? status_name(w.status) : w.file; };
      throw Error("two results for world size " + std::to_string(sizes[i].ranks) + ": " + name(sizes[i - 1]) + " and " +
                  name(sizes[i]));
    }
  return sizes;
}

std::string merged_summary(const std::vector<WorldSizeResults>& sizes) {
  std::ostringstream os;
  std::set<std::string> versions, backends;
  for (const auto& w : sizes)
    if (w.status == Status::run) {
      versions.insert(w.header.version + " (" + w.header.git_sha + ")");
      backends.insert(w.header.backend);
    }
  auto joined = [](const std::set<std::string>& s) {
    std::string out;
    for (const auto& x : s) out += (out.empty() ? "" : " / ") + x;
    return out;
  };
  os << "rcts " << (versions.empty() ? std::string("(no run)") : joined(versions)) << "  backend "
     << (backends.empty() ? std::string("-") : joined(backends)) << "\n\n";
  char row[160];
  os << "world size  passed  failed  skipped   seconds\n";
  for (const auto& w : sizes) {
    if (w.status != Status::run) {
      os << std::setw(10) << w.ranks << "  " << (w.status == Status::skipped ? "not run: " : "FAILED: ") << w.reason
         << "\n";
      continue;
    }
    const Tally t = tally(w.cases);
    std::snprintf(row, sizeof row, "%10d  %6d  %6d  %7d  %8s\n", w.ranks, t.passed, t.failed + t.errors,
                  t.skipped + t.xfail, fixed(seconds_of(w.cases), 1).c_str());
    os << row;
  }
  const auto all = all_cases(sizes);
  const Tally t = tally(all);
  std::snprintf(row, sizeof row, "%10s  %6d  %6d  %7d  %8s\n", "total", t.passed, t.failed + t.errors,
                t.skipped + t.xfail, fixed(seconds_of(all), 1).c_str());
  os << row;

  std::vector<std::pair<const WorldSizeResults*, const CaseResult*>> failing;
  for (const auto& w : sizes)
    for (const auto& c : w.cases)
      if (c.outcome == Outcome::fail || c.outcome == Outcome::error) failing.emplace_back(&w, &c);
  if (!failing.empty()) {
    os << "\n" << failing.size() << " failing case(s), each with its first divergence (when one was found) and every failing check:\n";
    for (const auto& [w, c] : failing) {
      os << outcome_label(c->outcome) << " " << junit_case_name(w->header, *c) << "  " << c->file << "\n";
      std::istringstream lines(c->reason.empty() ? short_detail(*c, 200) : c->reason);
      for (std::string line; std::getline(lines, line);) os << "        " << line << "\n";
    }
  }
  os << "\n" << summary_line(all);
  const std::string ran = sizes_text(sizes, true), not_run = sizes_text(sizes, false);
  if (!ran.empty()) os << " at world size(s) " << ran;
  if (!not_run.empty()) os << "; not run at " << not_run;
  os << "\n";
  return os.str();
}

nlohmann::json merged_json(const std::vector<WorldSizeResults>& sizes) {
  nlohmann::json per = nlohmann::json::array(), runs = nlohmann::json::array();
  for (const auto& w : sizes) {
    nlohmann::json e = {{"ranks", w.ranks}, {"status", status_name(w.status)}};
    if (w.status == Status::run) {
      e["summary"] = tally_json(w.cases);
      runs.push_back(w.document);
    } else {
      e["reason"] = w.reason;
    }
    per.push_back(std::move(e));
  }
  return {{"schema", kMergedSchema},
          {"schema_version", kMergedSchemaVersion},
          {"summary", tally_json(all_cases(sizes))},
          {"world_sizes", per},
          {"runs", runs}};
}

std::string merged_junit(const std::vector<WorldSizeResults>& sizes) {
  std::string suites;
  int tests = 0, failures = 0, errors = 0, skipped = 0;
  double seconds = 0;
  for (const auto& w : sizes) {
    if (w.status == Status::run) {
      suites += junit_testsuite(w.header, w.cases);
      const Tally t = tally(w.cases);
      tests += static_cast<int>(w.cases.size());
      failures += t.failed;
      errors += t.errors;
      skipped += t.skipped + t.xfail;
      seconds += seconds_of(w.cases);
      continue;
    }
    // A world size that did not run is one test case, so a CI view cannot miss it.
    RunHeader h;
    h.ranks = w.ranks;
    const bool skip = w.status == Status::skipped;
    CaseResult c;
    c.id = "world size " + std::to_string(w.ranks);
    c.backend = "not run";
    c.outcome = skip ? Outcome::skip : Outcome::error;
    c.reason = w.reason;
    suites += junit_testsuite(h, {c});
    ++tests;
    (skip ? skipped : errors) += 1;
  }
  std::ostringstream os;
  os << "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n"
     << "<testsuites name=\"rcts\" tests=\"" << tests << "\" failures=\"" << failures << "\" errors=\"" << errors
     << "\" skipped=\"" << skipped << "\" time=\"" << fixed(seconds, 3) << "\">\n"
     << suites << "</testsuites>\n";
  return os.str();
}

int merged_exit_status(const std::vector<WorldSizeResults>& sizes) {
  bool any_case = false;
  for (const auto& w : sizes) {
    if (w.status == Status::missing) return 1;
    const Tally t = tally(w.cases);
    if (t.failed + t.errors > 0) return 1;
    any_case = any_case || !w.cases.empty();
  }
  return any_case ? 0 : 1;
}

}  // namespace rcts::harness
