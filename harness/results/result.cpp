// The result model of an rcts run: outcome names, execution points, the counting rule
// and the JSON form of results (results/result.hpp).
#include "harness/results/result.hpp"

#include "reference/core/error.hpp"

namespace rcts::harness {

namespace {
constexpr Outcome kOutcomes[] = {Outcome::pass, Outcome::fail, Outcome::skip, Outcome::xfail, Outcome::error};
}  // namespace

std::string_view outcome_name(Outcome o) {
  switch (o) {
    case Outcome::pass: return "pass";
    case Outcome::fail: return "fail";
    case Outcome::skip: return "skip";
    case Outcome::xfail: return "xfail";
    case Outcome::error: return "error";
  }
  return "?";
}

std::string_view outcome_label(Outcome o) {
  switch (o) {
    case Outcome::pass: return "PASS";
    case Outcome::fail: return "FAIL";
    case Outcome::skip: return "SKIP";
    case Outcome::xfail: return "XFAIL";
    case Outcome::error: return "ERROR";
  }
  return "?";
}

Outcome parse_outcome(std::string_view name) {
  for (Outcome o : kOutcomes)
    if (outcome_name(o) == name) return o;
  throw Error("unknown outcome '" + std::string(name) + "' (expected pass, fail, skip, xfail or error)");
}

std::string_view phase_name(Phase p) {
  switch (p) {
    case Phase::seeding: return "RNG seeding";
    case Phase::forward_draw: return "forward dropout draw";
    case Phase::forward: return "forward";
    case Phase::recompute_draw: return "recompute dropout draw";
    case Phase::backward: return "backward";
    case Phase::rng_after: return "RNG states after the micro-batch";
    case Phase::step_end: return "end of step";
  }
  return "?";
}

std::string ExecPoint::str() const {
  if (phase == Phase::seeding) return std::string(phase_name(phase));
  return "step " + std::to_string(step) + " micro-batch " + std::to_string(micro_batch) + ", " +
         std::string(phase_name(phase));
}

Tally tally(const std::vector<CaseResult>& cases) {
  Tally t;
  for (const auto& c : cases) {
    switch (c.outcome) {
      case Outcome::pass: ++t.passed; break;
      case Outcome::fail: ++t.failed; break;
      case Outcome::skip: ++t.skipped; break;
      case Outcome::xfail: ++t.xfail; break;
      case Outcome::error: ++t.errors; break;
    }
  }
  return t;
}

std::string summary_line(const std::vector<CaseResult>& cases) {
  const Tally t = tally(cases);
  return std::to_string(t.passed) + " passed, " + std::to_string(t.failed + t.errors) + " failed, " +
         std::to_string(t.skipped + t.xfail) + " skipped";
}

void to_json(nlohmann::json& j, const CheckResult& c) {
  j = {{"kind", c.kind}, {"outcome", outcome_name(c.outcome)}, {"detail", c.detail}};
  if (c.at)
    j["at"] = {{"step", c.at->step}, {"micro_batch", c.at->micro_batch}, {"phase", std::string(phase_name(c.at->phase))}};
  if (!c.not_judged.empty()) j["not_judged"] = c.not_judged;
}

void to_json(nlohmann::json& j, const CaseResult& c) {
  j = {{"id", c.id},         {"backend", c.backend}, {"file", c.file},    {"outcome", outcome_name(c.outcome)},
       {"reason", c.reason}, {"seconds", c.seconds}, {"checks", c.checks}};
}

void to_json(nlohmann::json& j, const RunHeader& h) {
  j = {{"version", h.version}, {"git_sha", h.git_sha}, {"backend", h.backend},
       {"ranks", h.ranks},     {"seed", h.seed},       {"started_at", h.started_at}};
}

namespace {
Phase parse_phase(std::string_view name) {
  for (Phase p : {Phase::seeding, Phase::forward_draw, Phase::forward, Phase::recompute_draw, Phase::backward,
                  Phase::rng_after, Phase::step_end})
    if (phase_name(p) == name) return p;
  throw Error("unknown execution phase '" + std::string(name) + "'");
}
}  // namespace

// Reads back everything to_json writes, so a result that crosses ranks or a report merge
// keeps where its failure happened and what it could not judge.
CaseResult case_result_from_json(const nlohmann::json& o) {
  CaseResult r;
  r.id = o.at("id");
  r.file = o.value("file", "");
  r.outcome = parse_outcome(o.at("outcome").get<std::string>());
  r.reason = o.value("reason", "");
  r.seconds = o.value("seconds", 0.0);
  r.backend = o.value("backend", "");
  for (const auto& c : o.value("checks", nlohmann::json::array())) {
    CheckResult k{c.at("kind"), parse_outcome(c.at("outcome").get<std::string>()), c.value("detail", "")};
    if (c.contains("at")) {
      const auto& a = c.at("at");
      k.at = ExecPoint{a.at("step").get<int>(), a.at("micro_batch").get<int>(),
                       parse_phase(a.at("phase").get<std::string>())};
    }
    k.not_judged = c.value("not_judged", std::vector<std::string>{});
    r.checks.push_back(std::move(k));
  }
  return r;
}

}  // namespace rcts::harness
