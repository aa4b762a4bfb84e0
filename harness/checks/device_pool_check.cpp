#include "harness/checks/device_pool_check.hpp"

#include <cstdio>

namespace rcts::harness {

std::optional<std::string> device_pool_disagreement(const RunRecord& r) {
  if (!r.device_pool_high_water || *r.device_pool_high_water >= r.device_peak) return std::nullopt;
  return "backend '" + r.backend + "': the device pool's high-water mark (" + std::to_string(*r.device_pool_high_water) +
         " bytes) is below the tracker's device peak (" + std::to_string(r.device_peak) +
         " bytes): the tracker counts device bytes that were never allocated";
}

std::string device_pool_summary(const RunRecord& r) {
  if (!r.device_pool_high_water) return "";
  char ratio[32];
  std::snprintf(ratio, sizeof ratio, "%.3f",
                r.device_peak > 0 ? static_cast<double>(*r.device_pool_high_water) / static_cast<double>(r.device_peak) : 0.0);
  return "pool high water " + std::to_string(*r.device_pool_high_water) + " bytes, tracker device peak " +
         std::to_string(r.device_peak) + " bytes (pool/tracker " + ratio + ")";
}

}  // namespace rcts::harness
