#include "reference/driver/execute.hpp"

namespace rcts {

namespace {
// A host copy that outlives the run's tracker and backend memory.
Tensor keep(const Tensor& t) { return t.defined() ? t.clone(host_placement()) : t; }

std::vector<NamedTensor> keep_all(const std::vector<Parameter*>& params, bool grads) {
  std::vector<NamedTensor> out;
  for (auto* p : params)
    out.push_back(grads ? NamedTensor{p->name + ".grad", keep(p->grad)} : NamedTensor{p->name, keep(p->value)});
  return out;
}
}  // namespace

RunRecord execute(const Config& config, Backend& backend, RankCoords coords, const ProcessGroups* groups,
                  const ExecuteOptions& options) {
  const bool all = options.record_all;
  RunRecord rec;
  rec.config = config;
  rec.backend = backend.name();
  rec.coords = coords;
  Runtime rt(config, backend);
  rt.keep_masks = all;
  if (groups) {
    rt.tp_group = &groups->tp();
    rt.dp_group = &groups->dp();
    rt.ep_group = &groups->ep();
    rt.etp_group = &groups->etp();
    rt.edp_group = &groups->edp();
  }
  seed_runtime(rt, coords.tp, coords.ep, coords.etp);
  rec.rng_initial = rt.rng.all_states();
  {
    GptModel model(rt);
    rec.plan = model.block().plan();
    rt.memory.reset_peaks();
    int64_t saved_peak = 0;
    auto params = model.parameters();
    const auto& run = config.run;
    for (int step = 0; step < run.steps; ++step) {
      zero_grads(params);
      if (all) rec.params_before_step.push_back(keep_all(params, false));
      for (int mb = 0; mb < run.micro_batches; ++mb) {
        const size_t log_before = rt.save_log.records().size();
        MicroBatch m = model.start(step, mb);
        model.forward(m);
        model.loss(m);
        model.backward(m);
        const MicroBatchResult& r = m.result;
        if (step == 0 && mb == 0)
          rec.saves.assign(rt.save_log.records().begin() + static_cast<std::ptrdiff_t>(log_before),
                           rt.save_log.records().end());
        rec.losses.push_back(r.loss);
        rec.inputs.push_back(keep(m.input));
        rec.outputs.push_back(keep(r.output));
        rec.input_grads.push_back(keep(r.input_grad));
        rec.rng_after.push_back(r.rng_after);
        rec.saved_bytes_per_layer.push_back(r.saved_bytes_per_layer);
        rec.saved_after_forward.push_back(r.saved_after_forward);
        rec.host_resident_after_forward.push_back(r.host_resident_after_forward);
        saved_peak = std::max(saved_peak, r.peak_saved_bytes);
        rec.saved_peaks.push_back(r.peak_saved_bytes);
        rec.workspace_heap_allocations.push_back(rt.workspace.heap_allocations());
        if (all) {
          rec.targets.push_back(keep(m.target));
          rec.grads_after_micro_batch.push_back(keep_all(params, true));
          rec.saves_per_micro_batch.emplace_back(rt.save_log.records().begin() + static_cast<std::ptrdiff_t>(log_before),
                                                 rt.save_log.records().end());
        }
      }
      model.finish_step();
      if (all) rec.grads_of_step.push_back(keep_all(params, true));
      if (step + 1 < run.steps) model.sgd_step();
    }
    for (auto* p : params) {
      rec.params.push_back({p->name, keep(p->value)});
      rec.grads.push_back({p->name + ".grad", keep(p->grad)});
    }
    rec.saved_peak = saved_peak;
  }
  rec.device_peak = rt.memory.domain(Domain::device).peak;
  rec.workspace_peak = rt.memory.category(Domain::device, Category::workspace).peak;
  if (rt.offload) rec.offload = rt.offload->report();
  rec.masks = rt.masks;
  rec.counts = rt.counters.forwards();
  rec.side_effects = rt.side_effects;
  return rec;
}

}  // namespace rcts
