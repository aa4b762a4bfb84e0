// The verdict logic at its edges, as tables of inputs and exact outputs: case patterns
// (syntax refused, matching checked against fnmatch(3) as an independent oracle), world
// sizes of "ranks" lists, failure signatures, --filter and stale entries, the update's
// rule never to drop what the run did not judge, and the property that what the JSON,
// the JUnit view and the matrix show is the verdict compared from the cases themselves.
#include <fnmatch.h>
#include <gtest/gtest.h>

#include <map>

#include "harness/expectations/case_pattern.hpp"
#include "harness/expectations/expectation_compare.hpp"
#include "harness/expectations/expectation_file.hpp"
#include "harness/expectations/expectation_update.hpp"
#include "harness/io/strict_json.hpp"
#include "harness/matrix/matrix.hpp"
#include "reference/core/error.hpp"

namespace rcts::harness {
namespace {

using nlohmann::json;

json file_with(std::vector<json> entries) {
  return {{"format", "rcts-expectations"},
          {"version", 1},
          {"implementation", "torch"},
          {"implementation_version", "2.15"},
          {"entries", std::move(entries)}};
}

ExpectationFile parse(std::vector<json> entries) { return parse_expectation_file(file_with(std::move(entries)), "exp.json"); }

std::string entry_error(json entry) {
  try {
    parse(std::vector<json>{std::move(entry)});
  } catch (const Error& e) {
    return e.message();
  }
  return "";
}

json skip_entry(const std::string& c) {
  return {{"case", c}, {"outcome", "skip"}, {"skip_reason", "*dense only*"}, {"reason", "r"}};
}
json error_entry(const std::string& c, const std::string& pattern) {
  return {{"case", c}, {"outcome", "error"}, {"error_reason", pattern}, {"reason", "r"}};
}
json fail_entry(const std::string& c, std::vector<std::string> checks) {
  return {{"case", c}, {"outcome", "fail"}, {"checks", checks}, {"reason", "r"}};
}

CaseResult result(const std::string& id, Outcome o, std::vector<std::pair<std::string, std::string>> failing = {},
                  const std::string& reason = "") {
  CaseResult r;
  r.id = id;
  r.file = "cases/" + id + ".json";
  r.backend = "torch";
  r.outcome = o;
  r.reason = reason;
  for (const auto& [kind, detail] : failing) r.checks.push_back({kind, Outcome::fail, detail});
  if (o == Outcome::pass) r.checks.push_back({"bitwise", Outcome::pass, "baseline: equal"});
  return r;
}

// --- case patterns ------------------------------------------------------------------

TEST(CasePattern, SyntaxErrorsAreRefusedNamingOffsetAndCharacter) {
  const std::vector<std::pair<std::string, std::string>> table = {
      {"moe.[ab", "an unclosed '[' at offset 4"},
      {"moe.[", "an unclosed '[' at offset 4"},
      {"[]", "an unclosed '[' at offset 0"},
      {"[!]", "an unclosed '[' at offset 0"},
      {"a[[:alpha:]]", "a POSIX class '[' at offset 2 (list the characters instead)"},
      {"a[z-a]", "the range z-a at offset 2 is reversed"},
      {"a\\*", "a backslash at offset 1: case ids hold no character to escape"},
      {std::string("h.small\0zzz", 11), "byte 0x00 at offset 7 can never match a case id (letters, digits, '.', '_', '-')"},
      {"h.small ", "byte 0x20 at offset 7 can never match a case id (letters, digits, '.', '_', '-')"},
      {"a/b", "'/' at offset 1 can never match a case id (letters, digits, '.', '_', '-')"},
      {"[a/]x", "'/' at offset 2 in a set can never match a case id"},
      {"x[a-/]", "'/' at offset 4 in a set can never match a case id"},
      {"\xc3\xa9", "byte 0xc3 at offset 0 can never match a case id (letters, digits, '.', '_', '-')"},
      {"", "an empty case pattern"},
  };
  for (const auto& [pattern, why] : table) {
    EXPECT_EQ(case_pattern_error(pattern).value_or("accepted"), why) << json(pattern).dump();
    // Through the file: the message names the file, the JSON path and the value.
    EXPECT_EQ(entry_error(skip_entry(pattern)), "exp.json: /entries/0/case = " + json(pattern).dump() + ": " + why);
  }
}

TEST(CasePattern, MatchesAsFnmatchDoesOnEveryAcceptedPattern) {
  struct Row {
    std::string pattern, id;
    bool match;
  };
  const std::vector<Row> table = {
      {"moe.*", "moe.tp2.ep2", true},       {"moe.*", "moex", false},
      {"*", "a", true},                     {"a*b", "ab", true},
      {"a*b", "axxbxb", true},              {"a*b", "axxbx", false},
      {"*.f32", "full.block.f32", true},    {"*.f32", "full.block.bf16", false},
      {"full.block.?f16", "full.block.bf16", true}, {"full.block.?f16", "full.block.f16", false},
      {"rng.[ab]*", "rng.b_only", true},    {"rng.[ab]*", "rng.c", false},
      {"rng.[!ab]x", "rng.cx", true},       {"rng.[!ab]x", "rng.ax", false},
      {"rng.[^ab]x", "rng.cx", true},       {"[a-c]1", "b1", true},
      {"[a-c]1", "d1", false},              {"x[-a]", "x-", true},
      {"x[a-]", "x-", true},                {"x[a-]", "xb", false},
      {"x[]a]", "xa", true},                {"x[0-9_]y", "x_y", true},
      {"h.small", "h.small", true},         {"h.small", "h.small2", false},
      {"h.small", "h.smal", false},         {"*a*a*", "banana", true},
      {"*a*a*a*a", "banana", false},        {"selective.core_attn.f32", "selective.core_attn.f32", true},
  };
  for (const auto& row : table) {
    ASSERT_FALSE(case_pattern_error(row.pattern)) << row.pattern;
    EXPECT_EQ(case_pattern_matches(row.pattern, row.id), row.match) << row.pattern << " vs " << row.id;
    EXPECT_EQ(fnmatch(row.pattern.c_str(), row.id.c_str(), 0) == 0, row.match) << "fnmatch: " << row.pattern;
  }
  EXPECT_FALSE(is_case_glob("selective.core_attn.f32"));
  EXPECT_TRUE(is_case_glob("a?"));
  EXPECT_TRUE(is_case_glob("[ab]"));
}

TEST(ExpectationFile, IssueLinksAndNulBytesAreRefused) {
  const std::vector<std::pair<std::string, std::string>> urls = {
      {"https://", "no host after the scheme"},
      {"https:///x", "no host after the scheme"},
      {"ftp://example.org/1", "no http:// or https:// scheme"},
      {"https://a b", "the host ends in ' '"},
      {"https://example.org/a b", "a space or control character"},
      {"https://example.org/\x01", "a space or control character"},
      {"https://example.org@x", "the host ends in '@'"},
  };
  for (const auto& [url, why] : urls) {
    json e = skip_entry("a");
    e["issue"] = url;
    EXPECT_EQ(entry_error(e), "exp.json: /entries/0/issue = " + json(url).dump() +
                                  ": expected a URL (http:// or https://, then a host): " + why);
  }
  for (const char* good : {"https://github.com/o/r/issues/1", "http://localhost:8080/x", "https://example.org"}) {
    json e = skip_entry("a");
    e["issue"] = good;
    EXPECT_EQ(entry_error(e), "") << good;
  }
  // A NUL byte ends the JSON lexer's input: what follows it would be read as nothing.
  const std::string text = file_with({}).dump();
  EXPECT_EQ(parse_json_text(text, "x.json"), file_with({}));
  for (const auto& [bad, offset] : std::vector<std::pair<std::string, size_t>>{
           {text + std::string(1, '\0'), text.size()}, {text + std::string("\0{\"more\": 1}", 12), text.size()},
           {std::string("\0", 1) + text, 0}}) {
    try {
      parse_json_text(bad, "x.json");
      ADD_FAILURE() << "accepted a NUL at " << offset;
    } catch (const Error& e) {
      EXPECT_EQ(e.message(), "x.json: a NUL byte at offset " + std::to_string(offset) + " (JSON text holds none)");
    }
  }
}

// --- world sizes ----------------------------------------------------------------------

// An entry for ranks [2, 4] applies at 2 and at 4, and at no other size.
TEST(ExpectationRanks, EveryListedWorldSizeIsJudged) {
  json e = fail_entry("tp.x", {"memory"});
  e["ranks"] = {2, 4};
  const auto f = parse({e});
  const std::vector<CaseInfo> cases = {{"tp.x", {1, 2, 4, 8}}};
  const std::vector<CaseResult> failed = {result("tp.x", Outcome::fail, {{"memory", "baseline: over"}})};
  const std::map<int, std::pair<std::string, std::string>> want = {
      {1, {"regression", "not-in-run"}},
      {2, {"expected-fail", "matched"}},
      {4, {"expected-fail", "matched"}},
      {8, {"regression", "not-in-run"}},
  };
  for (const auto& [w, v] : want) {
    const auto cmp = compare_expectations(f, cases, failed, {true}, w, false);
    EXPECT_EQ(verdict_name(cmp.results[0].verdict), v.first) << w;
    EXPECT_EQ(entry_status_name(cmp.entries[0].status), v.second) << w;
  }
  // An entry for 4 alone meets the [2, 4] one at 4: a conflict at parse time.
  json at4 = skip_entry("tp.x");
  at4["ranks"] = {4};
  try {
    parse({e, at4});
    ADD_FAILURE() << "accepted";
  } catch (const Error& ex) {
    EXPECT_EQ(ex.message(),
              "exp.json: /entries/1/case = \"tp.x\": conflicts with entry 0 ('tp.x'): both apply to 'tp.x' at a common world size");
  }
  // A case set where the case runs at 8 only: stale at every size the entry names.
  const auto cmp = compare_expectations(f, {{"tp.x", {8}}}, {}, {}, 8, false);
  EXPECT_EQ(entry_status_name(cmp.entries[0].status), "stale-entry");
}

// --- signatures -----------------------------------------------------------------------

json pinned_entry() {
  json e = fail_entry("sel.x", {"memory"});
  e["signature"] = std::vector<json>{{{"check", "memory"}, {"run", "baseline"}, {"differs", "layer 0 saved 19520 bytes"}}};
  return e;
}

TEST(Signature, ItemsAreTakenFromTheCheckMessage) {
  const std::vector<std::pair<std::string, SignatureItem>> table = {
      {"baseline: layer 0 saved 19520 bytes, the analytic model says 19200\nmore",
       {"memory", "baseline", "layer 0 saved 19520 bytes, the analytic model says 19200"}},
      {"no colon here", {"memory", "", "no colon here"}},
      {"full: a: b", {"memory", "full", "a: b"}},
      {"r: " + std::string(300, 'x'), {"memory", "r", std::string(200, 'x')}},
      {"r: " + std::string(199, 'x') + "\xc3\xa9", {"memory", "r", std::string(199, 'x')}},  // not inside a character
  };
  for (const auto& [detail, want] : table) EXPECT_EQ(signature_item("memory", detail), want) << detail;
}

TEST(Signature, ASameFailureIsExpectedAndADifferentOneIsNot) {
  const auto f = parse({pinned_entry()});
  const std::vector<CaseInfo> cases = {{"sel.x", {1}}};
  struct Row {
    std::vector<std::pair<std::string, std::string>> failing;
    std::string verdict, note;
  };
  const std::vector<Row> table = {
      {{{"memory", "baseline: layer 0 saved 19520 bytes\nthe rest may change"}}, "expected-fail", ""},
      {{{"memory", "baseline: layer 0 saved 20544 bytes"}},
       "different-failure",
       "expected to fail [memory] (entry 0 ('sel.x')), failed them differently: now memory baseline: layer 0 saved 20544 "
       "bytes; pinned memory baseline: layer 0 saved 19520 bytes"},
      {{{"memory", "baseline: layer 0 saved 19520 bytes"}, {"memory", "full: layer 1 saved 9 bytes"}},
       "different-failure",
       "expected to fail [memory] (entry 0 ('sel.x')), failed them differently: now memory full: layer 1 saved 9 bytes"},
      {{{"memory", "full: layer 0 saved 19520 bytes"}},
       "different-failure",
       "expected to fail [memory] (entry 0 ('sel.x')), failed them differently: now memory full: layer 0 saved 19520 "
       "bytes; pinned memory baseline: layer 0 saved 19520 bytes"},
      {{{"memory", "baseline: layer 0 saved 19520 bytes"}, {"masks", "full: mask differs"}},
       "different-failure",
       "expected to fail [memory] (entry 0 ('sel.x')), failed [masks, memory]"},
  };
  for (const auto& row : table) {
    const auto cmp = compare_expectations(f, cases, {result("sel.x", Outcome::fail, row.failing)}, {true}, 1, false);
    EXPECT_EQ(verdict_name(cmp.results[0].verdict), row.verdict) << row.failing[0].second;
    EXPECT_EQ(cmp.results[0].note, row.note);
  }
  // Without a signature the same checks failing is enough, as before.
  const auto loose = parse({fail_entry("sel.x", {"memory"})});
  const auto cmp = compare_expectations(loose, cases, {result("sel.x", Outcome::fail, {{"memory", "baseline: other"}})},
                                        {true}, 1, false);
  EXPECT_EQ(cmp.results[0].verdict, Verdict::expected_fail);
}

TEST(Signature, BadSignaturesAreRefused) {
  auto with = [](json e, json sig) {
    e["signature"] = std::move(sig);
    return entry_error(e);
  };
  const json item = {{"check", "memory"}, {"run", "baseline"}, {"differs", "x"}};
  EXPECT_EQ(with(fail_entry("sel.*", {"memory"}), std::vector<json>{item}),
            "exp.json: /entries/0/signature = [{\"check\":\"memory\",\"differs\":\"x\",\"run\":\"baseline\"}]: a signature "
            "pins one case's failure: the entry's case must name one case, not a glob");
  EXPECT_EQ(with(skip_entry("sel.x"), std::vector<json>{item}),
            "exp.json: /entries/0/signature = [{\"check\":\"memory\",\"differs\":\"x\",\"run\":\"baseline\"}]: a \"skip\" "
            "entry has no failure to pin");
  EXPECT_EQ(with(fail_entry("sel.x", {"memory", "masks"}), std::vector<json>{item}),
            "exp.json: /entries/0/signature = [{\"check\":\"memory\",\"differs\":\"x\",\"run\":\"baseline\"}]: names no "
            "failure of check 'masks', which the entry expects to fail");
  json other = item;
  other["check"] = "rng";
  EXPECT_EQ(with(fail_entry("sel.x", {"memory"}), std::vector<json>{other}),
            "exp.json: /entries/0/signature/0/check = \"rng\": not one of the entry's \"checks\"");
  json empty = item;
  empty["differs"] = "";
  EXPECT_EQ(with(fail_entry("sel.x", {"memory"}), std::vector<json>{empty}),
            "exp.json: /entries/0/signature/0/differs = \"\": must not be empty: what the check said differed");
  json no_run = item;
  no_run.erase("run");
  EXPECT_EQ(with(fail_entry("sel.x", {"memory"}), std::vector<json>{no_run}),
            "exp.json: /entries/0/signature/0 = {\"check\":\"memory\",\"differs\":\"x\"}: missing key 'run'");
  EXPECT_EQ(with(fail_entry("sel.x", {"memory"}), json::array()),
            "exp.json: /entries/0/signature = []: empty: leave \"signature\" out, or list every failing check");
  // The canonical text keeps it, and reads back the same.
  const auto f = parse({pinned_entry()});
  const std::string text = expectation_file_text(f);
  EXPECT_EQ(text.substr(text.find("    {\n")), std::string(R"(    {
      "case": "sel.x",
      "outcome": "fail",
      "checks": ["memory"],
      "signature": [
        {"check": "memory", "run": "baseline", "differs": "layer 0 saved 19520 bytes"}
      ],
      "reason": "r"
    }
  ]
}
)"));
  EXPECT_EQ(expectation_file_text(parse_expectation_file(json::parse(text), "again.json")), text);
}

