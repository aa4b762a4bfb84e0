#include "harness/matrix/matrix.hpp"
#include "harness/io/text_safety.hpp"

#include <algorithm>
#include <set>
#include <sstream>

#include "harness/io/json_reader.hpp"
#include "harness/reports/report.hpp"
#include "harness/io/strict_json.hpp"
#include "reference/core/error.hpp"

namespace rcts::harness {

using nlohmann::json;

namespace {

std::string first_line(const std::string& s) { return s.substr(0, s.find('\n')); }

std::string shorten(std::string s, size_t n) {
  if (s.size() > n) s = s.substr(0, n - 3) + "...";
  return s;
}

std::string join(const std::vector<std::string>& v) {
  std::string s;
  for (const auto& x : v) s += (s.empty() ? "" : ", ") + x;
  return s;
}

// The line of the reason naming the first divergence (README "Reading a failure").
std::string divergence_of(const MatrixCell& c, const std::vector<std::string>& details) {
  std::istringstream in(c.reason);
  for (std::string line; std::getline(in, line);)
    if (line.rfind("first divergence", 0) == 0) return line;
  if (!c.reason.empty()) return first_line(c.reason);
  return details.empty() ? "" : first_line(details.front());
}

std::string opt_str(const JsonReader& r, const char* key) { return r.has(key) ? r.at(key).str() : ""; }

struct ReadReport {
  std::string backend, git_sha, implementation, version;
  int ranks = 1;
  std::vector<std::pair<std::string, MatrixCell>> cells;  // (case id, cell) with the case's backend in backends
  std::vector<std::string> backends;                      // per cell
};

ReadReport read_report(const MatrixInput& in) {
  const JsonReader r(in.file, in.report);
  if (!r.json().is_object()) r.fail("expected an object (an rcts results JSON)");
  for (const char* key : {"schema", "schema_version", "header", "cases"})
    if (!r.has(key)) r.fail("missing key '" + std::string(key) + "' (an rcts results JSON, docs/json-report.md)");
  if (r.at("schema").str() != kResultsSchema) r.at("schema").fail("not an rcts results JSON");
  if (r.at("schema_version").integer(0, 1 << 20) != kResultsSchemaVersion)
    r.at("schema_version").fail("this rcts reads results version " + std::to_string(kResultsSchemaVersion));
  ReadReport out;
  const JsonReader h = r.at("header");
  if (!h.json().is_object()) h.fail("expected an object");
  if (!h.has("ranks")) h.fail("missing key 'ranks'");
  out.ranks = static_cast<int>(h.at("ranks").integer(1, 1 << 16));
  out.backend = opt_str(h, "backend");
  out.git_sha = opt_str(h, "git_sha");
  if (r.has("expectations")) {
    const JsonReader e = r.at("expectations");
    if (!e.json().is_object()) e.fail("expected an object");
    out.implementation = opt_str(e, "implementation");
    out.version = opt_str(e, "implementation_version");
  }
  const JsonReader cases = r.at("cases");
  std::set<std::pair<std::string, std::string>> seen;
  for (size_t i = 0; i < cases.array_size(); ++i) {
    const JsonReader c = cases.at(i);
    if (!c.json().is_object()) c.fail("expected an object");
    for (const char* key : {"id", "outcome", "checks"})
      if (!c.has(key)) c.fail("missing key '" + std::string(key) + "'");
    MatrixCell cell;
    const std::string id = c.at("id").str();
    const std::string backend = c.has("backend") ? c.at("backend").str() : out.backend;
    cell.outcome = c.at("outcome").str();
    try {
      parse_outcome(cell.outcome);
    } catch (const std::exception&) {
      c.at("outcome").fail("expected pass, fail, skip, xfail or error");
    }
    cell.reason = opt_str(c, "reason");
    std::vector<std::string> details;
    const JsonReader checks = c.at("checks");
    for (size_t k = 0; k < checks.array_size(); ++k) {
      const JsonReader ck = checks.at(k);
      if (!ck.json().is_object() || !ck.has("kind") || !ck.has("outcome")) ck.fail("expected {\"kind\", \"outcome\", ...}");
      if (ck.at("outcome").str() != "fail") continue;
      const std::string kind = ck.at("kind").str();
      if (std::find(cell.failing.begin(), cell.failing.end(), kind) == cell.failing.end()) cell.failing.push_back(kind);
      details.push_back(opt_str(ck, "detail"));
    }
    if (c.has("expectation")) {
      const JsonReader e = c.at("expectation");
      if (!e.json().is_object() || !e.has("verdict")) e.fail("expected {\"verdict\", ...}");
      cell.verdict = e.at("verdict").str();
    }
    cell.divergence = divergence_of(cell, details);
    if (!seen.insert({id, backend}).second)
      c.at("id").fail("case '" + id + "' is in the report twice on backend '" + backend + "'");
    out.cells.emplace_back(id, std::move(cell));
    out.backends.push_back(backend);
  }
  return out;
}

}  // namespace

Matrix build_matrix(const std::vector<MatrixInput>& inputs) {
  Matrix m;
  std::set<std::string> ids;
  struct Pending {
    size_t column;
    std::string id;
    MatrixCell cell;
  };
  std::vector<Pending> pending;
  for (const auto& in : inputs) {
    const ReadReport rep = read_report(in);
    std::vector<std::string> backends;
    for (const auto& b : rep.backends)
      if (std::find(backends.begin(), backends.end(), b) == backends.end()) backends.push_back(b);
    if (backends.empty()) backends.push_back(rep.backend);
    for (const auto& b : backends) {
      MatrixColumn col;
      col.file = in.file;
      col.backend = b;
      col.git_sha = rep.git_sha;
      col.version = rep.version;
      col.ranks = rep.ranks;
      const std::string np = " np" + std::to_string(rep.ranks);
      if (!in.label.empty())
        col.label = backends.size() > 1 ? in.label + " [" + b + "]" : in.label;
      else
        col.label = (rep.implementation.empty() ? b : rep.implementation) + np;
      for (const auto& other : m.columns)
        if (other.label == col.label)
          throw Error(in.file + ": column '" + col.label + "' is also " + other.file +
                      "'s: name them apart with LABEL=FILE");
      m.columns.push_back(col);
    }
    for (size_t i = 0; i < rep.cells.size(); ++i) {
      const size_t col = m.columns.size() - backends.size() +
                         static_cast<size_t>(std::find(backends.begin(), backends.end(), rep.backends[i]) - backends.begin());
      ids.insert(rep.cells[i].first);
      pending.push_back({col, rep.cells[i].first, rep.cells[i].second});
    }
  }
  // A row whose every cell is the skip of a config_error case says nothing per column.
  std::set<std::string> judged;
  for (const auto& p : pending)
    if (!(p.cell.outcome == "skip" && p.cell.reason == kConfigErrorSkip)) judged.insert(p.id);
  for (const auto& id : ids) (judged.count(id) ? m.rows : m.config_only).push_back(id);
  for (auto& p : pending) {
    if (!judged.count(p.id)) continue;
    const size_t row = static_cast<size_t>(std::lower_bound(m.rows.begin(), m.rows.end(), p.id) - m.rows.begin());
    m.cells[{row, p.column}] = std::move(p.cell);
  }
  return m;
}

std::string matrix_argument_file(const std::string& arg) {
  const auto eq = arg.find('=');
  return eq == std::string::npos ? arg : arg.substr(eq + 1);
}

std::vector<MatrixInput> read_matrix_inputs(const std::vector<std::string>& args) {
  std::vector<MatrixInput> inputs;
  for (const auto& a : args) {
    MatrixInput in;
    const auto eq = a.find('=');
    in.file = matrix_argument_file(a);
    if (eq != std::string::npos) {
      in.label = a.substr(0, eq);
      if (in.label.empty()) throw Error(a + ": an empty label before '=' (LABEL=FILE)");
    }
    in.report = read_json_file(in.file, "results JSON");
    inputs.push_back(std::move(in));
  }
  if (inputs.empty()) throw Error("rcts matrix: no results JSON given");
  return inputs;
}

std::string cell_text(const MatrixCell& c) {
  const std::string checks = c.failing.empty() ? "" : ": " + join(c.failing);
  const std::string why = c.reason.empty() ? "" : ": " + shorten(first_line(c.reason), 60);
  const std::string& v = c.verdict;
  if (v == "expected-fail") return "expected-fail" + checks;
  if (v == "expected-skip") return "expected-skip";
  if (v == "expected-error") return "expected-error" + why;
  if (v == "unexpected-pass") return "pass (unexpected)";
  if (v == "regression" || v == "different-failure") {
    const std::string what = c.outcome == "error" ? "error" : c.outcome == "skip" ? "skip" : "fail" + checks;
    return what + " (" + v + ")";
  }
  if (v == "unexpected-skip") return "skip (unexpected)" + why;
  if (c.outcome == "fail") return "fail" + checks;
  if (c.outcome == "skip") return "skip" + why;
  return c.outcome;  // pass, xfail, error
}

std::string cell_class(const MatrixCell& c) {
  const std::string& v = c.verdict;
  if (v == "expected-fail" || v == "expected-skip" || v == "expected-error") return "expected";
  if (v == "unexpected-pass") return "warn";
  if (v == "regression" || v == "different-failure" || v == "unexpected-skip") return "fail";
  return c.outcome;
}

namespace {

bool has_detail(const MatrixCell& c) { return c.outcome == "fail" || c.outcome == "error" || c.outcome == "xfail"; }

std::string md_escape(const std::string& s) {
  std::string out;
  for (char ch : s) {  // raw HTML would be markup in a rendered table; controls would drive a terminal
    if (ch == '|') out += "\\|";
    else if (ch == '\n' || ch == '\r') out += ' ';
    else if (ch == '<') out += "&lt;";
    else if (ch == '>') out += "&gt;";
    else if (ch == '&') out += "&amp;";
    else out += ch;
  }
  out = visible_controls(out);
  return out;
}

// Per column: "3 pass, 1 fail, 2 skip" (expectation verdicts counted by their class).
std::string column_summary(const Matrix& m, size_t col) {
  std::map<std::string, int> n;
  for (size_t r = 0; r < m.rows.size(); ++r) {
    const auto it = m.cells.find({r, col});
    if (it != m.cells.end()) ++n[cell_class(it->second)];
  }
  std::string s;
  for (const char* k : {"pass", "fail", "error", "skip", "xfail", "expected", "warn"})
    if (n[k]) s += (s.empty() ? "" : ", ") + std::to_string(n[k]) + " " + k;
  return s.empty() ? "no cases" : s;
}

std::string config_only_text(const Matrix& m) {
  return "Not drawn: " + std::to_string(m.config_only.size()) +
         " config_error case(s), which no implementation here runs (rcts judges their configs alone)";
}

}  // namespace

std::string matrix_markdown(const Matrix& m) {
  std::ostringstream os, notes;
  os << "| case |";
  for (const auto& c : m.columns) os << " " << md_escape(c.label) << " |";
  os << "\n|---|";
  for (size_t i = 0; i < m.columns.size(); ++i) os << "---|";
  os << "\n";
  int note = 0;
  for (size_t r = 0; r < m.rows.size(); ++r) {
    os << "| `" << md_escape(m.rows[r]) << "` |";
    for (size_t col = 0; col < m.columns.size(); ++col) {
      const auto it = m.cells.find({r, col});
      if (it == m.cells.end()) {
        os << " — |";
        continue;
      }
      const MatrixCell& c = it->second;
      const std::string cls = cell_class(c);
      std::string text = md_escape(cell_text(c));
      if (cls == "fail" || cls == "error") text = "**" + text + "**";
      if (has_detail(c) && !c.divergence.empty()) {
        ++note;
        text += " [" + std::to_string(note) + "]";
        notes << note << ". `" << md_escape(m.rows[r]) << "`, " << md_escape(m.columns[col].label) << ": "
              << md_escape(c.divergence) << "\n";
      }
      os << " " << text << " |";
    }
    os << "\n";
  }
  os << "| *summary* |";
  for (size_t col = 0; col < m.columns.size(); ++col) os << " " << column_summary(m, col) << " |";
  os << "\n";
  if (note) os << "\n" << notes.str();
  if (!m.config_only.empty()) {
    os << "\n" << config_only_text(m) << ": ";
    for (size_t i = 0; i < m.config_only.size(); ++i) os << (i ? ", " : "") << "`" << md_escape(m.config_only[i]) << "`";
    os << ".\n";
  }
  return os.str();
}

std::string matrix_html(const Matrix& m, const std::string& title) {
  auto e = [](const std::string& s) { return xml_escape(s); };
  std::ostringstream os, details;
  os << "<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\"><title>" << e(title) << "</title>\n<style>"
     << "body{font-family:sans-serif;margin:1.5em;color:#222}table{border-collapse:collapse;font-size:.9em}"
     << "th,td{border:1px solid #ccc;padding:.25em .5em;text-align:left;vertical-align:top}"
     << "thead th{background:#eee}th.case{font-family:monospace;font-weight:normal;white-space:nowrap}"
     << ".sub{color:#666;font-weight:normal;font-size:.8em}"
     << "td.pass{background:#e3f4e3}td.fail,td.error{background:#f9d6d6;font-weight:bold}"
     << "td.skip,td.absent{background:#f2f2f2;color:#666}td.xfail,td.expected{background:#fdf1d0}"
     << "td.warn{background:#fff3b0}tfoot td,tfoot th{background:#fafafa;font-size:.85em}"
     << "ol.details li{margin:.4em 0}pre{white-space:pre-wrap;margin:.2em 0;font-size:.85em}</style></head>\n<body>\n"
     << "<h1>" << e(title) << "</h1>\n<p>" << m.rows.size() << " case(s) down, " << m.columns.size()
     << " implementation(s) across. A failing cell's first divergence is in its title; the numbers link to the "
        "details below.</p>\n<table class=\"matrix\">\n<thead><tr><th>case</th>";
  for (const auto& c : m.columns) {
    std::string sub = c.backend + ", " + std::to_string(c.ranks) + " rank(s)";
    if (!c.version.empty()) sub = c.version + "; " + sub;
    os << "<th data-file=\"" << e(c.file) << "\" title=\"" << e(c.file + (c.git_sha.empty() ? "" : ", rcts " + c.git_sha))
       << "\">" << e(c.label) << "<br><span class=\"sub\">" << e(sub) << "</span></th>";
  }
  os << "</tr></thead>\n<tbody>\n";
  int note = 0;
  for (size_t r = 0; r < m.rows.size(); ++r) {
    os << "<tr><th class=\"case\">" << e(m.rows[r]) << "</th>";
    for (size_t col = 0; col < m.columns.size(); ++col) {
      const auto it = m.cells.find({r, col});
      if (it == m.cells.end()) {
        os << "<td class=\"absent\" title=\"not in this report\">—</td>";
        continue;
      }
      const MatrixCell& c = it->second;
      const std::string title_text = !c.divergence.empty() ? c.divergence : c.reason;
      os << "<td class=\"" << cell_class(c) << "\" data-outcome=\"" << e(c.outcome) << "\"";
      if (!c.verdict.empty()) os << " data-verdict=\"" << e(c.verdict) << "\"";
      if (!title_text.empty()) os << " title=\"" << e(title_text) << "\"";
      os << ">" << e(cell_text(c));
      if (has_detail(c) && !c.reason.empty()) {
        ++note;
        os << " <a href=\"#d" << note << "\">[" << note << "]</a>";
        details << "<li id=\"d" << note << "\"><b>" << e(m.rows[r]) << "</b> · " << e(m.columns[col].label) << ": "
                << e(cell_text(c)) << "<pre>" << xml_escape(c.reason, false) << "</pre></li>\n";
      }
      os << "</td>";
    }
    os << "</tr>\n";
  }
  os << "</tbody>\n<tfoot><tr><th>summary</th>";
  for (size_t col = 0; col < m.columns.size(); ++col) os << "<td>" << e(column_summary(m, col)) << "</td>";
  os << "</tr></tfoot>\n</table>\n";
  if (!m.config_only.empty()) {
    os << "<p class=\"config-only\">" << e(config_only_text(m)) << ": ";
    for (size_t i = 0; i < m.config_only.size(); ++i) os << (i ? ", " : "") << "<code>" << e(m.config_only[i]) << "</code>";
    os << ".</p>\n";
  }
  if (note) os << "<h2>Details</h2>\n<ol class=\"details\">\n" << details.str() << "</ol>\n";
  os << "</body></html>\n";
  return os.str();
}

}  // namespace rcts::harness
