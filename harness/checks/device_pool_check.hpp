// The tracker's exact device peak against the backend pool's own high-water mark
// (design §3). The tracker is what budgets are checked with; the pool sees every device
// allocation the backend really made, rounded up and freed in stream order, so it can
// never hold less. Less means the tracker counts bytes that were never allocated.
#pragma once
#include <optional>
#include <string>

#include "reference/driver/execute.hpp"

namespace rcts::harness {

// Why `r`'s figures disagree, or nullopt (also when the backend has no pool).
std::optional<std::string> device_pool_disagreement(const RunRecord& r);

// "pool high water X bytes, tracker device peak Y bytes (pool/tracker Z)" when the
// backend has a pool; empty otherwise. For reports.
std::string device_pool_summary(const RunRecord& r);

}  // namespace rcts::harness
