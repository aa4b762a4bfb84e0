// /micro_batches of dump format 1: per micro-batch its loss, activations, gradients,
// RNG states and memory figures, checked against the config (docs/dump-format.md).
#include <cstring>
#include <limits>

#include "harness/dumps/dump_format.hpp"
#include "harness/dumps/dump_reader.hpp"
#include "reference/core/memory.hpp"
#include "reference/memory_model/saved_profile.hpp"

namespace rcts::harness::dump_detail {

namespace {

Category parse_category(const JsonReader& r) {
  const std::string s = r.str();
  for (int i = 0; i < kNumCategories; ++i)
    if (category_name(static_cast<Category>(i)) == s) return static_cast<Category>(i);
  r.fail("unknown memory category");
}

// A micro-batch's loss: its bits are the value; "value" (null for NaN) must agree.
double read_loss(const Reader& rd, const JsonReader& e) {
  const JsonReader loss = rd.need(e, "loss");
  loss.expect_object({"value", "bits"});
  const std::string bits = rd.need(loss, "bits").str();
  uint64_t u = 0;
  if (bits.size() != 18 || bits.compare(0, 2, "0x") != 0 ||
      bits.find_first_not_of("0123456789abcdefABCDEF", 2) != std::string::npos)
    loss.at("bits").fail("expected the double's 64 bits as \"0x\" and 16 hex digits");
  u = std::stoull(bits.substr(2), nullptr, 16);
  double v;
  std::memcpy(&v, &u, sizeof v);
  if (loss.has("value") && !loss.at("value").json().is_null()) {  // NaN is written as null
    const double shown = loss.at("value").number(-std::numeric_limits<double>::max(), std::numeric_limits<double>::max());
    if (std::memcmp(&shown, &v, sizeof v) != 0 && !(shown == v))
      loss.at("value").fail("disagrees with its bits " + bits);
  }
  return v;
}

// A save's optional op, dtype and shape; the bytes must be the shape's.
RunRecord::SaveShape read_save_shape(const Reader& rd, const JsonReader& s, int64_t bytes) {
  RunRecord::SaveShape sh;
  if (s.has("op")) sh.op = s.at("op").str();
  if (s.has("dtype") != s.has("shape")) s.fail("give both dtype and shape, or neither");
  if (!s.has("dtype")) return sh;
  sh.dtype = s.at("dtype").str();
  const int64_t each = dtype_name_bytes(sh.dtype);
  if (each == 0) s.at("dtype").fail("not a dtype (f64, f32, bf16, f16, i64, i32, u8, bool)");
  const JsonReader sr = s.at("shape");
  if (sr.array_size() > 32) sr.fail("more than 32 dimensions");
  int64_t n = each;
  for (size_t i = 0; i < sr.array_size(); ++i) {
    sh.shape.push_back(rd.i64(sr.at(i)));
    if (sh.shape.back() > 0 && n > (int64_t{1} << 40) / sh.shape.back()) sr.fail("more than 2^40 bytes");
    n *= sh.shape.back();
  }
  if (n != bytes)
    s.at("bytes").fail("a " + sh.dtype + " " + shape_text(sh.shape) + " tensor holds " + std::to_string(n) + " bytes");
  return sh;
}

// A micro-batch's saved_tensors (or held_after_backward), with each save's shape.
std::vector<SaveRecord> read_saves(const Reader& rd, const JsonReader& st,
                                   std::vector<RunRecord::SaveShape>* shapes = nullptr) {
  std::vector<SaveRecord> saves;
  for (size_t k = 0; k < st.array_size(); ++k) {
    const JsonReader s = st.at(k);
    s.expect_object({"module", "tensor", "bytes", "category", "storage", "offset", "recompute", "op", "dtype", "shape"});
    SaveRecord rec;
    rec.module_path = rd.need(s, "module").str();
    rec.tensor = rd.need(s, "tensor").str();
    rec.bytes = rd.i64(rd.need(s, "bytes"));
    rec.category = s.has("category") ? parse_category(s.at("category")) : Category::saved_activation;
    rec.storage_id = s.has("storage") ? rd.u64(s.at("storage")) : 0;
    rec.offset = s.has("offset") ? rd.i64(s.at("offset")) : 0;
    rec.recompute = s.has("recompute") && s.at("recompute").boolean();
    if (shapes) shapes->push_back(read_save_shape(rd, s, rec.bytes));
    saves.push_back(std::move(rec));
  }
  return saves;
}

// /micro_batches/i.
void read_micro_batch(const Reader& rd, const JsonReader& e, int i, const DumpDims& dims, RunRecord& r) {
  const auto& cfg = r.config;
  const auto& [per, steps, training, act_shape, sp, tp, grad_shape, act] = dims;
  e.expect_object({"step", "micro_batch", "loss", "input", "target", "output", "input_grad", "param_grads",
                   "rng_after", "saved_bytes_per_layer", "saved_tensors", "held_after_backward", "saved_peak", "saved_after_forward",
                   "host_resident_after_forward", "offloaded_bytes", "reloaded_bytes"});
  if (rd.need(e, "step").integer(0, 1 << 30) != i / per) e.at("step").fail("expected step " + std::to_string(i / per));
  if (rd.need(e, "micro_batch").integer(0, 1 << 30) != i % per)
    e.at("micro_batch").fail("expected micro-batch " + std::to_string(i % per));
  r.losses.push_back(read_loss(rd, e));
  const std::string stem = mb_stem(i / per, i % per);
  // `act` by an init-capture: clang 14 cannot capture a structured binding.
  auto activation = [&, act = act](const char* key, const Shape& want, const char* what) {
    Tensor t = rd.tensor(rd.need(e, key), stem + "." + key);
    if (t.shape() != want || t.dtype() != act)
      e.at(key).fail("a " + std::string(dtype_name(t.dtype())) + " " + shape_str(t.shape()) +
                     " tensor; the config's activations are " + std::string(dtype_name(act)) + " " +
                     shape_str(want) + " " + what);
    return t;
  };
  r.inputs.push_back(activation("input", act_shape, "(s*b, h)"));
  r.targets.push_back(activation("target", act_shape, "(s*b, h)"));
  r.outputs.push_back(activation("output", act_shape, "(s*b, h)"));
  if (training) {
    if (rd.need(e, "input_grad").json().is_null()) e.at("input_grad").fail("a training run has an input gradient");
    r.input_grads.push_back(activation("input_grad", grad_shape, sp ? "(s/tp*b, h): this rank's sequence shard" : "(s*b, h)"));
  } else {
    if (e.has("input_grad") && !e.at("input_grad").json().is_null())
      e.at("input_grad").fail("an eval run (run.training = false) has no input gradient: write null");
    r.input_grads.emplace_back();
  }
  r.grads_after_micro_batch.push_back(rd.named(rd.need(e, "param_grads")));
  check_names_match(r.grads_after_micro_batch.back(), r.grads, e.at("param_grads"), "/steps/*/grads");
  if (r.seed_offset_rng) r.rng_after.push_back(rd.states(rd.need(e, "rng_after")));
  else r.rng_after_opaque.push_back(rd.opaque_states(rd.need(e, "rng_after")));
  const JsonReader sb = rd.need(e, "saved_bytes_per_layer");
  if (sb.array_size() != static_cast<size_t>(cfg.model.num_layers))
    sb.fail(std::to_string(sb.array_size()) + " layers, the config has model.num_layers = " +
            std::to_string(cfg.model.num_layers));
  std::vector<int64_t> per_layer;
  for (size_t l = 0; l < sb.array_size(); ++l) per_layer.push_back(rd.i64(sb.at(l)));
  r.saved_bytes_per_layer.push_back(std::move(per_layer));
  if (e.has("saved_tensors")) {
    r.save_shapes_per_micro_batch.emplace_back();
    r.saves_per_micro_batch.push_back(read_saves(rd, e.at("saved_tensors"), &r.save_shapes_per_micro_batch.back()));
  } else {
    r.not_recorded.insert("saved_tensors");
  }
  if (e.has("held_after_backward")) {
    r.held_after_backward_shapes.emplace_back();
    r.held_after_backward.push_back(read_saves(rd, e.at("held_after_backward"), &r.held_after_backward_shapes.back()));
  }
  if (e.has("saved_peak")) r.saved_peaks.push_back(rd.i64(e.at("saved_peak")));
  else r.not_recorded.insert("saved_peak");
  if (e.has("saved_after_forward")) {
    r.saved_after_forward.push_back(rd.i64(e.at("saved_after_forward")));
    r.host_resident_after_forward.push_back(rd.i64(rd.need(e, "host_resident_after_forward")));
  } else {
    r.not_recorded.insert("saved_after_forward");
  }
  if (e.has("offloaded_bytes")) {
    r.offloaded_bytes.push_back(rd.i64(e.at("offloaded_bytes")));
    r.reloaded_bytes.push_back(rd.i64(rd.need(e, "reloaded_bytes")));
  }
}
}  // namespace

// /micro_batches: every micro-batch, and the optional fields given for all or none.
void read_micro_batches(const Reader& rd, const JsonReader& root, const DumpDims& dims, RunRecord& r) {
  const int per = dims.per, steps = dims.steps;
  const JsonReader ml = rd.need(root, "micro_batches");
  if (ml.array_size() != static_cast<size_t>(steps * per))
    ml.fail(std::to_string(ml.array_size()) + " micro-batches, the config has run.steps x run.micro_batches = " +
            std::to_string(steps * per));
  for (int i = 0; i < steps * per; ++i) read_micro_batch(rd, ml.at(static_cast<size_t>(i)), i, dims, r);
  if (!r.saves_per_micro_batch.empty()) {
    if (r.saves_per_micro_batch.size() != r.losses.size())
      ml.fail("saved_tensors is given for some micro-batches only");
    r.saves = r.saves_per_micro_batch.front();
  }
  if (r.saved_peaks.size() != r.losses.size() && !r.saved_peaks.empty())
    ml.fail("saved_peak is given for some micro-batches only");
  if (r.held_after_backward.size() != r.losses.size() && !r.held_after_backward.empty())
    ml.fail("held_after_backward is given for some micro-batches only");
  if (r.saved_after_forward.size() != r.losses.size() && !r.saved_after_forward.empty())
    ml.fail("saved_after_forward is given for some micro-batches only");
  if (r.offloaded_bytes.size() != r.losses.size() && !r.offloaded_bytes.empty())
    ml.fail("offloaded_bytes is given for some micro-batches only");
}

}  // namespace rcts::harness::dump_detail
