#include "replay_scripts.h"

#include <gtest/gtest.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdio>

#include <cstdlib>
#include <filesystem>
#include <utility>

namespace ncclrr::testing {
namespace {

constexpr int kBuggy = 1;  // the example's buggy rank

ScriptCall Call(Api api, int tensor, uint64_t count, int root_peer = -1,
                Dtype dtype = Dtype::kFloat32, int32_t op = 0) {
  ScriptCall c;
  c.api = api;
  c.tensor = tensor;
  c.count = count;
  c.root_peer = root_peer;
  c.dtype = dtype;
  c.op = op;
  return c;
}

std::vector<ScriptCall> Base() {
  return {Call(Api::kAllReduce, 0, 1024), Call(Api::kAllReduce, 1, 1024),
          Call(Api::kAllReduce, 2, 256), Call(Api::kBroadcast, 3, 512, 0)};
}

// What one rank of the example issues in one step (examples/src/scenarios.cc).
std::vector<ScriptCall> Step(const std::string& name, int step, int rank, int nranks) {
  const bool buggy = rank == kBuggy, odd = step % 2 == 1;
  std::vector<ScriptCall> calls = Base();
  if (name == "swap-same-size" && buggy && odd) std::swap(calls[0], calls[1]);
  if (name == "swap-diff-size") {
    calls[1].count = 512;
    if (buggy && odd) std::swap(calls[0], calls[1]);
  }
  if (name == "count-mismatch" && buggy) calls[0].count -= 2;
  if (name == "missing-collective" && buggy && step == 1) calls.erase(calls.begin() + 1);
  if (name == "dtype-mismatch" && buggy) calls[0].dtype = Dtype::kInt32;
  if (name == "root-mismatch" && buggy && odd) calls[3].root_peer = kBuggy;
  if (name == "p2p-mismatch") {
    ScriptCall send = Call(Api::kSend, 1, 256, (rank + 1) % nranks);
    ScriptCall recv = Call(Api::kRecv, 2, 256, (rank + nranks - 1) % nranks);
    if (buggy && step >= 1) recv.count -= 1;
    send.group = recv.group = static_cast<uint64_t>(step) + 1;
    calls = {Call(Api::kAllReduce, 0, 1024), send, recv};
  }
  if (name == "cross-comm-order") {
    ScriptCall a = Call(Api::kAllReduce, 0, 1024), b = Call(Api::kAllReduce, 1, 1024);
    b.comm = 1;
    calls = buggy && step >= 1 ? std::vector<ScriptCall>{b, a} : std::vector<ScriptCall>{a, b};
  }
  return calls;
}

SyntheticScript Script(int ranks, int comms) {
  SyntheticScript s;
  std::vector<int> members;
  for (int r = 0; r < ranks; ++r) members.push_back(r);
  for (int c = 0; c < comms; ++c) {
    ScriptComm comm;
    comm.id = 0x7e57000000000001ull + static_cast<uint64_t>(c);
    comm.name = c == 0 ? "dp" : "tp";
    comm.members = members;
    s.comms.push_back(comm);
  }
  s.processes.resize(ranks);
  return s;
}

}  // namespace

std::vector<std::string> ExampleScenarioNames() {
  return {"clean",     "swap-same-size", "swap-diff-size", "count-mismatch", "missing-collective",
          "send-race", "dtype-mismatch", "root-mismatch",  "p2p-mismatch",   "cross-comm-order"};
}

SyntheticScript ExampleScript(const std::string& scenario, int ranks, int steps) {
  SyntheticScript s = Script(ranks, scenario == "cross-comm-order" ? 2 : 1);
  for (int step = 0; step < steps; ++step)
    for (int r = 0; r < ranks; ++r)
      for (const ScriptCall& c : Step(scenario, step, r, ranks)) s.processes[r].calls.push_back(c);
  return s;
}

SyntheticScript TwoStreamScript(int ranks, int steps) {
  SyntheticScript s = Script(ranks, 1);
  for (int step = 0; step < steps; ++step)
    for (int r = 0; r < ranks; ++r) {
      ScriptCall a = Call(Api::kAllReduce, 0, 2048), b = Call(Api::kAllReduce, 1, 2048);
      a.stream = 0xA000 + static_cast<uint64_t>(r);
      b.stream = 0xB000 + static_cast<uint64_t>(r);
      s.processes[r].calls.push_back(a);
      s.processes[r].calls.push_back(b);
    }
  return s;
}

SyntheticScript EveryApiScript(int ranks) {
  SyntheticScript s = Script(ranks, 1);
  const auto sum = 0, prod = 1, max = 2, min = 3, avg = 4;
  int t = 0;
  const std::vector<ScriptCall> calls = {
      Call(Api::kAllReduce, t++, 1000, -1, Dtype::kFloat32, sum),
      Call(Api::kAllReduce, t++, 777, -1, Dtype::kFloat16, max),
      Call(Api::kAllReduce, t++, 300, -1, Dtype::kBfloat16, min),
      Call(Api::kAllReduce, t++, 100, -1, Dtype::kInt32, prod),
      Call(Api::kAllReduce, t++, 100, -1, Dtype::kFloat64, avg),
      Call(Api::kAllReduce, t++, 64, -1, Dtype::kInt8, sum),
      Call(Api::kAllReduce, t++, 64, -1, Dtype::kUint8, sum),
      Call(Api::kAllReduce, t++, 64, -1, Dtype::kInt64, sum),
      Call(Api::kAllReduce, t++, 64, -1, Dtype::kUint32, max),
      Call(Api::kAllReduce, t++, 64, -1, Dtype::kUint64, prod),
      Call(Api::kAllReduce, t++, 32, -1, Dtype::kFloat8e4m3, sum),
      Call(Api::kAllReduce, t++, 32, -1, Dtype::kFloat8e5m2, sum),
      Call(Api::kAllReduce, t++, 50, -1, Dtype::kInt32, avg),
      Call(Api::kBroadcast, t++, 500, 1),
      Call(Api::kBcast, t++, 300, 2),
      Call(Api::kReduce, t++, 400, 2, Dtype::kFloat32, sum),
      Call(Api::kAllGather, t++, 100),
      Call(Api::kReduceScatter, t++, 100, -1, Dtype::kFloat32, sum),
      Call(Api::kAlltoAll, t++, 60),
      Call(Api::kGather, t++, 50, 0),
      Call(Api::kScatter, t++, 50, 1),
  };
  for (int r = 0; r < ranks; ++r) {
    s.processes[r].calls = calls;
    ScriptCall send = Call(Api::kSend, t, 128, (r + 1) % ranks);
    ScriptCall recv = Call(Api::kRecv, t + 1, 128, (r + ranks - 1) % ranks);
    send.group = recv.group = 1;
    s.processes[r].calls.push_back(send);
    s.processes[r].calls.push_back(recv);
  }
  return s;
}

// Removes every directory FreshDir made when the test program ends.
class TempDirs : public ::testing::Environment {
 public:
  static TempDirs& Get() {
    static TempDirs* dirs = [] {
      auto* d = new TempDirs;
      ::testing::AddGlobalTestEnvironment(d);  // gtest owns it
      return d;
    }();
    return *dirs;
  }
  void Add(const std::string& dir) { dirs_.push_back(dir); }
  void TearDown() override {
    for (const std::string& d : dirs_) std::filesystem::remove_all(d);
  }

