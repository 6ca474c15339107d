#include "checks/job_runs.h"

#include <algorithm>
#include <map>
#include <numeric>
#include <string>

namespace ncclrr::analysis {
namespace {

struct Run {
  int64_t start = INT64_MAX, end = INT64_MIN;
  std::vector<std::string> hosts;  // one per process, sorted
};

size_t Root(std::vector<size_t>& parent, size_t x) {
  while (parent[x] != x) x = parent[x] = parent[parent[x]];
  return x;
}

}  // namespace

void NoteEarlierRuns(const TraceModel& m, std::vector<Finding>* findings) {
  const std::vector<FileView>& files = m.files();
  if (files.size() < 2 || findings->empty()) return;
  // Processes joined by the communicators their CommRecords announce (what a check in passes,
  // whose model holds no calls, knows alike). A process that announced none, or made no call
  // (killed in its first init), is in no run.
  std::vector<size_t> parent(files.size());
  std::iota(parent.begin(), parent.end(), size_t{0});
  std::map<uint64_t, size_t> first_file_of_comm;  // comm id -> file
  std::vector<bool> placed(files.size(), false);
  for (size_t f = 0; f < files.size(); ++f) {
    if (files[f].first_alive_ns == 0) continue;
    for (const CommRecord& c : m.file(static_cast<uint32_t>(f)).comms) {
      placed[f] = true;
      auto [it, added] = first_file_of_comm.try_emplace(c.comm_id, f);
      if (!added) parent[Root(parent, f)] = Root(parent, it->second);
    }
  }
  std::map<size_t, Run> by_root;
  for (size_t f = 0; f < files.size(); ++f) {
    if (!placed[f]) continue;
    Run& r = by_root[Root(parent, f)];
    r.start = std::min(r.start, files[f].first_alive_ns);
    r.end = std::max(r.end, files[f].last_alive_ns);
    r.hosts.push_back(files[f].host);
  }
  if (by_root.size() < 2) return;
  std::vector<std::pair<size_t, Run>> runs(by_root.begin(), by_root.end());
  std::sort(runs.begin(), runs.end(),
            [](const auto& a, const auto& b) { return a.second.start < b.second.start; });
  for (auto& [root, r] : runs) std::sort(r.hosts.begin(), r.hosts.end());
  // A launcher takes seconds to start a run again; a second apart keeps the hosts' clock
  // corrections (refined from matched calls, or not, in a check in passes) from deciding.
  constexpr int64_t kGapNs = 1'000'000'000;
  for (size_t k = 1; k < runs.size(); ++k)
    if (runs[k].second.start <= runs[k - 1].second.end + kGapNs ||
        runs[k].second.hosts != runs[0].second.hosts)
      return;
  std::map<size_t, size_t> run_of_root;
  for (size_t k = 0; k < runs.size(); ++k) run_of_root[runs[k].first] = k;
  const std::string n = std::to_string(runs.size());
  for (Finding& f : *findings) {
    auto it = first_file_of_comm.find(f.comm);
    if (f.comm == 0 || it == first_file_of_comm.end()) continue;
    const size_t run = run_of_root[Root(parent, it->second)];
    if (run + 1 == runs.size()) continue;
    const std::string k = std::to_string(run + 1);
    f.message += " This communicator belongs to run " + k + " of the " + n +
                 " runs of the job in this trace: every process of run " + k +
                 " had stopped before run " + std::to_string(run + 2) +
                 "'s processes (as many, on the same hosts) made their first call, as when a "
                 "launcher restarts a failed job (torchrun --max-restarts, an elastic agent). "
                 "So this is how run " +
                 k + " ended; the later runs' communicators are checked on their own.";
  }
}

}  // namespace ncclrr::analysis