// --- --update-expectations ------------------------------------------------------------

struct Update {
  std::vector<std::string> added, removed, changed, by_hand;
  std::vector<std::string> kept;  // the proposal's patterns
};

Update update(const ExpectationFile& f, const std::vector<CaseInfo>& cases, const std::vector<CaseResult>& results,
              int w, const std::string& filter = "") {
  const auto cmp = compare_expectations(f, cases, results, std::vector<bool>(results.size(), true), w, false, filter);
  const auto up = propose_update(cmp, cases, results);
  Update u{up.added, up.removed, up.changed, up.by_hand, {}};
  for (const auto& e : up.proposed.entries) u.kept.push_back(e.case_pattern);
  return u;
}

TEST(ExpectationUpdate, NeverDropsWhatTheRunDidNotJudge) {
  // A glob over a case that runs at 1 and 2 ranks, judged at 1 only.
  {
    const auto u = update(parse({skip_entry("moe.*")}), {{"moe.a", {1}}, {"moe.b", {1, 2}}},
                          {result("moe.a", Outcome::pass), result("moe.b", Outcome::pass)}, 1);
    EXPECT_EQ(u.removed, std::vector<std::string>{});
    EXPECT_EQ(u.kept, std::vector<std::string>{"moe.*"});
    EXPECT_EQ(u.by_hand, (std::vector<std::string>{
                             "entry 0 ('moe.*'): moe.a passes at 1 rank(s), but the entry covers more than this run "
                             "judged: narrow it",
                             "entry 0 ('moe.*'): moe.b passes at 1 rank(s), but the entry covers more than this run "
                             "judged: narrow it"}));
  }
  // ranks [2, 4], judged at 2.
  {
    json e = fail_entry("tp.x", {"memory"});
    e["ranks"] = {2, 4};
    const auto u = update(parse({e}), {{"tp.x", {2, 4}}}, {result("tp.x", Outcome::pass)}, 2);
    EXPECT_EQ(u.kept, std::vector<std::string>{"tp.x"});
    EXPECT_EQ(u.by_hand, std::vector<std::string>{"entry 0 ('tp.x'): tp.x passes at 2 rank(s), but the entry covers "
                                                  "more than this run judged: narrow it"});
  }
  // A case of the set the run did not select: its entry stays.
  {
    const auto u = update(parse({skip_entry("moe.b"), fail_entry("moe.a", {"rng"})}), {{"moe.a", {1}}, {"moe.b", {1}}},
                          {result("moe.a", Outcome::pass)}, 1, "moe.a");
    EXPECT_EQ(u.removed, std::vector<std::string>{"entry 1 ('moe.a'): moe.a passes (r)"});
    EXPECT_EQ(u.kept, std::vector<std::string>{"moe.b"});
  }
  // Filtered: a glob whose every selected case passes is still not dropped.
  {
    const auto u = update(parse({skip_entry("moe.*")}), {{"moe.a", {1}}}, {result("moe.a", Outcome::pass)}, 1, "moe.a");
    EXPECT_EQ(u.removed, std::vector<std::string>{});
    EXPECT_EQ(u.by_hand, std::vector<std::string>{"entry 0 ('moe.*'): moe.a passes, but a filtered run does not see "
                                                  "every case the glob covers: run without --filter, or narrow it"});
  }
  // Named case files are a selection too: the glob stays, and so does an entry for a case
  // not named.
  {
    const auto f = parse({skip_entry("moe.*"), skip_entry("gone.x")});
    const std::vector<CaseInfo> named = {{"moe.a", {1}}};
    const std::vector<CaseResult> passed = {result("moe.a", Outcome::pass)};
    const auto cmp = compare_expectations(f, named, passed, {true}, 1, false, "", true);
    const auto up = propose_update(cmp, named, passed);
    EXPECT_EQ(up.removed, std::vector<std::string>{});
    EXPECT_EQ(up.proposed.entries.size(), 2u);
  }
  // Unfiltered, the same glob over the same set is dropped: it covers only what passed.
  {
    const auto u = update(parse({skip_entry("moe.*")}), {{"moe.a", {1}}}, {result("moe.a", Outcome::pass)}, 1);
    EXPECT_EQ(u.removed, std::vector<std::string>{"entry 0 ('moe.*'): moe.a passes (r)"});
    EXPECT_EQ(u.kept, std::vector<std::string>{});
  }
}

