// Strict JSON reading with locations: every error names the file, the JSON
// pointer path and the offending value.
#pragma once
#include <algorithm>
#include <initializer_list>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "reference/core/error.hpp"

namespace rcts::harness {

class JsonReader {
 public:
  JsonReader(std::string file, const nlohmann::json& j, std::string path = "")
      : file_(std::move(file)), j_(j), path_(std::move(path)) {}

  [[noreturn]] void fail(const std::string& what) const {
    throw Error(file_ + ": " + (path_.empty() ? "/" : path_) + " = " + brief(j_) + ": " + what);
  }
  const nlohmann::json& json() const { return j_; }
  const std::string& path() const { return path_; }
  const std::string& file() const { return file_; }

  void expect_object(std::initializer_list<const char*> allowed) const {
    expect_object(std::vector<std::string>(allowed.begin(), allowed.end()));
  }
  void expect_object(const std::vector<std::string>& allowed) const {
    if (!j_.is_object()) fail("expected an object");
    for (const auto& [k, v] : j_.items()) {
      if (std::find(allowed.begin(), allowed.end(), k) != allowed.end()) continue;
      std::string list;
      for (const auto& a : allowed) list += (list.empty() ? "" : ", ") + a;
      JsonReader(file_, v, path_ + "/" + k).fail("unknown key '" + k + "' (allowed: " + list + ")");
    }
  }
  bool has(const char* key) const { return j_.is_object() && j_.contains(key); }
  JsonReader at(const char* key) const { return JsonReader(file_, j_.at(key), path_ + "/" + key); }
  JsonReader at(size_t i) const { return JsonReader(file_, j_.at(i), path_ + "/" + std::to_string(i)); }

  std::string str() const {
    if (!j_.is_string()) fail("expected a string");
    return j_.get<std::string>();
  }
  bool boolean() const {
    if (!j_.is_boolean()) fail("expected true or false");
    return j_.get<bool>();
  }
  int64_t integer(int64_t lo, int64_t hi) const {
    if (!j_.is_number_integer()) fail("expected an integer");
    const auto v = j_.get<int64_t>();
    if (v < lo || v > hi) fail("out of range [" + std::to_string(lo) + ", " + std::to_string(hi) + "]");
    return v;
  }
  double number(double lo, double hi) const {
    if (!j_.is_number()) fail("expected a number");
    const auto v = j_.get<double>();
    if (!(v >= lo && v <= hi)) fail("out of range [" + std::to_string(lo) + ", " + std::to_string(hi) + "]");
    return v;
  }
  size_t array_size() const {
    if (!j_.is_array()) fail("expected an array");
    return j_.size();
  }

 private:
  static std::string brief(const nlohmann::json& j) {
    std::string s = j.dump();
    return s.size() > 80 ? s.substr(0, 77) + "..." : s;
  }
  std::string file_;
  const nlohmann::json& j_;
  std::string path_;
};

}  // namespace rcts::harness
