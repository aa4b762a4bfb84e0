// Dump format 1 (docs/dump-format.md): one directory per (case, run, rank) holding a
// self-describing dump.json and one .npy per tensor. `rcts run --dump` writes it from
// a RunRecord; `rcts check` reads dumps of any implementation back into RunRecords, so
// the very same checks judge them. Tensors keep their shapes; bf16 is stored as its
// raw bits ('<u2') and comes back bit for bit.
//
// Reading is strict: an unknown key, a missing field, a wrong type, a tensor file
// whose dtype, shape, size or sha256 disagrees with the manifest, or a count that
// disagrees with the config is an rcts::Error naming the file and the JSON path.
#pragma once
#include <filesystem>
#include <string>

#include "reference/driver/execute.hpp"

namespace rcts::harness {

inline constexpr int kDumpVersion = 1;
inline constexpr const char* kDumpManifest = "dump.json";

// What a dump says about itself besides the record.
struct DumpMeta {
  std::string case_id;
  std::string case_file;   // informational: the case file the writer ran
  std::string run;         // "baseline", a variant's name, or a rerun's label
  std::string role;        // "baseline", "variant" or "rerun"
  std::string of_variant;  // a rerun: the variant whose check asked for it
  int world_rank = 0;
  int world_size = 1;
  std::string version;     // the implementation's version string
};

struct DumpedRun {
  std::filesystem::path dir;
  DumpMeta meta;
  RunRecord record;
};

// Writes `r` (recorded with ExecuteOptions::record_all) into `dir`, created if needed.
// The record's own declarations (implementation, rules) go into the manifest.
void write_dump(const std::filesystem::path& dir, const DumpMeta& meta, const RunRecord& r);

// Reads the dump in `dir` (its dump.json and every tensor file it names).
DumpedRun read_dump(const std::filesystem::path& dir);

// Where `rcts run --dump ROOT` puts one run: ROOT/<case>/<backend>/rank<r>/<run> (each
// made file-name safe). Readers do not depend on it: `rcts check` finds dumps by dump.json.
std::filesystem::path dump_dir_of(const std::filesystem::path& root, const std::string& case_id,
                                  const std::string& backend, const std::string& run, int world_rank);

// Megatron-LM's name of an rcts parameter (GPT model, local layer spec), e.g.
// "layers.0.attention.qkv.weight" -> "decoder.layers.0.self_attention.linear_qkv.weight".
// Empty when Megatron has no counterpart.
std::string megatron_name(const std::string& rcts_name);

}  // namespace rcts::harness
