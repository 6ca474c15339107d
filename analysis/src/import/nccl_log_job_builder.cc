#include "import/nccl_log_job_builder.h"

#include <algorithm>
#include <cstdio>
#include <set>

namespace ncclrr::nccl_log {
namespace {

// Times are log order: 1 us per line, each source after the previous one.
constexpr int64_t kLineNs = 1000;
constexpr int64_t kSourceNs = int64_t(1) << 50;

}  // namespace

void JobBuilder::BeginSource(std::string source) {
  sources_.push_back(std::move(source));
  line_no_.push_back(0);
  out_of_range_.push_back(0);
  source_has_prefix_.push_back(false);
}

size_t JobBuilder::ProcessOf(const std::string& host, int64_t pid) {
  auto [it, added] = process_index_.try_emplace({host, pid}, job_.processes.size());
  if (added) {
    Process p;
    p.host = host;
    p.pid = pid;
    p.source = sources_.back();
    job_.processes.push_back(std::move(p));
  }
  return it->second;
}

size_t JobBuilder::LocalOf(size_t process, uint64_t handle, int64_t time_ns) {
  auto [it, added] = job_.processes[process].locals.try_emplace(handle, job_.locals.size());
  if (added) {
    LocalComm l;
    l.process = process;
    l.handle = handle;
    l.first_ns = time_ns;
    job_.locals.push_back(std::move(l));
  }
  return it->second;
}

void JobBuilder::AddCall(size_t process, const CollFields& coll, int64_t time_ns, uint32_t tid,
                         int dev) {
  const size_t local = LocalOf(process, coll.comm, time_ns);
  LoggedCall c;
  c.fields = coll;
  c.local = local;
  c.time_ns = time_ns;
  c.tid = tid;
  c.prefix_dev = dev;
  job_.locals[local].calls.push_back(job_.calls.size());
  job_.locals[local].first_ns = std::min(job_.locals[local].first_ns, time_ns);
  job_.calls.push_back(std::move(c));
}

void JobBuilder::AddLine(std::string_view line) {
  if (sources_.empty()) BeginSource("(text)");
  const size_t src = sources_.size() - 1;
  ++lines_;
  const int64_t time_ns = int64_t(src) * kSourceNs + (++line_no_[src]) * kLineNs;
  if (line.find("NCCL") == std::string_view::npos && line.find("opCount") == std::string_view::npos)
    return;  // cheap filter: most console lines are the application's
  ParsedLine p = ParseLine(line);
  if (p.out_of_range) ++out_of_range_[src];
  if (p.has_process) source_has_prefix_[src] = true;
  if (p.kind == LineKind::kColl && ApiFromName(p.coll.op) == Api::kUnknown) return;
  if (p.kind != LineKind::kColl && p.kind != LineKind::kInit) return;
  if (!p.has_process) {
    if (p.kind == LineKind::kColl) pending_.push_back({std::move(p.coll), src, time_ns});
    return;
  }
  const size_t proc = ProcessOf(p.host, p.pid);
  if (p.launcher_rank >= 0) job_.processes[proc].launcher_rank = p.launcher_rank;
  if (p.kind == LineKind::kInit) {
    LocalComm& l = job_.locals[LocalOf(proc, p.init.comm, time_ns)];
    if (!l.init) l.init = std::move(p.init);
    return;
  }
  AddCall(proc, p.coll, time_ns, p.tid, p.dev);
}

Job JobBuilder::Finish(NcclLogImportResult* result) {
  // Prefix-less COLL lines: the process whose handle they name, if exactly one; in a log with
  // no prefixes at all (stripped, or printed by a tool), the log itself stands for one process.
  std::map<uint64_t, std::set<size_t>> holders;
  for (size_t l = 0; l < job_.locals.size(); ++l)
    holders[job_.locals[l].handle].insert(job_.locals[l].process);
  for (const Pending& p : pending_) {
    auto it = holders.find(p.coll.comm);
    if (it != holders.end() && it->second.size() == 1) {
      AddCall(*it->second.begin(), p.coll, p.time_ns, 0, -1);
      ++result->attributed_calls;
    } else if (!source_has_prefix_[p.source]) {
      const size_t proc = ProcessOf("log" + std::to_string(p.source + 1), 0);
      job_.processes[proc].source = sources_[p.source];
      AddCall(proc, p.coll, p.time_ns, 0, -1);
    } else {
      ++result->skipped_calls;
    }
  }
  for (LocalComm& l : job_.locals)
    std::stable_sort(l.calls.begin(), l.calls.end(), [&](size_t a, size_t b) {
      return job_.calls[a].time_ns < job_.calls[b].time_ns;
    });
  InferCommunicators(&job_);
  result->lines += lines_;
  result->calls = job_.calls.size();
  result->comms = job_.comms.size();
  result->processes = job_.processes.size();
  bool any_init = false;
  for (const LocalComm& l : job_.locals) {
    any_init |= l.init.has_value();
    if (!l.init) result->unmatched_calls += l.calls.size();
  }
  for (const InferredComm& c : job_.comms) {
    char id[24];
    std::snprintf(id, sizeof id, "0x%016llx", static_cast<unsigned long long>(c.id));
    result->notes.push_back("communicator " + std::string(id) + " (" + std::to_string(c.nranks) +
                            " ranks): " + c.note);
  }
  if (!any_init && !job_.calls.empty())
    result->notes.push_back(
        "the logs hold no communicator-creation lines (NCCL_DEBUG_SUBSYS without INIT): "
        "communicators and ranks are inferred as said above, creation and destruction are not "
        "checked, and each log is taken to end where its process stopped calling NCCL");
  for (size_t s = 0; s < sources_.size(); ++s)
    if (out_of_range_[s] > 0)
      result->warnings.push_back(sources_[s] + ": " + std::to_string(out_of_range_[s]) +
                                 " NCCL INFO line(s) hold numbers out of range and were skipped");
  if (result->skipped_calls > 0)
    result->warnings.push_back(
        std::to_string(result->skipped_calls) +
        " COLL line(s) lost NCCL's host:pid:tid prefix (processes writing at once) and name a "
        "communicator no single process holds: they were skipped");
  if (result->attributed_calls > 0)
    result->notes.push_back(std::to_string(result->attributed_calls) +
                            " COLL line(s) without NCCL's prefix were given to the one process "
                            "whose communicator handle they name");
  return std::move(job_);
}

}  // namespace ncclrr::nccl_log