TEST(ExpectationUpdate, WhatItCannotWriteIsLeftForAHandEdit) {
  // An error with no entry: an error is no expectation, so nothing is added.
  {
    const auto u = update(parse({}), {{"sel.a", {1}}}, {result("sel.a", Outcome::error, {}, "could not read the dump")}, 1);
    EXPECT_EQ(u.added, std::vector<std::string>{});
    EXPECT_EQ(u.kept, std::vector<std::string>{});
    EXPECT_EQ(u.by_hand, std::vector<std::string>{"sel.a: expected to pass, errored: could not read the dump: an error "
                                                  "is no expectation; fix the run"});
  }
  // An entry that differs for one of the several cases it covers is not rewritten.
  {
    const auto u = update(parse({fail_entry("sel.*", {"memory"})}), {{"sel.a", {1}}, {"sel.b", {1}}},
                          {result("sel.a", Outcome::fail, {{"rng", "full: seed 3"}}),
                           result("sel.b", Outcome::fail, {{"memory", "baseline: 5"}})}, 1);
    EXPECT_EQ(u.changed, std::vector<std::string>{});
    EXPECT_EQ(u.kept, std::vector<std::string>{"sel.*"});
    EXPECT_EQ(u.by_hand, (std::vector<std::string>{
                             "entry 0 ('sel.*'): sel.a: expected to fail [memory] (entry 0 ('sel.*')), failed [rng]: the "
                             "entry covers more cases or world sizes; edit it",
                             "entry 0 ('sel.*'): pins no failure signature; an entry per case and world size would"}));
  }
  // Filtered: a stale glob (here at a world size its cases never run at) may match cases
  // outside --filter and stays; a stale entry for one case id is dropped.
  {
    json glob = skip_entry("sel.*"), one = skip_entry("sel.a");
    glob["ranks"] = one["ranks"] = {4};
    const auto u = update(parse({glob, one}), {{"sel.a", {1}}}, {result("sel.a", Outcome::pass)}, 1, "sel.*");
    EXPECT_EQ(u.kept, std::vector<std::string>{"sel.*"});
    EXPECT_EQ(u.removed, std::vector<std::string>{"entry 1 ('sel.a'): matches no case (r)"});
    EXPECT_EQ(u.by_hand, std::vector<std::string>{"entry 0 ('sel.*'): matches no selected case at the world sizes it "
                                                  "names, but may match cases outside --filter: run without it"});
  }
}

