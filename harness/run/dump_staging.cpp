// DumpStaging: mkdtemp beside the target, rename(2) into place at the end.
#include "harness/run/dump_staging.hpp"

#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <vector>

#include <nlohmann/json.hpp>

#include "harness/ranks/agreement.hpp"
#include "harness/io/atomic_file.hpp"
#include "reference/core/error.hpp"

namespace rcts::harness {

namespace fs = std::filesystem;

namespace {

fs::path parent_of(const fs::path& p) { return p.has_parent_path() ? p.parent_path() : fs::path("."); }

fs::path prepare(const fs::path& target, bool replace, const std::string& option) {
  std::error_code ec;
  const auto st = fs::status(target, ec);
  if (fs::exists(st)) {
    if (!fs::is_directory(st)) throw Error(option + " " + target.string() + ": exists and is not a directory");
    fs::directory_iterator it(target, ec);
    if (ec) throw Error(option + " " + target.string() + ": cannot read the directory: " + ec.message());
    if (it != fs::directory_iterator() && !replace)
      throw Error(option + " " + target.string() + ": the directory is not empty (it holds '" +
                  it->path().filename().string() + "'); pass " + option +
                  "-replace to replace it whole, or name another directory");
  }
  fs::create_directories(parent_of(target), ec);
  if (ec)
    throw Error(option + " " + target.string() + ": cannot create " + parent_of(target).string() + ": " + ec.message());
  sweep_leftovers(target, option.substr(2));
  return make_sibling_dir(target, option.substr(2), option + " " + target.string());
}

}  // namespace

DumpStaging::DumpStaging(fs::path target, bool replace, RankAgreement* agreement, std::string option)
    : target_(std::move(target)), option_(std::move(option)), agreement_(agreement), replace_(replace) {
  if (!target_.has_filename()) target_ = target_.parent_path();  // "out/dump/" names "out/dump"
  if (!agreement || agreement->size() == 1) {
    staging_ = prepare(target_, replace, option_);
    return;
  }
  owner_ = agreement->rank() == 0;
  nlohmann::json mine = nlohmann::json::object();
  if (owner_) {
    try {
      staging_ = prepare(target_, replace, option_);
      mine["dir"] = staging_.string();
    } catch (const std::exception& e) {
      mine["error"] = e.what();
    }
  }
  const auto all = agreement->exchange(option_.substr(2), mine);
  if (all.at(0).contains("error")) throw AgreedError(all[0]["error"].get<std::string>());
  staging_ = all[0].at("dir").get<std::string>();
}

DumpStaging::~DumpStaging() {
  if (!owner_ || committed_ || staging_.empty()) return;
  std::error_code ec;
  fs::remove_all(staging_, ec);
}

void DumpStaging::commit(const std::string& failure) {
  if (committed_) return;
  std::string why = failure.empty() ? "" : "this rank: " + failure;
  if (agreement_ && agreement_->size() > 1) {
    nlohmann::json mine = nlohmann::json::object();
    if (!failure.empty()) mine["incomplete"] = failure;
    const auto all = agreement_->exchange(option_.substr(2) + " commit", mine);
    why.clear();
    for (size_t r = 0; r < all.size() && why.empty(); ++r)
      if (all[r].contains("incomplete")) why = "rank " + std::to_string(r) + ": " + all[r]["incomplete"].get<std::string>();
  }
  committed_ = true;
  std::error_code ec;
  if (!why.empty()) {
    if (owner_) fs::remove_all(staging_, ec);
    const std::string msg = option_ + " " + target_.string() + ": not written, " +
                            (fs::exists(target_, ec) ? "the directory is as it was" : "nothing was created") +
                            ": a part of the dump could not be written (" + why + ")";
    if (agreement_ && agreement_->size() > 1) throw AgreedError(msg);
    throw Error(msg);
  }
  if (!owner_) return;
  bool exchanged = false;
  if (const int err = put_directory(staging_, target_, replace_, exchanged); err != 0) {
    fs::remove_all(staging_, ec);
    throw Error(option_ + " " + target_.string() + ": not written: " +
                (err == ENOTEMPTY ? std::string("another run filled the directory meanwhile (pass ") + option_ +
                                        "-replace to replace it whole)"
                                  : "cannot put " + staging_.string() + " in its place: " + std::strerror(err)));
  }
  if (exchanged) fs::remove_all(staging_, ec);  // the old contents
}

}  // namespace rcts::harness
