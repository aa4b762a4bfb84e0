#include "harness/checks/reference_compare.hpp"

#include <algorithm>
#include <cmath>
#include <map>
#include <sstream>

namespace rcts::harness {

namespace {

// The worst error of one named tensor over the places it occurs.
struct Worst {
  double max_abs = 0, max_ref = 0;
  std::string where;  // the place of the largest max_abs
  bool mismatch = false;  // shapes differed, or a value was NaN on one side only
  std::string why;
};

double rel(const Worst& w) { return w.max_ref > 0 ? w.max_abs / w.max_ref : w.max_abs; }

void accumulate(Worst& w, const Tensor& ref, const Tensor& got, const std::string& where) {
  if (ref.shape() != got.shape()) {
    if (!w.mismatch) w.why = where + ": shape " + shape_str(got.shape()) + ", reference " + shape_str(ref.shape());
    w.mismatch = true;
    return;
  }
  const auto a = to_vector<double>(ref), b = to_vector<double>(got);
  double worst = 0, ref_max = 0;
  for (size_t i = 0; i < a.size(); ++i) {
    if (std::isnan(a[i]) != std::isnan(b[i])) {
      if (!w.mismatch) w.why = where + ": element " + std::to_string(i) + " is NaN on one side only";
      w.mismatch = true;
      continue;
    }
    if (std::isnan(a[i])) continue;
    worst = std::max(worst, std::fabs(a[i] - b[i]));
    ref_max = std::max(ref_max, std::fabs(a[i]));
  }
  w.max_ref = std::max(w.max_ref, ref_max);
  if (worst > w.max_abs || w.where.empty()) {
    w.max_abs = std::max(w.max_abs, worst);
    if (worst >= w.max_abs) w.where = where;
  }
}

std::string mb_where(const RunRecord& r, size_t i) {
  const int per = r.config.run.micro_batches;
  return "step " + std::to_string(static_cast<int>(i) / per) + " micro-batch " + std::to_string(static_cast<int>(i) % per);
}

std::string num(double v) {
  std::ostringstream os;
  os.precision(3);
  os << std::scientific << v;
  return os.str();
}

}  // namespace

CheckResult compare_with_reference(const RunRecord& ref, const RunRecord& run, const ReferenceTolerance& tol,
                                   const std::string& label) {
  const std::string kind = "reference";
  std::map<std::string, Worst> worst;  // ordered by name for a stable report
  std::vector<std::string> order;
  auto at = [&](const std::string& name) -> Worst& {
    if (!worst.count(name)) order.push_back(name);
    return worst[name];
  };
  if (ref.losses.size() != run.losses.size())
    return {kind, Outcome::fail,
            label + ": " + std::to_string(run.losses.size()) + " micro-batches, the reference has " +
                std::to_string(ref.losses.size())};
  for (size_t i = 0; i < ref.losses.size(); ++i) {
    Worst& w = at("loss");
    const double e = std::fabs(ref.losses[i] - run.losses[i]);
    if (std::isnan(ref.losses[i]) != std::isnan(run.losses[i])) {
      w.mismatch = true;
      w.why = mb_where(run, i) + ": NaN on one side only";
    }
    w.max_ref = std::max(w.max_ref, std::fabs(ref.losses[i]));
    if (e > w.max_abs || w.where.empty()) {
      w.max_abs = std::max(w.max_abs, e);
      w.where = mb_where(run, i);
    }
    accumulate(at("output"), ref.outputs[i], run.outputs[i], mb_where(run, i));
    if (ref.input_grads[i].defined() && run.input_grads[i].defined())
      accumulate(at("input_grad"), ref.input_grads[i], run.input_grads[i], mb_where(run, i));
  }
  const auto& rs = ref.grads_of_step.empty() ? std::vector<std::vector<NamedTensor>>{ref.grads} : ref.grads_of_step;
  const auto& gs = run.grads_of_step.empty() ? std::vector<std::vector<NamedTensor>>{run.grads} : run.grads_of_step;
  for (size_t s = 0; s < rs.size() && s < gs.size(); ++s)
    for (const auto& r : rs[s]) {
      auto it = std::find_if(gs[s].begin(), gs[s].end(), [&](const NamedTensor& n) { return n.name == r.name; });
      Worst& w = at(r.name);
      if (it == gs[s].end()) {
        w.mismatch = true;
        w.why = "step " + std::to_string(s) + ": missing";
        continue;
      }
      accumulate(w, r.tensor, it->tensor, "step " + std::to_string(s));
    }
  bool ok = true;
  std::ostringstream table;
  table << label << ": against rcts's reference (" << ref.backend << "), rtol " << num(tol.rtol) << " atol "
        << num(tol.atol);
  std::string first_bad;
  for (const auto& name : order) {
    const Worst& w = worst[name];
    const bool bad = w.mismatch || w.max_abs > tol.atol + tol.rtol * w.max_ref;
    table << "\n  " << (bad ? "FAIL " : "ok   ") << name << ": max abs " << num(w.max_abs) << ", rel " << num(rel(w))
          << " (worst at " << w.where << ")" << (w.mismatch ? "; " + w.why : "");
    if (bad && ok) first_bad = name;
    ok = ok && !bad;
  }
  if (!ok) return {kind, Outcome::fail, label + ": " + first_bad + " is outside the tolerance\n" + table.str()};
  return {kind, Outcome::pass, table.str()};
}

}  // namespace rcts::harness
