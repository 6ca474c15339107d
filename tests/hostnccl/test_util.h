// Helpers shared by the host NCCL tests.
#pragma once
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <functional>
#include <thread>
#include <vector>

#include "api_visibility.h"

namespace ncclrr::host::testing {

// Timeout the tests run with (NCCLRR_HOST_TIMEOUT_MS, set before the library first reads it).
constexpr int kTestTimeoutMs = 1000;

// N ranks of one communicator made by ncclCommInitAll, each with its own host stream.
struct Ranks {
  explicit Ranks(int n);
  ~Ranks();
  // Synchronizes every rank's stream; returns the first error.
  ncclResult_t Sync();
  int n;
  std::vector<ncclComm_t> comms;
  std::vector<cudaStream_t> streams;
};

// Runs f(rank) on one thread per rank and joins them.
void OnThreads(int n, const std::function<void(int)>& f);

}  // namespace ncclrr::host::testing
