// The pages of `rcts run --report DIR`: per case one self-contained HTML page (inline
// SVG and CSS, no script, nothing fetched) and an index.html linking every case with
// its outcome. A case page shows, per rank: saved bytes per layer and per module of
// the baseline and each variant beside the analytic model's figures, and per run the
// timeline of bytes held for backward over forward and backward (marks per
// micro-batch, the peak marked, the model's backward peak as a dashed line), with
// the offloaded bytes resident on the host when the run offloads. Every plotted
// number is also in a table below its chart.
#pragma once
#include <string>
#include <vector>

#include "harness/reports/report.hpp"
#include "harness/reports/report_data.hpp"

namespace rcts::harness {

struct CasePage {
  CaseResult result;
  std::string description;
  int world_size = 1;
  std::vector<RunPicture> runs;  // every rank's, rank order then run order
  std::string trace_file;        // relative link, empty: none
};

std::string case_page_html(const CasePage& page);

struct IndexEntry {
  CaseResult result;
  std::string page;  // relative link, empty: no page
};
std::string index_html(const RunHeader& header, const std::vector<IndexEntry>& entries);

// The page's file name for a case on a backend: "<id>.<backend>.html" (id as is:
// case ids are dotted words).
std::string page_name(const std::string& id, const std::string& backend);

}  // namespace rcts::harness
