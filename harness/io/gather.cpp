#include "harness/io/gather.hpp"

#include <algorithm>
#include <cstdint>

namespace rcts::harness {

std::vector<std::string> all_gather_strings(Communicator& world, const std::string& mine) {
  const int n = world.size();
  std::vector<int64_t> sizes(static_cast<size_t>(n));
  const int64_t my_size = static_cast<int64_t>(mine.size());
  world.all_gather(&my_size, sizes.data(), sizeof(int64_t));
  const int64_t width = *std::max_element(sizes.begin(), sizes.end());
  std::string padded = mine;
  padded.resize(static_cast<size_t>(width));
  std::string all(static_cast<size_t>(width * n), '\0');
  world.all_gather(padded.data(), all.data(), width);
  std::vector<std::string> out;
  for (int r = 0; r < n; ++r) out.push_back(all.substr(static_cast<size_t>(r * width), static_cast<size_t>(sizes[static_cast<size_t>(r)])));
  return out;
}

}  // namespace rcts::harness
