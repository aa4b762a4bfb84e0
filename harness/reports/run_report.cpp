#include "harness/reports/run_report.hpp"
#include "harness/io/text_safety.hpp"

#include "harness/ranks/agreement.hpp"
#include "harness/io/atomic_file.hpp"
#include "harness/reports/html_report.hpp"
#include "harness/reports/trace_json.hpp"
#include "reference/core/error.hpp"

namespace rcts::harness {

RunReport::RunReport(std::filesystem::path dir, RankAgreement* agreement) : dir_(std::move(dir)), agreement_(agreement) {
  if (agreement_) {
    rank_ = agreement_->rank();
    size_ = agreement_->size();
  }
}

void RunReport::add_run(const RunRecord& r, const std::string& label) { current_.push_back(picture_of(r, label, rank_)); }

void RunReport::finish_case(const Case& c, const CaseResult& r) {
  std::vector<RunPicture> runs = std::move(current_);
  current_.clear();
  if (agreement_ && size_ > 1) {
    nlohmann::json mine = {{"runs", nlohmann::json::array()}};
    for (const auto& p : runs) mine["runs"].push_back(to_json(p));
    const auto all = agreement_->exchange("report " + c.id, mine);
    runs.clear();
    for (const auto& rank : all)
      for (const auto& p : rank.at("runs")) runs.push_back(picture_from_json(p));
  }
  if (rank_ != 0 || (runs.empty() && (r.outcome == Outcome::skip || r.outcome == Outcome::xfail))) return;
  CasePage page{r, c.description, size_, std::move(runs), ""};
  const std::string name = page_name(r.id, r.backend);
  try {
    if (!page.runs.empty()) {
      page.trace_file = name.substr(0, name.size() - 5) + ".trace.json";
      write_file_atomic(dir_ / page.trace_file, json_text(chrome_trace(r.id, page.runs)) + "\n");
    }
    write_file_atomic(dir_ / name, case_page_html(page));
    pages_.insert(name);
  } catch (const std::exception& e) {
    // Raised at the end (write_index), where every rank is past its last case: a
    // throw here would leave the other ranks waiting at the next exchange.
    if (error_.empty()) error_ = e.what();
  }
}

void RunReport::write_index(const RunHeader& header, const std::vector<CaseResult>& results) {
  if (rank_ != 0) return;
  if (!error_.empty()) throw Error("--report: " + error_);
  std::vector<IndexEntry> entries;
  for (const auto& r : results) {
    const std::string name = page_name(r.id, r.backend);
    entries.push_back({r, pages_.count(name) ? name : ""});
  }
  write_file_atomic(dir_ / "index.html", index_html(header, entries));
}

}  // namespace rcts::harness
