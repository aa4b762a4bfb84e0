// Expectation files (docs/expectations.md): for one implementation at one version, the
// cases (and their checks) expected not to pass, each with a reason. Every case not
// named is expected to pass. Parsing is strict: a file that would be read one way by
// rcts and another by its reviewer is refused, naming the file, the JSON path and the
// value. Conflicts between entries are found against a case set (globs overlap only
// through the ids they match): conflicts().
#pragma once
#include <compare>
#include <filesystem>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

namespace rcts::harness {

inline constexpr const char* kExpectationsFormat = "rcts-expectations";
inline constexpr int kExpectationsVersion = 1;

// fail: checks fail; skip: the case is not run, for a named reason; error: the
// implementation raised (an adapter's ERRORED marker), with a named message.
enum class ExpectedOutcome { fail, skip, error };

// How a result's reason starts when the implementation itself raised (an adapter's
// ERRORED marker, harness/cli/expect.hpp): the one error an entry can expect. Any other
// error is rcts's or the dump's, to be fixed, never expected.
inline constexpr const char* kImplementationRaised = "the implementation raised: ";

// One failing check of a failure's signature: its kind, the run its message names (the
// text before the message's first ": ", e.g. "baseline"; empty when there is none) and
// what differed (the rest of the message's first line, cut to kMaxDiffersChars). A
// pinned signature makes "the same checks failed differently" a different failure.
struct SignatureItem {
  std::string check, run, differs;
  auto operator<=>(const SignatureItem&) const = default;
};
inline constexpr size_t kMaxDiffersChars = 200;
// The item of a failing check's message (CheckResult::detail).
SignatureItem signature_item(const std::string& kind, const std::string& detail);

struct ExpectationEntry {
  size_t index = 0;            // position in "entries", as errors and reports name it
  std::string case_pattern;    // a case id or a glob (*, ?, [...]) over case ids
  std::vector<int> ranks;      // world sizes it applies to; empty: every world size
  ExpectedOutcome outcome = ExpectedOutcome::fail;
  std::vector<std::string> checks;  // fail: exactly the kinds expected to fail (sorted)
  std::vector<SignatureItem> signature;  // fail, one case: every failing check as seen (sorted); empty: not pinned
  // skip and error (required): a reason pattern (case_pattern.hpp) the result's reason
  // must match ("skip_reason", "error_reason"); a skip or an error for another reason
  // (an adapter's crash in its own setup, say) is not the expected one.
  std::string reason_pattern;
  std::string reason;
  std::string issue;  // optional URL

  bool applies_at(int world_size) const;
  bool matches(const std::string& case_id) const;
  std::string label() const;  // "entry 3 ('moe.*')"
};

struct ExpectationFile {
  std::string file;  // as given, for messages
  std::string implementation, implementation_version;
  std::vector<ExpectationEntry> entries;
};

// A case as the expectation code needs it: its id and the world sizes it runs at.
struct CaseInfo {
  std::string id;
  std::vector<int> ranks = {1};
};

// The check kinds an entry may name: every result kind a check can report.
std::vector<std::string> expectable_check_kinds();

// "fail", "skip", "error": the file's word for an outcome.
const char* expected_outcome_name(ExpectedOutcome o);
// "skip_reason" or "error_reason"; "" for fail.
const char* reason_pattern_key(ExpectedOutcome o);

// Throws rcts::Error naming `file`, the JSON path and the value.
ExpectationFile parse_expectation_file(const nlohmann::json& j, const std::string& file);
ExpectationFile read_expectation_file(const std::filesystem::path& file);

// Every (case, world size) of `cases` that two entries both match, as messages naming
// both entries; empty: none. At world sizes the case runs at.
std::vector<std::string> expectation_conflicts(const ExpectationFile& f, const std::vector<CaseInfo>& cases);
// Throws rcts::Error listing the conflicts, if any.
void refuse_conflicts(const ExpectationFile& f, const std::vector<CaseInfo>& cases);

// The canonical text of a file: keys in the documented order, one entry per block,
// arrays on one line; what --update-expectations writes and diffs against.
std::string expectation_file_text(const ExpectationFile& f);

// The placeholder --update-expectations writes for a reason a person must give; a file
// still holding one is refused.
inline constexpr const char* kReasonPlaceholder = "TODO(review):";

}  // namespace rcts::harness
