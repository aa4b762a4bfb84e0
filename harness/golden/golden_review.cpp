// One-line golden reviews (golden_review.hpp).
#include "harness/golden/golden_review.hpp"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <map>
#include <regex>
#include <vector>

namespace rcts::harness {

namespace {

double from_bits(uint64_t u) {
  double d;
  std::memcpy(&d, &u, sizeof d);
  return d;
}

bool parse_bits(const std::string& hex, uint64_t& out) {
  if (hex.size() != 18 || hex.rfind("0x", 0) != 0) return false;
  out = std::stoull(hex.substr(2), nullptr, 16);
  return true;
}

// Sign-magnitude bits to an ordered integer (so adjacent values differ by 1).
int64_t ordered(uint64_t bits, int width) {
  const uint64_t sign = uint64_t{1} << (width - 1);
  const uint64_t mag = bits & (sign - 1);
  return (bits & sign) ? -static_cast<int64_t>(mag) : static_cast<int64_t>(mag);
}

std::string sci(double v) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.3g", v);
  return buf;
}

// "k of n (max |d| x, u ulp unit)" over pairs of hex-bit values.
struct ValueDiffs {
  int changed = 0, total = 0;
  double max_abs = 0;
  uint64_t max_ulp = 0;
  std::string unit;
  void add(const std::string& a, const std::string& b) {
    ++total;
    if (a == b) return;
    ++changed;
    uint64_t x, y;
    if (!parse_bits(a, x) || !parse_bits(b, y)) return;
    max_abs = std::max(max_abs, std::fabs(from_bits(x) - from_bits(y)));
    std::string u;
    const uint64_t d = loss_ulp(x, y, u);
    if (d >= max_ulp) {
      max_ulp = d;
      unit = u;
    }
  }
  std::string str(const char* what) const {
    std::string s = std::string(what) + " " + std::to_string(changed) + " of " + std::to_string(total);
    if (changed) s += " (max |d| " + sci(max_abs) + ", " + std::to_string(max_ulp) + " ulp " + unit + ")";
    return s;
  }
};

}  // namespace

uint64_t loss_ulp(uint64_t a, uint64_t b, std::string& unit) {
  const double da = from_bits(a), db = from_bits(b);
  const float fa = static_cast<float>(da), fb = static_cast<float>(db);
  if (static_cast<double>(fa) == da && static_cast<double>(fb) == db && std::isfinite(fa) && std::isfinite(fb)) {
    uint32_t ua, ub;
    std::memcpy(&ua, &fa, sizeof ua);
    std::memcpy(&ub, &fb, sizeof ub);
    unit = "f32";
    const int64_t d = ordered(ua, 32) - ordered(ub, 32);
    return static_cast<uint64_t>(d < 0 ? -d : d);
  }
  unit = "f64";
  const int64_t oa = ordered(a, 64), ob = ordered(b, 64);
  return oa > ob ? static_cast<uint64_t>(oa) - static_cast<uint64_t>(ob)
                 : static_cast<uint64_t>(ob) - static_cast<uint64_t>(oa);
}

std::string tensor_group(const std::string& name) {
  static const std::regex index(R"((^|[./])(rank|layers|experts|local_experts)([./])\d+)");
  static const std::regex suffix(R"(\.(weight|bias)(\.grad)?$|\.step\d+\.mb\d+$)");
  std::string g = std::regex_replace(name, index, "$1$2$3*");
  g = std::regex_replace(g, suffix, "");
  g = std::regex_replace(g, std::regex(R"(^rank\d+/)"), "rank*/");
  return g;
}

std::string golden_review(const Golden& before, const Golden& after) {
  ValueDiffs losses;
  const size_t n = std::max(before.losses.size(), after.losses.size());
  for (size_t i = 0; i < n; ++i)
    losses.add(i < before.losses.size() ? before.losses[i] : "", i < after.losses.size() ? after.losses[i] : "");
  ValueDiffs effects;
  const SideEffectBits none;
  const SideEffectBits& b_fx = before.side_effects ? *before.side_effects : none;
  const SideEffectBits& a_fx = after.side_effects ? *after.side_effects : none;
  std::map<std::string, std::pair<std::string, std::string>> fx;
  for (const auto& [k, v] : b_fx) fx[k].first = v;
  for (const auto& [k, v] : a_fx) fx[k].second = v;
  for (const auto& [k, v] : fx) effects.add(v.first, v.second);

  struct Group {
    int changed = 0, total = 0;
  };
  std::vector<std::string> order;  // groups in file order
  std::map<std::string, Group> groups;
  std::map<std::string, const TensorDigest*> old;
  for (const auto& t : before.tensors) old[t.name] = &t;
  int changed = 0;
  double stat_delta = 0;
  auto count = [&](const std::string& name, bool differs) {
    const std::string g = tensor_group(name);
    if (!groups.count(g)) order.push_back(g);
    Group& gr = groups[g];
    ++gr.total;
    gr.changed += differs ? 1 : 0;
    changed += differs ? 1 : 0;
  };
  for (const auto& t : after.tensors) {
    auto it = old.find(t.name);
    if (it == old.end()) {
      count(t.name, true);
      continue;
    }
    const TensorDigest& o = *it->second;
    const bool differs = !same_bits(o, t);
    if (differs && o.shape == t.shape)
      for (auto [x, y] : {std::pair{o.stats.min, t.stats.min}, {o.stats.max, t.stats.max},
                          {o.stats.mean, t.stats.mean}, {o.stats.l2, t.stats.l2}})
        if (std::isfinite(x) && std::isfinite(y)) stat_delta = std::max(stat_delta, std::fabs(x - y));
    count(t.name, differs);
    old.erase(it);
  }
  for (const auto& [name, d] : old) count(name, true);  // removed
  const int total = static_cast<int>(after.tensors.size() + old.size());
  if (!losses.changed && !effects.changed && !changed) return "no change";

  std::string s = losses.str("losses") + "; " + effects.str("side effects") + "; tensors " + std::to_string(changed) +
                  " of " + std::to_string(total);
  if (changed) {
    std::string list;
    for (const auto& g : order)
      if (groups[g].changed)
        list += (list.empty() ? "" : ", ") + g + " " + std::to_string(groups[g].changed) + " of " +
                std::to_string(groups[g].total);
    s += ": " + list + " (summary stats |d| <= " + sci(stat_delta) + ")";
  }
  if (!old.empty()) s += "; " + std::to_string(old.size()) + " removed";
  return s;
}

}  // namespace rcts::harness