TEST(ExpectationUpdate, PinsTheSignatureOfAnExpectedFailure) {
  const std::vector<CaseInfo> cases = {{"sel.x", {1}}, {"sel.y", {1}}, {"sel.z", {1, 2}}};
  const auto f = parse({fail_entry("sel.x", {"memory"}), fail_entry("sel.[y]", {"memory"}), fail_entry("sel.z", {"memory"})});
  const std::vector<CaseResult> results = {result("sel.x", Outcome::fail, {{"memory", "baseline: layer 0 saved 5 bytes"}}),
                                           result("sel.y", Outcome::fail, {{"memory", "baseline: 6"}}),
                                           result("sel.z", Outcome::fail, {{"memory", "baseline: 7"}}),
                                           result("new.a", Outcome::fail, {{"rng", "full: seed 3"}}, "first divergence: x")};
  const auto cmp = compare_expectations(f, cases, results, {true, true, true, true}, 1, false);
  const auto up = propose_update(cmp, cases, results);
  EXPECT_EQ(up.changed, std::vector<std::string>{"sel.x: pinned the signature of its expected failure (the reason stands)"});
  EXPECT_EQ(up.by_hand, (std::vector<std::string>{
                            "entry 1 ('sel.[y]'): pins no failure signature; an entry per case and world size would",
                            "entry 2 ('sel.z'): pins no failure signature; an entry per case and world size would"}));
  EXPECT_EQ(up.added, std::vector<std::string>{"new.a: expect fail [rng] (regression); give the reason"});
  ASSERT_EQ(up.proposed.entries.size(), 4u);
  EXPECT_EQ(up.proposed.entries[0].signature,
            (std::vector<SignatureItem>{{"memory", "baseline", "layer 0 saved 5 bytes"}}));
  EXPECT_EQ(up.proposed.entries[0].reason, "r");
  EXPECT_EQ(up.proposed.entries[3].signature, (std::vector<SignatureItem>{{"rng", "full", "seed 3"}}));
  EXPECT_TRUE(up.proposed.entries[1].signature.empty());
  // The proposal, once its placeholder reason is written, judges the run as expected.
  ExpectationFile reviewed = up.proposed;
  reviewed.entries[3].reason = "seeded from the wrong stream";
  const auto again = parse_expectation_file(json::parse(expectation_file_text(reviewed)), "exp.json.new");
  const auto cmp2 = compare_expectations(again, cases, results, {true, true, true, true}, 1, true);
  for (const auto& v : cmp2.results) EXPECT_EQ(v.verdict, Verdict::expected_fail) << v.note;
}

