#pragma once
// Scripted traces for the analysis tests: one builder per shape the golden tests cover. Each
// returns a SyntheticScript (see testing/include/ncclrr/testing/synthetic_trace.h) whose trace the
// tests write, check and compare with tests/analysis/golden/<name>.{txt,json}.
#include <functional>
#include <string>
#include <vector>

#include "ncclrr/testing/synthetic_trace.h"

namespace ncclrr::testing {

// Convenience on top of SyntheticScript.
struct ScriptBuilder {
  SyntheticScript s;

  explicit ScriptBuilder(int processes) { s.processes.resize(processes); }
  int Comm(uint64_t id, const std::string& name, std::vector<int> members) {
    ScriptComm c;
    c.id = id;
    c.name = name;
    c.members = std::move(members);
    s.comms.push_back(c);
    return static_cast<int>(s.comms.size()) - 1;
  }
  // Every member of `comm` issues `call` (tweak(process, call) may change it per process).
  void All(int comm, ScriptCall call,
           const std::function<void(int process, ScriptCall&)>& tweak = nullptr) {
    call.comm = comm;
    for (int p : s.comms[comm].members) {
      ScriptCall c = call;
      if (tweak) tweak(p, c);
      s.processes[p].calls.push_back(c);
    }
  }
  void On(int process, ScriptCall call) { s.processes[process].calls.push_back(call); }
};

ScriptCall AllReduce(uint64_t count, int tensor, Dtype dtype = Dtype::kFloat32);
ScriptCall Collective(Api api, uint64_t count, int tensor, int root = -1);

struct Scenario {
  std::string name;
  std::function<SyntheticScript()> build;
};

// Every golden scenario, in the order the test suite runs them.
const std::vector<Scenario>& GoldenScenarios();

}  // namespace ncclrr::testing
