// Shared by the MPI test binary: the world communicator the MPI main creates, and
// inputs generated from (seed, index, rank) so every rank can rebuild any rank's shard.
#pragma once
#include <bit>
#include <cmath>
#include <cstdint>
#include <limits>

#include "reference/parallel/communicator.hpp"

namespace rcts::mpi_test {

// The MpiCommunicator over MPI_COMM_WORLD (a duplicate), valid while tests run.
Communicator& world();

inline uint64_t mix(uint64_t seed, uint64_t index, uint64_t rank) {
  uint64_t z = seed ^ (index * 0x9E3779B97F4A7C15ull) ^ (rank * 0xD1B54A32D192ED03ull);
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
  return z ^ (z >> 31);
}

// A value with a full-width random mantissa and a random exponent (float: 2^-10 to
// 2^21, double: 2^-30 to 2^33), so the order of a sum changes its bits.
template <class T>
T input(uint64_t seed, int64_t index, int rank) {
  const uint64_t u = mix(seed, static_cast<uint64_t>(index), static_cast<uint64_t>(rank));
  constexpr int digits = std::numeric_limits<T>::digits;  // 24 or 53
  const T unit = std::ldexp(static_cast<T>(u >> (64 - digits)), -digits);  // [0, 1), exact
  const int exponent = digits == 24 ? static_cast<int>(u & 31) - 10 : static_cast<int>(u & 63) - 30;
  return std::ldexp(unit * T(2) - T(1), exponent);
}

inline uint32_t bits(float x) { return std::bit_cast<uint32_t>(x); }
inline uint64_t bits(double x) { return std::bit_cast<uint64_t>(x); }

}  // namespace rcts::mpi_test
