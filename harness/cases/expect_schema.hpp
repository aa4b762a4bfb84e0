// The expect schema (design §10, cases/README.md): one entry per key a case's or a
// variant's "expect" may hold, with where it may appear, its JSON parser and whether
// an Expect asks for it. What each kind checks is its entry of the same name in the
// check registry (harness/checks/check_kinds.hpp), whose header lists the steps of
// adding a check kind.
#pragma once
#include <string>
#include <string_view>
#include <vector>

#include "harness/cases/case.hpp"
#include "harness/io/json_reader.hpp"

namespace rcts::harness {

struct ExpectKind {
  std::string_view name;         // key under "expect"
  bool case_level_only = false;  // may not appear in a variant's "expect"
  // Parses the value of expect/<name> into `into` (errors name file, path, value).
  void (*parse)(const JsonReader& value, Expect& into) = nullptr;
  // Whether an Expect asks for this kind.
  bool (*requested)(const Expect& e) = nullptr;
};

const std::vector<ExpectKind>& expect_kinds();
const ExpectKind* find_expect_kind(std::string_view name);
std::vector<std::string> expect_kind_names();

// Every expect key of `r` through its kind's parser; `variant` rejects case-level kinds.
Expect parse_expectations(const JsonReader& r, bool variant);

}  // namespace rcts::harness
