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
  // Processes joined by the communicators they share.
  std::vector<size_t> parent(files.size());
  std::iota(parent.begin(), parent.end(), size_t{0});
  std::map<size_t, size_t> first_file_of_comm;
  for (size_t f = 0; f < files.size(); ++f)
    for (const auto& [ci, rank] : files[f].ranks) {
      auto [it, added] = first_file_of_comm.try_emplace(ci, f);
      if (!added) parent[Root(parent, f)] = Root(parent, it->second);
    }
  std::map<size_t, Run> by_root;
  for (size_t f = 0; f < files.size(); ++f) {
    if (files[f].first_alive_ns == 0) return;  // a process without calls: no run to place it in
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
  for (size_t k = 1; k < runs.size(); ++k)
    if (runs[k].second.start <= runs[k - 1].second.end ||
        runs[k].second.hosts != runs[0].second.hosts)
      return;
  std::map<size_t, size_t> run_of_root;
  for (size_t k = 0; k < runs.size(); ++k) run_of_root[runs[k].first] = k;
  std::map<uint64_t, size_t> run_of_comm;  // comm id -> run
  for (const auto& [ci, f] : first_file_of_comm)
    run_of_comm[m.comms()[ci].id] = run_of_root[Root(parent, f)];
  const std::string n = std::to_string(runs.size());
  for (Finding& f : *findings) {
    auto it = run_of_comm.find(f.comm);
    if (f.comm == 0 || it == run_of_comm.end() || it->second + 1 == runs.size()) continue;
    const std::string k = std::to_string(it->second + 1);
    f.message += " This communicator belongs to run " + k + " of the " + n +
                 " runs of the job in this trace: every process of run " + k +
                 " had stopped before run " + std::to_string(it->second + 2) +
                 "'s processes (as many, on the same hosts) made their first call, as when a "
                 "launcher restarts a failed job (torchrun --max-restarts, an elastic agent). "
                 "So this is how run " +
                 k + " ended; the later runs' communicators are checked on their own.";
  }
}

}  // namespace ncclrr::analysis
