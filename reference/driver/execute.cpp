#include "reference/driver/execute.hpp"

#include "reference/core/error.hpp"
#include "reference/driver/pipeline.hpp"

namespace rcts {

namespace {
// A host copy that outlives the run's tracker and backend memory.
Tensor keep(const Tensor& t) { return t.defined() ? t.clone(host_placement()) : t; }

// Marks the end of a micro-batch when its state (which still holds the input) is dropped.
struct EndMark {
  MemoryTimeline& timeline;
  std::string label;
  ~EndMark() { timeline.mark(label); }
};
std::vector<NamedTensor> keep_all(const std::vector<Parameter*>& params, bool grads) {
  std::vector<NamedTensor> out;
  for (auto* p : params)
    out.push_back(grads ? NamedTensor{p->name + ".grad", keep(p->grad)} : NamedTensor{p->name, keep(p->value)});
  return out;
}
}  // namespace

Supported supported_on(Backend& backend) {
  Supported s;
  s.flash_attention = backend.fused_attention() != nullptr;
  return s;
}

RunRecord execute(const Config& config, Backend& backend, RankCoords coords, const ProcessGroups* groups,
                  const ExecuteOptions& options) {
  const bool all = options.record_all;
  RunRecord rec;
  rec.config = config;
  rec.backend = backend.name();
  rec.coords = coords;
  // A fused attention draws its masks by the library's rule: the masks check then judges
  // draws by (seed, offset), shape and rate, not by regenerating them.
  rec.rcts_mask_rule = !config.model.flash_attention;
  MemoryTimeline timeline;  // outlives the runtime, whose copy workers report to it
  Runtime rt(config, backend);
  rt.memory.set_timeline(&timeline, kHeldForBackward);
  if (rt.offload) rt.offload->set_timeline(&timeline);
  rt.keep_masks = all;
  if (groups) {
    rt.tp_group = &groups->tp();
    rt.dp_group = &groups->dp();
    rt.ep_group = &groups->ep();
    rt.etp_group = &groups->etp();
    rt.edp_group = &groups->edp();
  }
  const int pp = config.parallel.pipeline_model_parallel_size;
  RCTS_CHECK(pp == 1 || (groups && groups->layout().pp == pp),
             "pipeline_model_parallel_size = " + std::to_string(pp) + " needs process groups with " +
                 std::to_string(pp) + " pipeline stages (run it under mpirun with a multiple of " + std::to_string(pp) +
                 " ranks)");
  // Only the last pipeline stage computes the loss (design §16).
  const bool has_loss = pp == 1 || pipeline_next(groups->layout(), groups->world_rank()) < 0;
  rt.pp_rank = coords.pp;
  seed_runtime(rt, coords.tp, coords.ep, coords.etp, coords.pp);
  rec.rng_initial = rt.rng.all_states();
  {
    GptModel model(rt);
    rec.plan = model.block().plan();
    rt.memory.reset_peaks();
    backend.reset_device_pool_high_water();
    int64_t saved_peak = 0;
    auto params = model.parameters();
    const auto& run = config.run;
    for (int step = 0; step < run.steps; ++step) {
      zero_grads(params);
      if (all) rec.params_before_step.push_back(keep_all(params, false));
      // What one finished micro-batch leaves in the record; `logged` are the ranges of
      // the save log its forward and backward wrote.
      const auto record = [&](MicroBatch& m, const SaveLogRanges& logged) {
        const auto saves_of = [&] {
          std::vector<SaveRecord> out;
          for (const auto& [b, e] : logged)
            out.insert(out.end(), rt.save_log.records().begin() + static_cast<std::ptrdiff_t>(b),
                       rt.save_log.records().begin() + static_cast<std::ptrdiff_t>(e));
          return out;
        };
        const MicroBatchResult& r = m.result;
        if (step == 0 && r.micro_batch == 0) rec.saves = saves_of();
        if (has_loss) rec.losses.push_back(r.loss);
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
          rec.saves_per_micro_batch.push_back(saves_of());
        }
      };
      if (pp > 1) {
        pipeline_step(model, rt, *groups, step, timeline, record);  // design §16
      } else {
        for (int mb = 0; mb < run.micro_batches; ++mb) {
          const size_t log_before = rt.save_log.records().size();
          const std::string at = "step " + std::to_string(step) + " mb " + std::to_string(mb);
          const EndMark end{timeline, at + " end"};  // declared first: set once `m` is gone
          MicroBatch m = model.start(step, mb);
          timeline.mark(at + " forward");
          model.forward(m);
          model.loss(m);
          timeline.mark(at + " backward");
          model.backward(m);
          record(m, {{log_before, rt.save_log.records().size()}});
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
  rt.memory.set_timeline(nullptr, kHeldForBackward);
  if (rt.offload) rt.offload->set_timeline(nullptr);  // its copies have all completed (end_iteration)
  rec.timeline = timeline.snapshot();
  rec.device_peak = rt.memory.domain(Domain::device).peak;
  rec.workspace_peak = rt.memory.category(Domain::device, Category::workspace).peak;
  rec.device_pool_high_water = backend.device_pool_high_water();
  if (rt.offload) rec.offload = rt.offload->report();
  rec.masks = rt.masks;
  rec.counts = rt.counters.forwards();
  rec.side_effects = rt.side_effects;
  return rec;
}

}  // namespace rcts
