#include "test_util.h"

#include <cstdlib>

namespace ncclrr::host::testing {
namespace {

// Before main: the library reads its knobs once, on first use.
const int kEnvSet = [] {
  setenv("NCCLRR_HOST_TIMEOUT_MS", std::to_string(kTestTimeoutMs).c_str(), 0);
  return 0;
}();

}  // namespace

Ranks::Ranks(int nranks) : n(nranks), comms(nranks), streams(nranks) {
  EXPECT_EQ(ncclCommInitAll(comms.data(), n, nullptr), ncclSuccess);
  for (auto& s : streams) s = ncclrrHostStreamCreate();
}

Ranks::~Ranks() {
  for (auto c : comms) ncclCommDestroy(c);
  for (auto s : streams) ncclrrHostStreamDestroy(s);
}

ncclResult_t Ranks::Sync() {
  ncclResult_t first = ncclSuccess;
  for (auto s : streams) {
    ncclResult_t r = ncclrrHostStreamSynchronize(s);
    if (first == ncclSuccess) first = r;
  }
  return first;
}

void OnThreads(int n, const std::function<void(int)>& f) {
  std::vector<std::thread> threads;
  for (int r = 0; r < n; ++r) threads.emplace_back(f, r);
  for (auto& t : threads) t.join();
}

}  // namespace ncclrr::host::testing
