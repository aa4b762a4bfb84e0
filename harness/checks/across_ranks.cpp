#include "harness/checks/across_ranks.hpp"

#include <algorithm>
#include <array>
#include <cstring>
#include <map>

#include "harness/checks/checks.hpp"
#include "harness/io/gather.hpp"

namespace rcts::harness {

namespace {
// The tracker stream of expert layers (design §5), by the end of an opaque state's name.
const std::string kExpertStream = "expert-parallel-rng";
}  // namespace

CheckResult check_masks_across_ranks(const RunRecord& run, const GroupLayout& layout, Communicator& world,
                                     const std::string& label) {
  // Serialise this rank's forward draws: kind, site, micro-batch, digest.
  nlohmann::json mine = nlohmann::json::array();
  for (const auto& m : run.masks)
    if (!m.recompute) mine.push_back({m.kind, m.site, m.micro_batch, m.digest, m.seed});
  const auto all = all_gather_strings(world, mine.dump());
  using Key = std::tuple<std::string, int>;  // site, micro-batch
  struct Draw {
    std::string kind;
    uint64_t digest, seed;
  };
  std::vector<std::map<Key, Draw>> per_rank;
  for (const auto& s : all) {
    std::map<Key, Draw> m;
    for (const auto& e : nlohmann::json::parse(s))
      m[{e[1].get<std::string>(), e[2].get<int>()}] = {e[0].get<std::string>(), e[3].get<uint64_t>(), e[4].get<uint64_t>()};
    per_rank.push_back(std::move(m));
  }
  const bool sp = run.config.parallel.sequence_parallel;
  int compared = 0;
  for (int a = 0; a < layout.world; ++a)
    for (int b = a + 1; b < layout.world; ++b) {
      const RankCoords ca = coords_of(layout, a), cb = coords_of(layout, b);
      const bool same_tp_group = ca.dp == cb.dp && ca.pp == cb.pp;  // differ only in tp
      const bool same_edp_group = ca.ep == cb.ep && ca.etp == cb.etp;
      for (const auto& [key, va] : per_rank[static_cast<size_t>(a)]) {
        auto it = per_rank[static_cast<size_t>(b)].find(key);
        if (it == per_rank[static_cast<size_t>(b)].end()) continue;
        const std::string& kind = va.kind;
        bool equal = va.digest == it->second.digest;
        std::string rule;
        if (kind == "expert") {
          // Expert masks cover the tokens routed to a rank, so their sizes differ; the
          // stream must be the same within an expert-DP group and differ across EP/ETP.
          equal = va.seed == it->second.seed;
          if (same_edp_group && !equal) rule = "the same expert-parallel-rng stream within an expert-data-parallel group";
          if (!same_edp_group && equal) rule = "distinct expert-parallel-rng streams across EP / ETP ranks";
        } else if (same_tp_group) {
          const bool must_differ = kind == "attention" || (kind == "hidden" && sp);
          if (must_differ && equal) rule = "distinct across TP ranks";
          if (!must_differ && !equal) rule = "identical across TP ranks (replicated data, default generator)";
        } else {
          continue;
        }
        ++compared;
        if (!rule.empty())
          return {"masks_across_ranks", Outcome::fail,
                  label + ": " + kind + " dropout " + std::get<0>(key) + " (micro-batch " +
                      std::to_string(std::get<1>(key)) + ") on world ranks " + std::to_string(a) + " and " +
                      std::to_string(b) + (equal ? " is identical" : " differs") + "; design §5 says " + rule};
      }
    }
  // Opaque generator states (an adapter's digests; no expert draw recorded, or the check
  // would not run): the expert-parallel-rng stream itself, by its state after every
  // micro-batch. Equal digests are one stream; ranks of one expert-DP group must hold it,
  // ranks of different EP / ETP rank must not (a seed without the EP rank gives one).
  if (!run.seed_offset_rng) {
    nlohmann::json streams = nlohmann::json::array();
    for (const auto& states : run.rng_after_opaque)
      for (const auto& [name, digest] : states)
        if (name.size() >= kExpertStream.size() &&
            name.compare(name.size() - kExpertStream.size(), kExpertStream.size(), kExpertStream) == 0)
          streams.push_back(digest);
    const auto every = all_gather_strings(world, streams.dump());
    int stream_pairs = 0;
    for (int a = 0; a < layout.world; ++a)
      for (int b = a + 1; b < layout.world; ++b) {
        const auto sa = nlohmann::json::parse(every[static_cast<size_t>(a)]);
        const auto sb = nlohmann::json::parse(every[static_cast<size_t>(b)]);
        if (sa.empty() || sa.size() != sb.size()) continue;
        const RankCoords ca = coords_of(layout, a), cb = coords_of(layout, b);
        const bool same_edp_group = ca.ep == cb.ep && ca.etp == cb.etp;
        ++stream_pairs;
        for (size_t i = 0; i < sa.size(); ++i) {
          const bool equal = sa[i] == sb[i];
          if (equal == same_edp_group) continue;
          return {"masks_across_ranks", Outcome::fail,
                  label + ": the expert-parallel-rng state after micro-batch " + std::to_string(i) + " on world ranks " +
                      std::to_string(a) + " and " + std::to_string(b) + (equal ? " is identical" : " differs") +
                      "; design §5 says " +
                      (same_edp_group ? "the same expert-parallel-rng stream within an expert-data-parallel group"
                                      : "distinct expert-parallel-rng streams across EP / ETP ranks")};
        }
      }
    if (stream_pairs > 0)
      return {"masks_across_ranks", Outcome::pass,
              label + ": " + std::to_string(compared) + " rank-pair mask comparisons and " +
                  std::to_string(stream_pairs) + " rank-pair expert-parallel-rng state comparisons follow design §5"};
  }
  return {"masks_across_ranks", Outcome::pass,
          label + ": " + std::to_string(compared) + " rank-pair mask comparisons follow design §5"};
}

bool tp_replicated_parameter(const std::string& name) {
  // MLA's down-projections are replicated over TP as well (design §14).
  for (const char* tail : {"_layernorm.weight", "_layernorm.bias", ".attention.proj.bias", ".mlp.fc2.bias",
                           ".router.weight", ".linear_q_down_proj.weight", ".linear_kv_down_proj.weight"})
    if (name.size() >= std::strlen(tail) && name.compare(name.size() - std::strlen(tail), std::strlen(tail), tail) == 0)
      return true;
  return false;
}

std::string tp_replica_digest(const RunRecord& run) {
  auto digest = [](const Tensor& t) { return fnv1a64(t.bytes(), static_cast<size_t>(t.nbytes())); };
  nlohmann::json j = {{"losses", nlohmann::json::array()}, {"outputs", nlohmann::json::array()},
                      {"parameters", nlohmann::json::array()}};
  for (size_t i = 0; i < run.losses.size(); ++i) {
    j["losses"].push_back(run.losses[i]);
    j["outputs"].push_back(digest(run.outputs[i]));
  }
  for (size_t i = 0; i < run.params.size(); ++i) {
    const std::string& name = run.params[i].name;
    const bool expert = name.find(".moe.experts.") != std::string::npos;
    if (expert || tp_replicated_parameter(name))
      j["parameters"].push_back({name, digest(run.params[i].tensor), digest(run.grads[i].tensor), expert});
  }
  return j.dump();
}

CheckResult compare_tp_replicas(const std::vector<std::string>& per_rank, const GroupLayout& layout,
                                const std::string& label) {
  auto fail = [&](std::string why) { return CheckResult{"tp_replicas", Outcome::fail, label + ": " + std::move(why)}; };
  std::vector<nlohmann::json> all;
  for (const auto& s : per_rank) all.push_back(nlohmann::json::parse(s));
  int pairs = 0;
  size_t parameters = 0;
  for (int a = 0; a < layout.world; ++a)
    for (int b = a + 1; b < layout.world; ++b) {
      const RankCoords ca = coords_of(layout, a), cb = coords_of(layout, b);
      if (ca.dp != cb.dp || ca.pp != cb.pp) continue;  // not in one TP group
      ++pairs;
      const auto &ja = all[static_cast<size_t>(a)], &jb = all[static_cast<size_t>(b)];
      const std::string ranks = "world ranks " + std::to_string(a) + " and " + std::to_string(b) + " (one TP group)";
      if (ja["losses"] != jb["losses"] || ja["outputs"] != jb["outputs"])
        return fail(ranks + " hold different losses or outputs; a reduction is not in rank order");
      // Routed experts are replicas only between ranks of the same EP and ETP rank.
      const bool same_experts = ca.ep == cb.ep && ca.etp == cb.etp;
      nlohmann::json pa = nlohmann::json::array(), pb = nlohmann::json::array();
      for (const auto& p : ja["parameters"])
        if (same_experts || !p[3].get<bool>()) pa.push_back(p);
      for (const auto& p : jb["parameters"])
        if (same_experts || !p[3].get<bool>()) pb.push_back(p);
      if (pa.size() != pb.size()) return fail(ranks + " hold different replicated parameter lists");
      if (pa.empty()) return fail(ranks + " hold no replicated parameter (layernorms, row-parallel biases, router)");
      for (size_t i = 0; i < pa.size(); ++i) {
        const std::string name = pa[i][0];
        if (pb[i][0] != pa[i][0]) return fail(ranks + " list replicated parameters in different orders");
        if (pa[i][1] != pb[i][1])
          return fail(ranks + " hold different values of " + name + ", which every TP rank holds in full");
        if (pa[i][2] != pb[i][2])
          return fail(ranks + " hold different gradients of " + name + ", which every TP rank holds in full: "
                      "its gradient must be summed over the full gradient or all-reduced over TP (design §8)" +
                      (pa[i][3].get<bool>() ? std::string(" (a routed expert: both ranks route their own sequence "
                                                          "shard through it)")
                                            : std::string()));
      }
      parameters = pa.size();
    }
  return {"tp_replicas", Outcome::pass,
          label + ": " + std::to_string(pairs) + " TP rank pairs agree bit for bit (losses, outputs, " +
              std::to_string(parameters) + " replicated parameters and their gradients)"};
}

CheckResult check_tp_replicas(const RunRecord& run, const GroupLayout& layout, Communicator& world,
                              const std::string& label) {
  return compare_tp_replicas(all_gather_strings(world, tp_replica_digest(run)), layout, label);
}

std::string dp_replica_digest(const RunRecord& run) {
  auto digest = [](const Tensor& t) { return t.defined() ? fnv1a64(t.bytes(), static_cast<size_t>(t.nbytes())) : 0; };
  nlohmann::json j = {{"losses", run.losses}, {"outputs", nlohmann::json::array()}, {"input_grads", nlohmann::json::array()},
                      {"side_effects", nlohmann::json::object()}, {"parameters", nlohmann::json::array()}};
  for (const auto& t : run.outputs) j["outputs"].push_back(digest(t));
  for (const auto& t : run.input_grads) j["input_grads"].push_back(digest(t));
  for (const auto& [k, v] : run.side_effects) j["side_effects"][k] = v;
  for (size_t i = 0; i < run.params.size(); ++i)
    j["parameters"].push_back({run.params[i].name, digest(run.params[i].tensor), digest(run.grads[i].tensor)});
  return j.dump();
}

CheckResult compare_dp_replicas(const std::vector<std::string>& per_rank, const Config& config,
                                const std::string& label) {
  const auto& p = config.parallel;
  const int world = static_cast<int>(per_rank.size());
  const int pp = p.pipeline_model_parallel_size, tp = p.tensor_model_parallel_size;
  const int ep = p.expert_model_parallel_size, etp = p.expert_tensor_parallel_size;
  if (world % pp != 0)
    return {"dp_replicas", Outcome::fail, label + ": world " + std::to_string(world) + " is not a multiple of pp " +
                                              std::to_string(pp)};
  // Everything but the dp / expert-dp coordinate of a world rank.
  const auto key = [&](int r) {
    return std::array<int, 4>{r / (world / pp), r % tp, r % etp, r / etp % ep};
  };
  std::vector<nlohmann::json> all;
  for (const auto& s : per_rank) all.push_back(nlohmann::json::parse(s));
  int pairs = 0;
  for (int a = 0; a < world; ++a)
    for (int b = a + 1; b < world; ++b) {
      if (key(a) != key(b)) continue;
      ++pairs;
      const auto &ja = all[static_cast<size_t>(a)], &jb = all[static_cast<size_t>(b)];
      const std::string ranks = "world ranks " + std::to_string(a) + " and " + std::to_string(b) +
                                " (data-parallel replicas: same stage, tp, ep and etp rank)";
      for (const char* part : {"losses", "outputs", "input_grads", "side_effects"})
        if (ja[part] != jb[part])
          return {"dp_replicas", Outcome::fail,
                  label + ": " + ranks + " hold different " + part +
                      "; every replica gets the same data, so a neighbour, group or reduction crossed replicas"};
      if (ja["parameters"].size() != jb["parameters"].size())
        return {"dp_replicas", Outcome::fail, label + ": " + ranks + " hold different parameter lists"};
      for (size_t i = 0; i < ja["parameters"].size(); ++i) {
        const auto &pa = ja["parameters"][i], &pb = jb["parameters"][i];
        if (pa != pb)
          return {"dp_replicas", Outcome::fail,
                  label + ": " + ranks + " hold different " + (pa[0] != pb[0] ? std::string("parameter lists")
                                                                          : "values or gradients of " +
                                                                                pa[0].get<std::string>())};
      }
    }
  return {"dp_replicas", Outcome::pass,
          label + ": " + (pairs ? std::to_string(pairs) + " data-parallel replica pairs hold the same bits"
                                : std::string("no data-parallel replicas at this world size"))};
}

CheckResult check_dp_replicas(const RunRecord& run, Communicator& world, const std::string& label) {
  return compare_dp_replicas(all_gather_strings(world, dp_replica_digest(run)), run.config, label);
}

}  // namespace rcts::harness