// --- --filter and stale entries -------------------------------------------------------

TEST(ExpectationFilter, WarnsOnlyAboutEntriesForTheSelectedCases) {
  json at4 = skip_entry("sel.a");
  at4["ranks"] = {4};
  const auto f = parse({skip_entry("gone.x"), skip_entry("moe.*"), at4, skip_entry("sel.b")});
  const std::vector<CaseInfo> cases = {{"sel.a", {1}}, {"sel.b", {1}}, {"moe.x", {1}}};
  const std::vector<CaseResult> results = {result("sel.a", Outcome::pass), result("sel.b", Outcome::skip, {}, "dense only")};
  struct Row {
    std::string filter;
    std::vector<std::string> statuses;
    int stale;
  };
  const std::vector<Row> table = {
      {"", {"stale-entry", "not-in-run", "stale-entry", "matched"}, 2},
      {"sel.*", {"not-in-run", "not-in-run", "stale-entry", "matched"}, 1},
      {"moe.*", {"not-in-run", "not-in-run", "not-in-run", "matched"}, 0},
  };
  for (const auto& row : table) {
    const auto cmp = compare_expectations(f, cases, results, {true, true}, 1, true, row.filter);
    std::vector<std::string> got;
    for (const auto& e : cmp.entries) got.emplace_back(entry_status_name(e.status));
    EXPECT_EQ(got, row.statuses) << row.filter;
    EXPECT_EQ(cmp.stale(), row.stale) << row.filter;
    EXPECT_EQ(cmp.ok(), row.stale == 0) << row.filter;
  }
  // Case files named one by one (scripts/check-megatron A.json B.json): the set is the
  // files, part of the case set; an entry for none of them is not stale, one for a named
  // case at no world size it names still is.
  {
    const std::vector<CaseInfo> named = {{"sel.a", {1}}, {"sel.b", {1}}};
    const auto cmp = compare_expectations(f, named, results, {true, true}, 1, true, "", true);
    std::vector<std::string> got;
    for (const auto& e : cmp.entries) got.emplace_back(entry_status_name(e.status));
    EXPECT_EQ(got, (std::vector<std::string>{"not-in-run", "not-in-run", "stale-entry", "matched"}));
    EXPECT_TRUE(cmp.subset);
    const auto whole = compare_expectations(f, named, results, {true, true}, 1, true);
    EXPECT_EQ(whole.stale(), 3);
  }
  const auto cmp = compare_expectations(f, cases, results, {true, true}, 1, false, "sel.*");
  const std::string text = expectation_summary(cmp, results);
  EXPECT_EQ(text.substr(text.find("  STALE")),
            "  STALE-ENTRY        entry 2 ('sel.a'): matches no selected case at the world sizes it names (warning)\n"
            "expectations met\n");
}

