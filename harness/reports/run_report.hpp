// `rcts run --report DIR`: collects the pictures of every run of a case (report_data)
// while the runner runs it, and when the case is done writes, on rank 0,
// <id>.<backend>.html (html_report) and <id>.<backend>.trace.json (trace_json) into
// DIR; at the end index.html. In a multi-rank run every rank sends its pictures to
// rank 0 at the end of each case (one agreement exchange), so a page shows every rank.
// Files go through write_file_atomic; DIR is the --report staging directory
// (DumpStaging), moved into place when the run ends.
#pragma once
#include <filesystem>
#include <set>
#include <string>
#include <vector>

#include "harness/cases/case.hpp"
#include "harness/reports/report.hpp"
#include "harness/reports/report_data.hpp"

namespace rcts::harness {

class RankAgreement;

class RunReport {
 public:
  // `agreement`: null or one rank: no exchange.
  RunReport(std::filesystem::path dir, RankAgreement* agreement);

  // A run of the case in progress, on this rank.
  void add_run(const RunRecord& r, const std::string& label);
  // Every rank, after each case (collective in a multi-rank run).
  void finish_case(const Case& c, const CaseResult& r);
  // Rank 0: index.html over the run's results; cases without a page are listed unlinked.
  // A page that could not be written is an rcts::Error here, naming the path.
  void write_index(const RunHeader& header, const std::vector<CaseResult>& results);

 private:
  std::filesystem::path dir_;
  RankAgreement* agreement_;
  int rank_ = 0, size_ = 1;
  std::vector<RunPicture> current_;
  std::set<std::string> pages_;
  std::string error_;  // the first failed write
};

}  // namespace rcts::harness
