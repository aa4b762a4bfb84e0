// What the profiles' layer models share: the config's sizes and one way to add an entry
// (its bytes from dtype and shape, overflow-checked). Internal to memory_model.
#pragma once
#include <string>
#include <string_view>
#include <vector>

#include "reference/memory_model/saved_profile.hpp"

namespace rcts::profile_detail {

struct Sizes {
  explicit Sizes(const Config& c);
  int64_t s, b, h, a, F, tp;
  std::string act;  // the activation dtype's name
};

class Entries {
 public:
  explicit Entries(const SavedProfile& p) : p_(p) {}
  void add(std::string module, std::string_view row, std::string tensor, std::string dtype,
           std::vector<int64_t> shape);
  std::vector<SavedEntry> take() { return std::move(out_); }

 private:
  const SavedProfile& p_;
  std::vector<SavedEntry> out_;
};

bool has(const std::vector<std::string>& modules, std::string_view m);

const SavedProfile& torch_cpu();
const SavedProfile& megatron_core_cpu();

}  // namespace rcts::profile_detail
