// The Chrome / Perfetto trace of one case (`rcts run --report DIR` writes it as
// <case>.trace.json; open it in ui.perfetto.dev or chrome://tracing). Trace event
// format: "traceEvents" of complete events (ph "X", ts and dur in microseconds), one
// process per rank (pid = rank), one thread per stream: tid 0 the main stream (each
// run, and each micro-batch's forward and backward), tid 1 the D2H and tid 2 the H2D
// copy stream (every offload copy, its bytes and storage in args). Runs of one case
// share one clock (the steady clock), so they appear one after the other.
#pragma once
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "harness/reports/report_data.hpp"

namespace rcts::harness {

nlohmann::json chrome_trace(const std::string& case_id, const std::vector<RunPicture>& runs);

}  // namespace rcts::harness