 private:
  std::vector<std::string> dirs_;
};

std::string FreshDir(const std::string& name) {
  const std::string dir =
      ::testing::TempDir() + "ncclrr-replay-" + name + "-" + std::to_string(getpid());
  std::filesystem::remove_all(dir);
  std::filesystem::create_directories(dir);
  TempDirs::Get().Add(dir);
  return dir;
}

std::string WriteTrace(SyntheticScript script, const std::string& name) {
  script.dir = FreshDir(name);
  auto written = WriteSyntheticScript(script);
  EXPECT_TRUE(written.ok()) << written.status().message();
  return script.dir;
}

std::unique_ptr<analysis::TraceModel> WriteAndLoad(SyntheticScript script,
                                                   const std::string& name) {
  const std::string dir = WriteTrace(std::move(script), name);
  auto model = analysis::TraceModel::Load(dir);
  EXPECT_TRUE(model.ok()) << model.status().message();
  std::filesystem::remove_all(dir);  // the model holds everything the replay reads
  if (!model.ok()) return nullptr;
  return std::make_unique<analysis::TraceModel>(std::move(*model));
}

replay::ReplayOptions TestOptions(const std::string& orders, double timeout_s) {
  replay::ReplayOptions o;
  auto parsed = replay::ParseOrderSpecs(orders);
  EXPECT_TRUE(parsed.ok()) << parsed.status().message();
  if (parsed.ok()) o.orders = *parsed;
  o.timeout_s = timeout_s;
  if (const char* lib = std::getenv("NCCLRR_TEST_LIB"))
    o.host_library = std::string(lib) + "/libncclrr-hostnccl.so";
  return o;
}

replay::ReplayReport MustReplay(const analysis::TraceModel& model,
                                const replay::ReplayOptions& options) {
  auto report = replay::Replay(model, options);
  EXPECT_TRUE(report.ok()) << report.status().message();
  return report.ok() ? std::move(*report) : replay::ReplayReport{};
}

}  // namespace ncclrr::testing