// --- every outcome class through every view -------------------------------------------

// The verdicts a set of entries gives a set of results at one world size, and what the
// JSON, the JUnit view and the matrix show for each: one table row per class.
struct ClassRow {
  json entry;  // null: none
  CaseResult result;
  std::string verdict, junit_outcome, cell_text, cell_class;
};

std::vector<ClassRow> class_rows() {
  json pinned = pinned_entry();
  pinned["case"] = "c.pinned";
  return {
      {nullptr, result("c.pass", Outcome::pass), "pass", "pass", "pass", "pass"},
      {nullptr, result("c.fail", Outcome::fail, {{"masks", "full: mask 3"}}), "regression", "fail",
       "fail: masks (regression)", "fail"},
      {nullptr, result("c.error", Outcome::error, {}, "no dump"), "regression", "error", "error (regression)", "fail"},
      {nullptr, result("c.skip", Outcome::skip, {}, "not dumped"), "unexpected-skip", "fail",
       "skip (unexpected): not dumped", "fail"},
      {nullptr, result("c.xfail", Outcome::xfail, {{"memory", "baseline: x"}}), "xfail", "xfail", "xfail", "xfail"},
      {fail_entry("c.expected", {"memory"}), result("c.expected", Outcome::fail, {{"memory", "baseline: x"}}),
       "expected-fail", "xfail", "expected-fail: memory", "expected"},
      {pinned, result("c.pinned", Outcome::fail, {{"memory", "baseline: layer 0 saved 20544 bytes"}}),
       "different-failure", "fail", "fail: memory (different-failure)", "fail"},
      {fail_entry("c.other", {"memory"}), result("c.other", Outcome::fail, {{"rng", "full: seed"}}), "different-failure",
       "fail", "fail: rng (different-failure)", "fail"},
      {fail_entry("c.fixed", {"memory"}), result("c.fixed", Outcome::pass), "unexpected-pass", "pass",
       "pass (unexpected)", "warn"},
      {skip_entry("c.skipped"), result("c.skipped", Outcome::skip, {}, "dense only"), "expected-skip", "skip",
       "expected-skip", "expected"},
      {skip_entry("c.ran"), result("c.ran", Outcome::fail, {{"rng", "full: seed"}}), "regression", "fail",
       "fail: rng (regression)", "fail"},
      {fail_entry("c.unskip", {"memory"}), result("c.unskip", Outcome::skip, {}, "adapter refused"), "unexpected-skip",
       "fail", "skip (unexpected): adapter refused", "fail"},
      {skip_entry("c.reskip"), result("c.reskip", Outcome::skip, {}, "raised TypeError in seeding"), "regression",
       "fail", "skip (regression)", "fail"},
      {error_entry("c.raised", "*RuntimeError: boom*"),
       result("c.raised", Outcome::error, {}, "the implementation raised: RuntimeError: boom"), "expected-error",
       "xfail", "expected-error: the implementation raised: RuntimeError: boom", "expected"},
      {error_entry("c.reraised", "*RuntimeError: boom*"),
       result("c.reraised", Outcome::error, {}, "the implementation raised: TypeError: seed"), "different-failure",
       "error", "error (different-failure)", "fail"},
      {error_entry("c.ranfine", "*boom*"), result("c.ranfine", Outcome::fail, {{"rng", "full: seed"}}),
       "different-failure", "fail", "fail: rng (different-failure)", "fail"},
  };
}

