// Writers for run results: progress lines, summary table, JSON, JUnit XML.
#include "harness/reports/report.hpp"
#include "harness/io/text_safety.hpp"

#include <algorithm>
#include <cstdio>
#include <sstream>

#include "reference/core/error.hpp"

namespace rcts::harness {

namespace {

std::string fixed(double v, int decimals) {
  char buf[64];
  std::snprintf(buf, sizeof buf, "%.*f", decimals, v);
  return buf;
}

std::string first_line(const std::string& s) { return s.substr(0, s.find('\n')); }

std::string pad(std::string s, size_t width) {
  if (s.size() < width) s.append(width - s.size(), ' ');
  return s;
}

std::string pad_left(std::string s, size_t width) {
  if (s.size() < width) s.insert(0, width - s.size(), ' ');
  return s;
}

}  // namespace

// The case as reports name it: its id, and the backend unless it is the reference.
std::string display_id(const CaseResult& c) {
  return c.backend.empty() || c.backend == "cpu" ? c.id : c.id + " [" + c.backend + "]";
}

std::string short_detail(const CaseResult& c, size_t max_chars) {
  std::string s = first_line(c.reason);
  if (s.empty()) {
    for (const auto& k : c.checks) {
      if (k.outcome == Outcome::pass) continue;
      s = k.kind + ": " + first_line(k.detail);
      break;
    }
  }
  if (s.size() > max_chars) s = s.substr(0, max_chars > 3 ? max_chars - 3 : 0) + "...";
  return s;
}

std::string summary_table(const RunHeader& h, const std::vector<CaseResult>& cases) {
  std::ostringstream os;
  os << "version   " << h.version << "\n"
     << "git sha   " << h.git_sha << "\n"
     << "backend   " << h.backend << "\n"
     << "ranks     " << h.ranks << "\n"
     << "seed      " << (h.seed ? std::to_string(h.seed) : std::string("per case (run.seed)")) << "\n"
     << "started   " << h.started_at << "\n\n";

  size_t id_w = 4;
  for (const auto& c : cases) id_w = std::max(id_w, display_id(c).size());
  os << pad("case", id_w) << "  outcome  " << pad_left("seconds", 8) << "  detail\n";
  os << std::string(id_w, '-') << "  -------  " << std::string(8, '-') << "  " << std::string(6, '-') << "\n";
  for (const auto& c : cases) {
    std::string row = pad(display_id(c), id_w) + "  " + pad(std::string(outcome_label(c.outcome)), 7) + "  " +
                      pad_left(fixed(c.seconds, 2), 8) + "  " + short_detail(c);
    while (!row.empty() && row.back() == ' ') row.pop_back();
    os << row << "\n";
  }
  os << "\n";
  const Tally t = tally(cases);
  if (t.errors || t.xfail) {
    std::string note;
    if (t.errors) note += std::to_string(t.errors) + " error(s) counted as failed";
    if (t.xfail) note += (note.empty() ? "" : "; ") + std::to_string(t.xfail) + " xfail counted as skipped";
    os << note << "\n";
  }
  os << summary_line(cases) << "\n";
  return os.str();
}

// docs/json-report.md: everything outside "timing" depends only on the code, the cases
// and the command, so two identical runs give identical bytes there.
nlohmann::json results_json(const RunHeader& header, const std::vector<CaseResult>& cases) {
  const Tally t = tally(cases);
  nlohmann::json head = header;
  head.erase("started_at");
  nlohmann::json results = nlohmann::json::array(), times = nlohmann::json::array();
  double total_s = 0;
  for (const auto& c : cases) {
    nlohmann::json j = c;
    j.erase("seconds");
    results.push_back(std::move(j));
    nlohmann::json t = {{"id", c.id}, {"backend", c.backend}, {"seconds", c.seconds}};
    for (const auto& k : c.checks)
      if (!k.timing.empty()) t["checks"].push_back({{"kind", k.kind}, {"timing", k.timing}});
    times.push_back(std::move(t));
    total_s += c.seconds;
  }
  return {{"schema", kResultsSchema},
          {"schema_version", kResultsSchemaVersion},
          {"header", head},
          {"summary",
           {{"total", cases.size()},
            {"passed", t.passed},
            {"failed", t.failed},
            {"skipped", t.skipped},
            {"xfail", t.xfail},
            {"errors", t.errors}}},
          {"cases", results},
          {"timing", {{"started_at", header.started_at}, {"total_seconds", total_s}, {"cases", times}}}};
}

std::string xml_escape(std::string_view s, bool attribute) {
  std::string out;
  out.reserve(s.size());
  for (char ch : valid_utf8(s)) {  // XML must be UTF-8: a stray byte would make the file unreadable
    const auto c = static_cast<unsigned char>(ch);
    switch (ch) {
      case '&': out += "&amp;"; break;
      case '<': out += "&lt;"; break;
      case '>': out += "&gt;"; break;
      case '"': out += "&quot;"; break;
      case '\'': out += "&apos;"; break;
      case '\n': out += attribute ? "&#10;" : "\n"; break;
      case '\r': out += attribute ? "&#13;" : "\r"; break;
      case '\t': out += attribute ? "&#9;" : "\t"; break;
      default:
        if (c < 0x20) {
          char buf[8];
          std::snprintf(buf, sizeof buf, "\\x%02x", c);
          out += buf;
        } else {
          out += ch;
        }
    }
  }
  return out;
}

namespace {
// tests="..." failures="..." errors="..." skipped="..." time="..."
std::string junit_counts(const std::vector<CaseResult>& cases) {
  const Tally t = tally(cases);
  double total_s = 0;
  for (const auto& c : cases) total_s += c.seconds;
  return "tests=\"" + std::to_string(cases.size()) + "\" failures=\"" + std::to_string(t.failed) + "\" errors=\"" +
         std::to_string(t.errors) + "\" skipped=\"" + std::to_string(t.skipped + t.xfail) + "\" time=\"" +
         fixed(total_s, 3) + "\"";
}
}  // namespace

std::string junit_xml(const RunHeader& h, const std::vector<CaseResult>& cases) {
  return "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n<testsuites name=\"rcts\" " + junit_counts(cases) + ">\n" +
         junit_testsuite(h, cases) + "</testsuites>\n";
}

std::string junit_testsuite(const RunHeader& h, const std::vector<CaseResult>& cases) {
  const std::string counts = junit_counts(cases);
  std::ostringstream os;
  // Reports of one case set at 1, 2 and 4 ranks are merged by CI: the suite and every
  // case carry the world size, and a case its full id and backend.
  const std::string suite = junit_suite_name(h);
  os << "  <testsuite name=\"" << xml_escape(suite) << "\" " << counts << " timestamp=\"" << xml_escape(h.started_at)
     << "\">\n";
  os << "    <properties>\n";
  const std::pair<const char*, std::string> props[] = {{"version", h.version},
                                                       {"git_sha", h.git_sha},
                                                       {"backend", h.backend},
                                                       {"ranks", std::to_string(h.ranks)},
                                                       {"seed", std::to_string(h.seed)}};
  for (const auto& [k, v] : props)
    os << "      <property name=\"" << k << "\" value=\"" << xml_escape(v) << "\"/>\n";
  os << "    </properties>\n";

  for (const auto& c : cases) {
    os << "    <testcase classname=\"" << xml_escape(suite) << "\" name=\"" << xml_escape(junit_case_name(h, c))
       << "\" file=\""
       << xml_escape(c.file) << "\" time=\"" << fixed(c.seconds, 3) << "\"";
    if (c.outcome == Outcome::pass) {
      os << "/>\n";
      continue;
    }
    os << ">\n";
    std::string body;
    for (const auto& k : c.checks)
      if (k.outcome != Outcome::pass)
        body.append("[").append(outcome_name(k.outcome)).append("] ").append(k.kind + ": " + k.detail + "\n");
    const std::string message = c.reason.empty() ? short_detail(c, 200) : c.reason;
    if (body.empty()) body = message;
    switch (c.outcome) {
      case Outcome::fail:
      case Outcome::error: {
        const char* tag = c.outcome == Outcome::fail ? "failure" : "error";
        os << "      <" << tag << " type=\"" << outcome_name(c.outcome) << "\" message=\"" << xml_escape(message)
           << "\">" << xml_escape(body, false) << "</" << tag << ">\n";
        break;
      }
      case Outcome::skip: os << "      <skipped message=\"" << xml_escape(message) << "\"/>\n"; break;
      case Outcome::xfail: os << "      <skipped message=\"xfail: " << xml_escape(message) << "\"/>\n"; break;
      case Outcome::pass: break;
    }
    os << "    </testcase>\n";
  }
  os << "  </testsuite>\n";
  return os.str();
}

std::string junit_suite_name(const RunHeader& h) { return "rcts.np" + std::to_string(h.ranks); }

std::string junit_case_name(const RunHeader& h, const CaseResult& c) {
  const std::string backend = c.backend.empty() ? h.backend : c.backend;
  return c.id + " [" + backend + ", np" + std::to_string(h.ranks) + "]";
}

std::vector<std::string> judged_lines(const CaseResult& c) {
  std::vector<std::string> kinds;
  for (const auto& ch : c.checks)
    if (std::find(kinds.begin(), kinds.end(), ch.kind) == kinds.end()) kinds.push_back(ch.kind);
  std::vector<std::string> out;
  for (const auto& kind : kinds) {
    int judged = 0, failed = 0;
    std::vector<std::string> skips, unjudged;
    for (const auto& ch : c.checks) {
      if (ch.kind != kind) continue;
      if (ch.outcome == Outcome::skip) {
        if (std::find(skips.begin(), skips.end(), ch.detail) == skips.end()) skips.push_back(ch.detail);
        continue;
      }
      ++judged;
      failed += ch.outcome == Outcome::fail || ch.outcome == Outcome::error;
      for (const auto& n : ch.not_judged)
        if (std::find(unjudged.begin(), unjudged.end(), n) == unjudged.end()) unjudged.push_back(n);
    }
    std::string line = kind + ": ";
    if (judged) {
      line += "judged " + std::to_string(judged) + (judged == 1 ? " run, " : " runs, ") +
              (failed ? std::to_string(failed) + " fail" : std::string("all pass"));
      if (!skips.empty()) line += "; " + std::to_string(skips.size()) + " skipped (" + skips.front() + ")";
    } else {
      line += "skip: " + (skips.empty() ? std::string("nothing judged") : skips.front());
    }
    if (!unjudged.empty()) line += "; not judged: " + unjudged.front();
    out.push_back(line.substr(0, line.find('\n')));
  }
  return out;
}

std::string progress_line(int index, int total, const CaseResult& c) {
  const int width = static_cast<int>(std::to_string(total).size());
  char prefix[64];
  std::snprintf(prefix, sizeof prefix, "[%*d/%d] ", width, index, total);
  std::string line = prefix + std::string(outcome_label(c.outcome)) + " " + display_id(c) + " (" + fixed(c.seconds, 2) + " s)";
  if (c.outcome != Outcome::pass) {
    const std::string d = short_detail(c);
    if (!d.empty()) line += ": " + d;
  }
  return line;
}

}  // namespace rcts::harness
