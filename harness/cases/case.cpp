#include "harness/cases/case.hpp"

#include <algorithm>
#include <limits>
#include <map>
#include <new>

#include "backends/registry.hpp"
#include "harness/cases/expect_schema.hpp"
#include "harness/io/digest.hpp"
#include "harness/io/json_reader.hpp"
#include "harness/io/strict_json.hpp"

namespace rcts::harness {

namespace fs = std::filesystem;

namespace {

bool valid_id(const std::string& id) {
  if (id.empty() || id.front() == '.' || id.back() == '.') return false;
  return std::all_of(id.begin(), id.end(), [](char c) {
    return std::isalnum(static_cast<unsigned char>(c)) || c == '.' || c == '_' || c == '-';
  });
}

}  // namespace

Case load_case(const fs::path& file) { return case_from_json(read_json_file(file, "case file"), file); }

Case case_from_json(const nlohmann::json& j, const fs::path& file) {
  JsonReader r(file.string(), j);
  r.expect_object({"id", "description", "ranks", "backends", "config", "seed_ranks", "variants", "expect", "xfail"});
  Case c;
  c.file = file;
  const std::string canonical = j.dump();
  c.source_sha256 = sha256_hex(canonical.data(), canonical.size());
  if (!r.has("id")) r.fail("missing key 'id'");
  c.id = r.at("id").str();
  if (!valid_id(c.id)) r.at("id").fail("a case id is a dotted path of letters, digits, '_' and '-'");
  if (!r.has("description")) r.fail("missing key 'description' (say in one line what the case covers)");
  c.description = r.at("description").str();
  if (r.has("ranks")) {
    auto a = r.at("ranks");
    c.ranks.clear();
    for (size_t i = 0; i < a.array_size(); ++i) c.ranks.push_back(static_cast<int>(a.at(i).integer(1, 4096)));
    if (c.ranks.empty()) a.fail("needs at least one rank count");
  }
  if (r.has("backends")) {
    auto a = r.at("backends");
    c.backends.clear();
    for (size_t i = 0; i < a.array_size(); ++i) {
      auto b = a.at(i).str();
      if (!find_backend(b)) a.at(i).fail("unknown backend (known: " + backend_names() + ")");
      c.backends.push_back(b);
    }
  }
  if (r.has("config")) {
    if (!j.at("config").is_object()) r.at("config").fail("expected an object (a partial rcts config)");
    c.config = j.at("config");
  } else {
    c.config = nlohmann::json::object();
  }
  if (r.has("seed_ranks")) {
    auto s = r.at("seed_ranks");
    s.expect_object({"tp", "ep", "etp"});
    if (s.has("tp")) c.seed_ranks.tp = static_cast<int>(s.at("tp").integer(0, 4095));
    if (s.has("ep")) c.seed_ranks.ep = static_cast<int>(s.at("ep").integer(0, 4095));
    if (s.has("etp")) c.seed_ranks.etp = static_cast<int>(s.at("etp").integer(0, 4095));
  }
  if (r.has("expect")) c.expect = parse_expectations(r.at("expect"), /*variant=*/false);
  if (r.has("xfail")) c.xfail = r.at("xfail").str();
  if (r.has("variants")) {
    auto a = r.at("variants");
    std::map<std::string, int> names;
    for (size_t i = 0; i < a.array_size(); ++i) {
      auto v = a.at(i);
      v.expect_object({"name", "config", "expect"});
      Variant var;
      if (!v.has("name")) v.fail("missing key 'name'");
      var.name = v.at("name").str();
      if (names[var.name]++) v.at("name").fail("duplicate variant name");
      if (!v.has("config") || !v.json().at("config").is_object()) v.fail("needs 'config': an object patched over the case config");
      var.patch = v.json().at("config");
      if (v.has("expect")) var.expect = parse_expectations(v.at("expect"), /*variant=*/true);
      c.variants.push_back(std::move(var));
    }
  }
  const bool compares = c.expect.bitwise || c.expect.rng;
  if (compares && c.variants.empty()) r.fail("bitwise and rng expectations compare variants with the baseline: add 'variants'");
  if (c.expect.config_error && !c.variants.empty()) r.fail("a config_error case has no variants");
  return c;
}

std::vector<Case> load_cases(const std::vector<fs::path>& paths) {
  std::vector<fs::path> files;
  for (const auto& p : paths) {
    if (fs::is_directory(p)) {
      const size_t before = files.size();
      for (const auto& e : fs::recursive_directory_iterator(p))
        if (e.is_regular_file() && e.path().extension() == ".json") files.push_back(e.path());
      if (files.size() == before) throw Error(p.string() + ": no case files (*.json) in this directory");
    } else if (fs::exists(p)) {
      files.push_back(p);
    } else {
      throw Error(p.string() + ": no such case file or directory");
    }
  }
  std::vector<Case> cases;
  std::map<std::string, fs::path> seen;
  for (const auto& f : files) {
    Case c;
    try {
      c = load_case(f);
    } catch (const std::bad_alloc&) {
      throw Error(f.string() + ": out of memory (std::bad_alloc) while loading the case file");
    }
    auto [it, fresh] = seen.emplace(c.id, f);
    if (!fresh)
      throw Error(f.string() + ": /id = \"" + c.id + "\": duplicate case id (also in " + it->second.string() + ")");
    cases.push_back(std::move(c));
  }
  std::sort(cases.begin(), cases.end(), [](const Case& a, const Case& b) { return a.id < b.id; });
  return cases;
}

bool glob_match(const std::string& pattern, const std::string& text) {
  // Iterative wildcard match with backtracking to the last '*'.
  size_t p = 0, t = 0, star = std::string::npos, mark = 0;
  while (t < text.size()) {
    if (p < pattern.size() && pattern[p] == text[t]) {
      ++p;
      ++t;
    } else if (p < pattern.size() && pattern[p] == '*') {
      star = p++;
      mark = t;
    } else if (star != std::string::npos) {
      p = star + 1;
      t = ++mark;
    } else {
      return false;
    }
  }
  while (p < pattern.size() && pattern[p] == '*') ++p;
  return p == pattern.size();
}

}  // namespace rcts::harness