TEST(VerdictViews, EveryClassAsTheJsonJunitAndMatrixShowIt) {
  const auto rows = class_rows();
  std::vector<json> entries;
  std::vector<CaseInfo> cases;
  std::vector<CaseResult> results;
  for (const auto& r : rows) {
    if (!r.entry.is_null()) entries.push_back(r.entry);
    cases.push_back({r.result.id, {1, 2}});
    results.push_back(r.result);
  }
  entries.push_back(skip_entry("gone.*"));  // stale
  const auto f = parse(entries);
  for (int w : {1, 2}) {
    // Entries without "ranks" apply at every size: each class at both.
    const auto cmp = compare_expectations(f, cases, results, std::vector<bool>(results.size(), true), w, false);
    RunHeader h{"0.1.0", "abc", "dumps", w, 0, "now"};
    json doc = results_json(h, results);
    add_expectations_json(doc, cmp);
    const auto view = junit_view(cmp, results);
    ASSERT_EQ(view.size(), rows.size() + 1);
    std::map<std::string, int> counts;
    for (size_t i = 0; i < rows.size(); ++i) {
      const auto& row = rows[i];
      EXPECT_EQ(verdict_name(cmp.results[i].verdict), row.verdict) << row.result.id;
      EXPECT_TRUE(verdict_allows(cmp.results[i].verdict, row.result.outcome)) << row.result.id;
      EXPECT_EQ(doc["cases"][i]["expectation"]["verdict"], row.verdict) << row.result.id;
      EXPECT_EQ(doc["cases"][i]["outcome"], outcome_name(row.result.outcome)) << row.result.id;  // the raw outcome stays
      EXPECT_EQ(outcome_name(view[i].outcome), row.junit_outcome) << row.result.id;
      ++counts[row.verdict];
    }
    EXPECT_EQ(view.back().id, "expectations.entry " + std::to_string(entries.size() - 1) + " ('gone.*')");
    EXPECT_EQ(view.back().outcome, Outcome::skip);
    // The counts are the count of the rows' verdicts.
    for (Verdict v : all_verdicts())
      EXPECT_EQ(doc["expectations"]["counts"][std::string(verdict_name(v))], counts[std::string(verdict_name(v))]);
    EXPECT_EQ(doc["expectations"]["counts"]["stale-entry"], 1);
    EXPECT_EQ(doc["expectations"]["ok"], false);

    // The matrix draws exactly those verdicts.
    const Matrix m = build_matrix({{"torch", "t.json", doc}});
    ASSERT_EQ(m.rows.size(), rows.size());
    std::map<std::string, int> classes;
    for (const auto& row : rows) {
      const size_t r = static_cast<size_t>(std::find(m.rows.begin(), m.rows.end(), row.result.id) - m.rows.begin());
      const MatrixCell& c = m.cells.at({r, 0});
      EXPECT_EQ(c.verdict, row.verdict) << row.result.id;
      EXPECT_EQ(cell_text(c), row.cell_text) << row.result.id;
      EXPECT_EQ(cell_class(c), row.cell_class) << row.result.id;
      ++classes[row.cell_class];
    }
    const std::string md = matrix_markdown(m);
    const std::string summary = md.substr(md.find("| *summary* |"));
    EXPECT_EQ(summary.substr(0, summary.find('\n')),
              "| *summary* | " + std::to_string(classes["pass"]) + " pass, " + std::to_string(classes["fail"]) + " fail, " +
                  std::to_string(classes["xfail"]) + " xfail, " + std::to_string(classes["expected"]) + " expected, " +
                  std::to_string(classes["warn"]) + " warn |");
    EXPECT_EQ(summary.substr(0, summary.find('\n')), "| *summary* | 1 pass, 10 fail, 1 xfail, 3 expected, 1 warn |");
  }
}

