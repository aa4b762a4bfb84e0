// Which checks apply to a run (docs/dump-format.md, "Checks over dumps"). rcts's own
// runs record everything, so every check applies; a run read from another
// implementation's dump may not declare rcts's arithmetic or lack an optional field,
// and a check that needs what the dump does not hold reports a skip saying why
// instead of judging nothing or something else. Each kind's rule is named by its
// registry entry (CheckKind::not_applicable, check_kinds.cpp); the rules live here.
#pragma once
#include <optional>
#include <string>
#include <vector>

#include "harness/checks/check_kinds.hpp"

namespace rcts::harness {

// Why kind `k` cannot judge the runs of `x` (a variant pass when x.run is set), or
// nothing when it can: its registry entry's rule, if it has one.
std::optional<std::string> not_applicable(const CheckKind& k, const CheckContext& x);

// The rules of the kinds whose evidence a dump may lack, one per kind of that name.
namespace inapplicable {
std::optional<std::string> golden(const CheckContext& x);  // a dump of other arithmetic
std::optional<std::string> counts(const CheckContext& x);
std::optional<std::string> memory(const CheckContext& x);  // a budget without the saved peak
std::optional<std::string> offload(const CheckContext& x);
std::optional<std::string> rng(const CheckContext& x);
std::optional<std::string> masks(const CheckContext& x);
std::optional<std::string> masks_across_ranks(const CheckContext& x);  // expert masks, opaque states
}  // namespace inapplicable

// Runs `pass` of kind k, or records a skip with the reason when it does not apply.
void run_check_pass(const CheckKind& k, CheckPass pass, const CheckContext& x, std::vector<CheckResult>& out);

// The golden files a record is judged against: those of the backend it ran on, or of
// the backend whose bits that backend shares (backends/registry.hpp).
std::string golden_backend_of(const CheckContext& x);

// Why the golden check skips for x's baseline: a backend that keeps no golden files
// (its bits depend on the device), or, for a record read from a dump, no golden
// directory for the backend it names. Nothing when it judges.
std::optional<std::string> no_goldens_reason(const CheckContext& x);

}  // namespace rcts::harness
