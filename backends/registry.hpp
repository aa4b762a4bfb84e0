// The backends rcts knows (docs/design.md §11): each with its name, a description,
// the golden files it must reproduce, whether it can run on this machine, and a
// factory. Every front end (the CLI, CTest, benchmarks) chooses through here, so
// adding a backend is an implementation of reference/backend/backend.hpp plus one
// entry in registry.cpp.
#pragma once
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "reference/backend/backend.hpp"

namespace rcts {

struct BackendEntry {
  std::string name;
  std::string description;
  std::string golden_name;  // golden/<golden_name>/: its own, or the backend whose bits it shares
  // Empty when the backend can run here; otherwise why not (not built, no device).
  std::function<std::string()> unavailable;
  std::function<std::unique_ptr<Backend>()> make;
};

const std::vector<BackendEntry>& registered_backends();
// Null when no backend has that name.
const BackendEntry* find_backend(const std::string& name);
// The backend, or an rcts::Error naming the known backends / why it cannot run here.
std::unique_ptr<Backend> make_backend(const std::string& name);
// "cpu, cpu-scalar, cuda"
std::string backend_names();

}  // namespace rcts