// --- the matrix: columns and config-error rows -----------------------------------------

json kase(const std::string& id, const std::string& backend, const std::string& outcome, const std::string& reason = "") {
  return {{"id", id}, {"backend", backend}, {"file", "cases/x.json"}, {"outcome", outcome}, {"reason", reason},
          {"checks", json::array()}};
}

json doc_of(const std::string& backend, std::vector<json> cases) {
  return {{"schema", "rcts-results"},
          {"schema_version", 1},
          {"header", {{"backend", backend}, {"ranks", 1}, {"git_sha", "abc"}, {"version", "0.1.0"}, {"seed", 0}}},
          {"cases", std::move(cases)}};
}

TEST(MatrixColumns, AReportOfSeveralBackendsPutsEachCellInItsBackendsColumn) {
  const json two = doc_of("pool", {kase("a", "cpu", "pass"), kase("a", "cuda", "skip", "no GPU"), kase("b", "cuda", "pass"),
                                   kase("b", "cpu", "error", "threw")});
  const json one = doc_of("cpu", {kase("a", "cpu", "pass")});
  const Matrix m = build_matrix({{"", "one.json", one}, {"ref", "two.json", two}});
  EXPECT_EQ(matrix_markdown(m),
            "| case | cpu np1 | ref [cpu] | ref [cuda] |\n"
            "|---|---|---|---|\n"
            "| `a` | pass | pass | skip: no GPU |\n"
            "| `b` | — | **error** [1] | pass |\n"
            "| *summary* | 1 pass | 1 pass, 1 error | 1 pass, 1 skip |\n"
            "\n"
            "1. `b`, ref [cpu]: threw\n");
}

TEST(MatrixColumns, ConfigErrorCasesNoColumnRunsAreListedOnce) {
  const json torch = doc_of("dumps", {kase("invalid.a", "torch", "skip", kConfigErrorSkip), kase("ok", "torch", "pass"),
                                      kase("invalid.b", "torch", "skip", kConfigErrorSkip),
                                      kase("invalid.c", "torch", "skip", kConfigErrorSkip)});
  const json megatron = doc_of("dumps", {kase("invalid.a", "mcore", "skip", kConfigErrorSkip), kase("ok", "mcore", "pass")});
  const json rcts = doc_of("cpu", {kase("invalid.c", "cpu", "pass")});
  const Matrix m = build_matrix({{"torch", "t.json", torch}, {"mcore", "m.json", megatron}, {"rcts", "r.json", rcts}});
  EXPECT_EQ(m.rows, (std::vector<std::string>{"invalid.c", "ok"}));  // rcts itself judges invalid.c
  EXPECT_EQ(m.config_only, (std::vector<std::string>{"invalid.a", "invalid.b"}));
  EXPECT_EQ(matrix_markdown(m),
            "| case | torch | mcore | rcts |\n"
            "|---|---|---|---|\n"
            "| `invalid.c` | skip: a config_error case: rcts judges its config alone, no imp... | — | pass |\n"
            "| `ok` | pass | pass | — |\n"
            "| *summary* | 1 pass, 1 skip | 1 pass | 1 pass |\n"
            "\n"
            "Not drawn: 2 config_error case(s), which no implementation here runs (rcts judges their configs alone): "
            "`invalid.a`, `invalid.b`.\n");
  const std::string html = matrix_html(m, "t");
  EXPECT_NE(html.find("<p class=\"config-only\">Not drawn: 2 config_error case(s), which no implementation here runs "
                      "(rcts judges their configs alone): <code>invalid.a</code>, <code>invalid.b</code>.</p>\n"),
            std::string::npos)
      << html;
  EXPECT_EQ(html.find("<th class=\"case\">invalid.a</th>"), std::string::npos);
}

}  // namespace
}  // namespace rcts::harness
