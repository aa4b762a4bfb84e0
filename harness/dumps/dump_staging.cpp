// DumpStaging: mkdtemp beside the target, rename(2) into place at the end.
#include "harness/dumps/dump_staging.hpp"

#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <vector>

#include <nlohmann/json.hpp>

#include "harness/ranks/agreement.hpp"
#include "reference/core/error.hpp"

namespace rcts::harness {

namespace fs = std::filesystem;

namespace {

fs::path parent_of(const fs::path& p) { return p.has_parent_path() ? p.parent_path() : fs::path("."); }

// A new empty directory "<parent>/.<name>.<tag>-XXXXXX".
fs::path make_sibling(const fs::path& target, const char* tag, const std::string& option) {
  const std::string stem = std::string(".").append(target.filename().string()).append(".").append(tag);
  const std::string name = (parent_of(target) / (stem + "-XXXXXX")).string();
  std::vector<char> buf(name.begin(), name.end());
  buf.push_back('\0');
  if (!::mkdtemp(buf.data()))
    throw Error(option + " " + target.string() + ": cannot create a directory beside it: " + std::strerror(errno));
  return buf.data();
}

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
  return make_sibling(target, option.c_str() + 2, option);
}

}  // namespace

DumpStaging::DumpStaging(fs::path target, bool replace, RankAgreement* agreement, std::string option)
    : target_(std::move(target)), option_(std::move(option)) {
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

void DumpStaging::commit() {
  if (!owner_ || committed_) return;
  auto fail = [&](const std::string& what, int err) {
    committed_ = true;  // keep the staging directory: it holds the only copy of the dump
    throw Error(option_ + " " + target_.string() + ": " + what + ": " + std::strerror(err) + "; the dump is in " +
                staging_.string());
  };
  std::error_code ec;
  fs::path old;
  // rename(2) replaces an empty directory in one step; a non-empty one moves aside first.
  if (fs::is_directory(target_, ec) && !fs::is_empty(target_, ec)) {
    old = make_sibling(target_, "old", option_);
    if (std::rename(target_.c_str(), old.c_str()) != 0) fail("cannot move the old directory aside", errno);
  }
  if (std::rename(staging_.c_str(), target_.c_str()) != 0) fail("cannot rename " + staging_.string() + " to it", errno);
  committed_ = true;
  if (!old.empty()) fs::remove_all(old, ec);
}

}  // namespace rcts::harness
