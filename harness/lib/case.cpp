#include "harness/lib/case.hpp"

#include <algorithm>
#include <fstream>
#include <limits>
#include <map>

#include "harness/lib/digest.hpp"
#include "harness/lib/json_reader.hpp"

namespace rcts::harness {

namespace fs = std::filesystem;

namespace {

constexpr int64_t kMax = std::numeric_limits<int32_t>::max();

Expect parse_expect(const JsonReader& r) {
  r.expect_object({"bitwise", "masks", "masks_across_ranks", "rng", "golden", "memory", "counts", "offload", "config_error"});
  Expect e;
  if (r.has("bitwise")) e.bitwise = r.at("bitwise").boolean();
  if (r.has("masks")) e.masks = r.at("masks").boolean();
  if (r.has("rng")) e.rng = r.at("rng").boolean();
  if (r.has("golden")) e.golden = r.at("golden").boolean();
  if (r.has("offload")) e.offload = r.at("offload").boolean();
  if (r.has("masks_across_ranks")) e.masks_across_ranks = r.at("masks_across_ranks").boolean();
  if (r.has("config_error")) e.config_error = r.at("config_error").str();
  if (r.has("memory")) {
    auto m = r.at("memory");
    m.expect_object({"analytic", "max_ratio", "budget_bytes"});
    MemoryExpect me;
    if (m.has("analytic")) me.analytic = m.at("analytic").boolean();
    if (m.has("max_ratio")) me.max_ratio = m.at("max_ratio").number(0.0, 1e9);
    if (m.has("budget_bytes")) me.budget_bytes = m.at("budget_bytes").integer(0, std::numeric_limits<int64_t>::max());
    e.memory = me;
  }
  if (r.has("counts")) {
    auto c = r.at("counts");
    if (!c.json().is_object()) c.fail("expected an object mapping module patterns to {original, recompute}");
    for (const auto& [pattern, v] : c.json().items()) {
      JsonReader one(r.file(), v, c.path() + "/" + pattern);
      one.expect_object({"original", "recompute"});
      CountExpect ce{pattern, 0, 0};
      if (!one.has("original") || !one.has("recompute")) one.fail("needs both 'original' and 'recompute'");
      ce.original = one.at("original").integer(0, kMax);
      ce.recompute = one.at("recompute").integer(0, kMax);
      e.counts.push_back(ce);
    }
  }
  return e;
}

bool valid_id(const std::string& id) {
  if (id.empty() || id.front() == '.' || id.back() == '.') return false;
  return std::all_of(id.begin(), id.end(), [](char c) {
    return std::isalnum(static_cast<unsigned char>(c)) || c == '.' || c == '_' || c == '-';
  });
}

}  // namespace

Case load_case(const fs::path& file) {
  std::ifstream in(file);
  if (!in) throw Error(file.string() + ": cannot open the case file");
  nlohmann::json j;
  try {
    j = nlohmann::json::parse(in, nullptr, true, /*ignore_comments=*/false);
  } catch (const nlohmann::json::parse_error& e) {
    throw Error(file.string() + ": invalid JSON: " + e.what());
  }
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
      if (b != "cpu" && b != "cuda") a.at(i).fail("unknown backend (expected 'cpu' or 'cuda')");
      c.backends.push_back(b);
    }
  }
  if (r.has("config")) {
    if (!j["config"].is_object()) r.at("config").fail("expected an object (a partial rcts config)");
    c.config = j["config"];
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
  if (r.has("expect")) c.expect = parse_expect(r.at("expect"));
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
      if (!v.has("config") || !v.json()["config"].is_object()) v.fail("needs 'config': an object patched over the case config");
      var.patch = v.json()["config"];
      if (v.has("expect")) var.expect = parse_expect(v.at("expect"));
      if (var.expect.config_error) v.at("expect").fail("config_error belongs to the case, not to a variant");
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
      for (const auto& e : fs::recursive_directory_iterator(p))
        if (e.is_regular_file() && e.path().extension() == ".json") files.push_back(e.path());
    } else if (fs::exists(p)) {
      files.push_back(p);
    } else {
      throw Error(p.string() + ": no such case file or directory");
    }
  }
  std::vector<Case> cases;
  std::map<std::string, fs::path> seen;
  for (const auto& f : files) {
    Case c = load_case(f);
    auto [it, fresh] = seen.emplace(c.id, f);
    if (!fresh) throw Error("duplicate case id '" + c.id + "' in " + f.string() + " and " + it->second.string());
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
