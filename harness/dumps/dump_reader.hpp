// The strict reader's parts shared by the files of dump_read*.cpp: Reader (required
// fields, integers, RNG states and tensor files, each refusal naming the file and the
// JSON path), what the config fixes of a dump's tensors (DumpDims), and the section
// readers that live in their own file.
#pragma once
#include <filesystem>
#include <map>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "harness/io/json_reader.hpp"
#include "reference/driver/execute.hpp"

namespace rcts::harness::dump_detail {

// A dump directory's manifest and the tensor files it names; the dump is untrusted.
class Reader {
 public:
  Reader(std::filesystem::path dir, std::string manifest) : dir_(std::move(dir)), manifest_(std::move(manifest)) {}

  // A required member.
  JsonReader need(const JsonReader& r, const char* key) const;
  // A non-negative integer up to 2^64 - 1 (seeds, offsets, storage ids).
  uint64_t u64(const JsonReader& r) const;
  // An integer in [lo, 2^63).
  int64_t i64(const JsonReader& r, int64_t lo = 0) const;
  // The tensor entry `r` ({file, dtype, shape, sha256}) named `name`: the file's place,
  // header, dtype, shape and size are checked against the manifest before a byte is
  // allocated or read; then it is read once, hashed as it goes.
  Tensor tensor(const JsonReader& r, const std::string& name) const;
  // Why `path` (a file of the dump, maybe a symlink) resolves outside the dump
  // directory; nullopt when it stays inside.
  std::optional<std::string> outside_the_dump(const std::filesystem::path& path) const;
  // A list of tensor entries, each with its "name".
  std::vector<NamedTensor> named(const JsonReader& r) const;
  // RNG states: one {seed, offset}, the seed-offset set, or the opaque digests.
  GeneratorState state(const JsonReader& r) const;
  RngStates states(const JsonReader& r) const;
  std::map<std::string, std::string> opaque_states(const JsonReader& r) const;

  const std::filesystem::path& dir() const { return dir_; }

 private:
  std::filesystem::path dir_;
  std::string manifest_;
};

// What the config fixes of every tensor of the dump on this rank.
struct DumpDims {
  int per = 1, steps = 1;  // micro-batches per step, steps
  bool training = true;
  Shape act_shape;   // (s*b, h)
  bool sp = false;   // under sequence parallelism the block's input gradient is this rank's shard
  int64_t tp = 1;
  Shape grad_shape;  // (s/tp*b, h) under SP, else (s*b, h)
  DType act = DType::bf16;
};

// The named tensors `got` (at `where`) carry the names of `want`, in order; `against`
// names `want` in the refusal.
void check_names_match(const std::vector<NamedTensor>& got, const std::vector<NamedTensor>& want,
                       const JsonReader& where, const std::string& against);

// /micro_batches (dump_read_micro_batches.cpp): every micro-batch, and the optional fields
// given for all or none.
void read_micro_batches(const Reader& rd, const JsonReader& root, const DumpDims& dims, RunRecord& r);

}  // namespace rcts::harness::dump_detail
