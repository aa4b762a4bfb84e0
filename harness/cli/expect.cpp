#include "harness/cli/expect.hpp"
#include "harness/io/text_safety.hpp"

#include <algorithm>
#include <fstream>
#include <map>
#include <ostream>
#include <set>
#include <sstream>

#include "harness/expectations/expectation_compare.hpp"
#include "harness/expectations/expectation_update.hpp"
#include "harness/io/atomic_file.hpp"
#include "harness/io/safe_name.hpp"
#include "reference/core/error.hpp"

namespace rcts::harness {

namespace fs = std::filesystem;

void add_expect_options(CLI::App* sub, ExpectOptions& o) {
  auto* e = sub->add_option("--expect", o.file,
                            "compare the outcomes with an expectation file (docs/expectations.md); exit 0 when they match");
  sub->add_flag("--expect-strict", o.strict, "with --expect: unexpected passes and stale entries fail too")->needs(e);
  sub->add_flag("--update-expectations", o.update,
                "with --expect: write FILE.new as the outcomes suggest and print the diff to review (FILE is kept)")
      ->needs(e);
}

std::string proposed_expectations_path(const ExpectOptions& o) { return o.file + ".new"; }

void add_expect_path_uses(std::vector<cli::PathUse>& uses, const ExpectOptions& o) {
  uses.push_back({cli::PathUse::Kind::input, "--expect", o.file});
  if (o.update) uses.push_back({cli::PathUse::Kind::output, "--update-expectations", proposed_expectations_path(o)});
}

std::vector<CaseInfo> case_infos(const std::vector<Case>& cases) {
  std::vector<CaseInfo> out;
  for (const auto& c : cases) out.push_back({c.id, c.ranks});
  return out;
}

ExpectationFile load_expectations(const ExpectOptions& o, const std::vector<Case>& cases) {
  ExpectationFile f = read_expectation_file(o.file);
  refuse_conflicts(f, case_infos(cases));
  return f;
}

namespace {

std::string ranks_text(const std::vector<int>& ranks) {
  std::string s;
  for (int n : ranks) s += (s.empty() ? "" : ", ") + std::to_string(n);
  return s;
}

std::string read_text(const fs::path& p) {
  std::ifstream in(p, std::ios::binary);
  std::ostringstream os;
  os << in.rdbuf();
  return os.str();
}

// The reason a marker gives. Only a plain file of at most kMaxMarkerBytes is
// read (a symlink would put any file of the machine into the reports; a huge one would
// be read whole); line breaks and tabs become spaces, other control characters go, and
// invalid UTF-8 becomes U+FFFD, so the reason is safe for the terminal and every report.
std::string read_marker(const fs::path& m) {
  const std::string what = m.filename() == kErrorMarker ? "an error marker" : "a skip marker";
  std::error_code ec;
  const auto st = fs::symlink_status(m, ec);
  if (fs::is_symlink(st)) {
    const fs::path to = fs::read_symlink(m, ec);
    throw Error(m.string() + ": " + what + " must be a plain file, this is a symlink to '" +
                visible_controls(to.string()) + "'");
  }
  if (!fs::is_regular_file(st))
    throw Error(m.string() + ": " + what + " must be a plain file, this is " +
                (fs::is_directory(st) ? "a directory" : "not a regular file (a FIFO, socket or device)"));
  const auto size = fs::file_size(m, ec);
  if (!ec && size > kMaxMarkerBytes)
    throw Error(m.string() + ": " + std::to_string(size) + " bytes: " + what + " holds one short reason (at most " +
                std::to_string(kMaxMarkerBytes) + " bytes)");
  std::string raw(kMaxMarkerBytes + 1, '\0');
  std::ifstream in(m, std::ios::binary);
  in.read(raw.data(), static_cast<std::streamsize>(raw.size()));
  raw.resize(static_cast<size_t>(in.gcount()));
  if (raw.size() > kMaxMarkerBytes)  // it grew meanwhile
    throw Error(m.string() + ": more than " + std::to_string(kMaxMarkerBytes) +
                " bytes: " + what + " holds one short reason");
  std::string why;
  for (const char ch : raw) {
    const auto c = static_cast<unsigned char>(ch);
    if (c == '\n' || c == '\r' || c == '\t') why += ' ';
    else if (c >= 0x20 && c != 0x7f) why += ch;
  }
  why = valid_utf8(why);
  while (!why.empty() && why.back() == ' ') why.pop_back();
  while (!why.empty() && why.front() == ' ') why.erase(0, 1);
  return why;
}

struct Marker {
  bool raised = false;  // ERRORED, else SKIPPED
  std::string reason;
  fs::path file;
};

// Case id -> what its marker says, for every marker below `dirs`.
std::map<std::string, Marker> case_markers(const std::vector<Case>& cases, const std::vector<fs::path>& dirs) {
  std::map<std::string, const Case*> by_dir;
  for (const auto& c : cases) by_dir.emplace(safe_file_stem(c.id), &c);
  std::map<std::string, Marker> out;
  for (const auto& dir : dirs) {
    if (!fs::is_directory(dir)) continue;  // index_dumps has said so
    std::vector<fs::path> found;
    for (const auto& e : fs::recursive_directory_iterator(dir))  // read_marker refuses what is no plain file
      if (e.path().filename() == kSkipMarker || e.path().filename() == kErrorMarker) found.push_back(e.path());
    std::sort(found.begin(), found.end());
    for (const auto& m : found) {
      const std::string name = m.parent_path().filename().string();
      const auto c = by_dir.find(name);
      if (c == by_dir.end())
        throw Error(m.string() + ": a skip marker in '" + name + "', which names no case of the case set");
      const bool raised = m.filename() == kErrorMarker;
      const std::string why = read_marker(m);
      if (why.empty())
        throw Error(m.string() + (raised ? ": an empty error marker: it must say what the implementation raised"
                                         : ": an empty skip marker: it must say why the case is skipped"));
      const auto [at, fresh] = out.emplace(c->second->id, Marker{raised, why, m});
      if (!fresh)
        throw Error(m.string() + ": case '" + c->second->id + "' has a second marker, " + at->second.file.string() +
                    ": an implementation either skipped a case or raised in it");
    }
  }
  return out;
}

}  // namespace

void add_undumped_cases(std::vector<CaseResult>& results, const std::vector<Case>& cases, const std::string& filter,
                        int world_size, const std::vector<fs::path>& dirs, const std::string& implementation) {
  const auto markers = case_markers(cases, dirs);
  std::vector<std::string> backends;
  for (const auto& r : results)
    if (std::find(backends.begin(), backends.end(), r.backend) == backends.end()) backends.push_back(r.backend);
  if (backends.empty()) backends.push_back(implementation);
  std::set<std::pair<std::string, std::string>> have;
  for (const auto& r : results) have.insert({r.id, r.backend});
  std::string where;
  for (const auto& d : dirs) where += (where.empty() ? "" : ", ") + d.string();
  for (const auto& backend : backends)
    for (const auto& c : cases) {
      if ((!filter.empty() && !glob_match(filter, c.id)) || have.count({c.id, backend})) continue;
      CaseResult r;
      r.id = c.id;
      r.file = c.file.string();
      r.backend = backend;
      r.outcome = Outcome::skip;
      const auto marker = markers.find(c.id);
      if (std::find(c.ranks.begin(), c.ranks.end(), world_size) == c.ranks.end()) {
        r.reason = "needs " + ranks_text(c.ranks) + " ranks, this check has " + std::to_string(world_size);
      } else if (c.expect.config_error) {
        r.reason = kConfigErrorSkip;
      } else if (marker != markers.end() && marker->second.raised) {
        r.outcome = Outcome::error;
        r.reason = kImplementationRaised + marker->second.reason;
      } else if (marker != markers.end()) {
        r.reason = "skipped by the implementation: " + marker->second.reason;
      } else {
        r.reason = "not dumped: no dump of this case below " + where;
      }
      results.push_back(std::move(r));
    }
}

std::vector<bool> runs_here(const std::vector<CaseResult>& results, const std::vector<Case>& cases, int world_size,
                            bool checking_dumps, const std::vector<bool>& backend_listed) {
  std::map<std::string, const Case*> by_id;
  for (const auto& c : cases) by_id.emplace(c.id, &c);
  std::vector<bool> out;
  for (size_t i = 0; i < results.size(); ++i) {
    const auto it = by_id.find(results[i].id);
    bool here = it != by_id.end() &&
                std::find(it->second->ranks.begin(), it->second->ranks.end(), world_size) != it->second->ranks.end();
    if (here && checking_dumps && it->second->expect.config_error) here = false;
    if (i < backend_listed.size() && !backend_listed[i]) here = false;
    out.push_back(here);
  }
  return out;
}

int finish_with_expectations(const ExpectOptions& o, const ExpectationFile& f, const std::vector<Case>& cases,
                             const std::vector<CaseResult>& results, const std::vector<bool>& here,
                             const RunHeader& header, const std::string& filter, bool named_files,
                             const std::string& json_out,
                             const std::string& junit_out, bool write, std::ostream& out) {
  if (results.empty()) {  // nothing compared is nothing met
    out << "\nexpectations: no result to compare with " << o.file << "\n";
    return 1;
  }
  const auto infos = case_infos(cases);
  const ExpectationComparison cmp = compare_expectations(f, infos, results, here, header.ranks, o.strict, filter, named_files);
  out << "\n" << expectation_summary(cmp, results);
  if (write) {
    if (!json_out.empty()) {
      nlohmann::json j = results_json(header, results);
      add_expectations_json(j, cmp);
      write_file_atomic(json_out, json_text(j, 2) + "\n");
    }
    if (!junit_out.empty()) write_file_atomic(junit_out, junit_xml(header, junit_view(cmp, results)));
  }
  if (o.update && write) {
    const ExpectationUpdate up = propose_update(cmp, infos, results);
    const std::string proposed = proposed_expectations_path(o);
    if (!up.changes()) {
      out << "\n--update-expectations: " << o.file << " needs no change; nothing written\n";
    } else {
      const std::string before = read_text(o.file), after = expectation_file_text(up.proposed);
      write_staging_file(proposed, after);
      out << "\n--update-expectations: wrote " << proposed << " (" << o.file << " is unchanged). Review it:\n";
      if (before != expectation_file_text(f))
        out << "  (" << o.file << " is not in the canonical layout: the diff also shows the re-layout)\n";
      for (const auto& l : up.added) out << "  added    " << l << "\n";
      for (const auto& l : up.removed) out << "  removed  " << l << "\n";
      for (const auto& l : up.changed) out << "  changed  " << l << "\n";
      if (after.find(kReasonPlaceholder) != std::string::npos)
        out << "Every " << kReasonPlaceholder << " reason must be written by hand (rcts refuses the file until then); then m";
      else
        out << "M";
      out << "ove " << proposed << " over " << o.file << ".\n\n"
          << unified_diff(before, after, o.file, proposed);
    }
    for (const auto& l : up.by_hand) out << "  by hand  " << l << "\n";
  }
  return cmp.ok() ? 0 : 1;
}

}  // namespace rcts::harness
