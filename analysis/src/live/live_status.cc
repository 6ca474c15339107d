#include "ncclrr/analysis/live_status.h"

#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstddef>
#include <cstring>
#include <filesystem>

#include "live/live_state.h"
#include "ncclrr/trace/format.h"

namespace ncclrr::analysis {
namespace {

constexpr size_t kRecentCalls = 64;             // per communicator rank
constexpr size_t kReturnedRemembered = 4096;    // per process
constexpr size_t kGpuRemembered = 4096;         // per process
constexpr size_t kStreamCallsRemembered = 256;  // per stream
// A call's GPU state is known this long after it was issued: the timer collects every 200 ms
// and marks a call running on its second look; the file is flushed every 20 ms.
constexpr double kGpuSettleS = 1.0;

bool Tracked(const CallRecord& c) {
  return IsCollective(static_cast<Api>(c.api)) && c.seq != kNoSeq && c.capture != 1 &&
         c.comm_id != 0;
}

void Remember(LiveFile& f, uint64_t uid) {
  if (!f.returned.insert(uid).second) return;
  f.returned_order.push_back(uid);
  if (f.returned_order.size() > kReturnedRemembered) {
    f.returned.erase(f.returned_order.front());
    f.returned_order.pop_front();
  }
}

// `remember`: whether a returned call must be remembered (see Apply).
void ApplyCall(LiveFile& f, const CallRecord& c, bool remember) {
  const bool in_flight = (c.flags & call_flags::kInFlight) != 0;
  if (in_flight && f.returned.count(c.uid)) return;  // written late: it has returned already
  if (!in_flight) {
    if (remember) Remember(f, c.uid);
    f.open_calls.erase(c.uid);
    ++f.calls;
  } else {
    f.open_calls[c.uid] = c;
  }
  if (IsCollective(static_cast<Api>(c.api)) || IsP2p(static_cast<Api>(c.api))) {  // stream 0 too
    auto& on_stream = f.stream_calls[c.stream];
    if (on_stream.empty() || c.uid > on_stream.back().uid) {
      on_stream.push_back({c.uid, c.enter_ns});
      if (on_stream.size() > kStreamCallsRemembered) on_stream.pop_front();
    }
  }
  if (!f.has_last || c.enter_ns >= f.last.enter_ns) {
    f.has_last = true;
    f.last = c;
  } else if (f.last.uid == c.uid) {
    f.last = c;  // the same call, now returned
  }
  if (IsP2p(static_cast<Api>(c.api)) && c.comm_id != 0 && c.capture != 1 && c.rank >= 0) {
    LiveCommRank& pr = f.comm_ranks[{c.comm_id, c.rank}];
    pr.comm_id = c.comm_id;
    pr.rank = c.rank;
    const bool send = static_cast<Api>(c.api) == Api::kSend;
    if (in_flight) {
      pr.p2p_in_flight[c.uid] = c;
    } else {
      pr.p2p_in_flight.erase(c.uid);
      ++pr.p2p_calls;
      auto it = pr.p2p_returned.find({c.root_peer, send});
      if (it != pr.p2p_returned.end())
        ++it->second;
      else if (pr.p2p_returned.size() < LiveCommRank::kP2pPeersCounted)
        pr.p2p_returned[{c.root_peer, send}] = 1;
      else
        pr.p2p_uncounted = true;
    }
    if (!pr.has_last_p2p || c.enter_ns >= pr.last_p2p.enter_ns) {
      pr.has_last_p2p = true;
      pr.last_p2p = c;
    }
    return;
  }
  if (!Tracked(c)) return;
  LiveCommRank& cr = f.comm_ranks[{c.comm_id, c.rank}];
  cr.comm_id = c.comm_id;
  cr.rank = c.rank;
  if (in_flight)
    cr.in_flight[c.uid] = c;
  else
    cr.in_flight.erase(c.uid);
  if (!cr.recent.empty() && c.seq <= cr.recent.back().seq) {
    if (c.seq == cr.recent.back().seq) cr.recent.back() = c;
    return;
  }
  cr.recent.push_back(c);
  if (cr.recent.size() > kRecentCalls) cr.recent.pop_front();
}

void Apply(LiveFile& f, const TraceFile& d) {
  if (d.header.pid != 0 && f.real_minus_mono == 0)
    f.real_minus_mono = d.header.start_real_ns - d.header.start_mono_ns;
  for (const auto& [id, text] : d.strings) f.strings[id] = text;
  for (const ClockPairRecord& c : d.clocks) f.real_minus_mono = c.real_ns - c.mono_ns;
  for (const CommRecord& c : d.comms) {
    f.comm_name_ids[c.comm_id] = c.name_id;
    LiveCommRank& cr = f.comm_ranks[{c.comm_id, c.rank}];
    cr.comm_id = c.comm_id;
    cr.rank = c.rank;
    cr.nranks = c.nranks;
  }
  // Returned calls are remembered to tell a late in-flight record of one; a file that closes in
  // this delta can have none after it, so only one in the delta itself makes it worth it.
  bool remember = !d.footer;
  if (!remember)
    d.calls.ForEachRow(
        [&](size_t, const CallRecord& c) { remember |= (c.flags & call_flags::kInFlight) != 0; },
        CallTable::WordsOf(offsetof(CallRecord, flags)));
  d.calls.ForEachRow([&](size_t, const CallRecord& c) { ApplyCall(f, c, remember); });
  for (const NoteData& n : d.notes) f.gpu_progress |= n.text == format::kGpuProgressNote;
  auto seen = [&f](const GpuTimeRecord& g, bool ended) {
    auto [it, fresh] = f.gpu.try_emplace(g.call_uid);
    it->second.start_ns = g.start_ns;
    it->second.ended |= ended;
    if (!fresh) return;
    f.gpu_order.push_back(g.call_uid);
    if (f.gpu_order.size() > kGpuRemembered) {
      f.gpu.erase(f.gpu_order.front());
      f.gpu_order.pop_front();
    }
  };
  for (const GpuTimeRecord& g : d.gpu_started) seen(g, false);
  for (const GpuTimeRecord& g : d.gpu_times)
    if (g.end_ns != 0) seen(g, true);  // end 0: a running kernel a forced CUPTI flush took
  if (d.footer) {
    f.closed = true;
    f.open_calls.clear();
    // No call comes after the footer: what told late in-flight records from returned calls
    // goes (~150 KB a process: gigabytes over the files of a job of thousands of ranks).
    std::unordered_set<uint64_t>().swap(f.returned);
    std::deque<uint64_t>().swap(f.returned_order);
    for (auto& [key, cr] : f.comm_ranks) {
      cr.in_flight.clear();
      cr.p2p_in_flight.clear();
    }
  }
}

StatusOr<std::vector<std::string>> ListTraceFiles(const std::string& dir) {
  namespace fs = std::filesystem;
  std::error_code ec;
  if (fs::is_regular_file(dir, ec)) return std::vector<std::string>{dir};
  if (!fs::is_directory(dir, ec))
    return NotFound("'" + dir +
                    "' does not exist; expected the trace directory a running `ncclrr record -o "
                    "DIR` writes");
  std::vector<std::string> files;
  for (const auto& e : fs::directory_iterator(dir, ec))
    if (e.path().extension() == format::kFileSuffix) files.push_back(e.path().string());
  return files;
}

}  // namespace

LiveGpu GpuStateOf(const LiveFile& f, const CallRecord& c, int64_t now, double* gpu_s) {
  if (!f.gpu_progress || c.capture == 1 || (c.flags & call_flags::kNonblocking) != 0)
    return LiveGpu::kUnknown;  // not timed: captured calls run at graph launches
  if (auto it = f.gpu.find(c.uid); it != f.gpu.end()) {
    if (it->second.ended) return LiveGpu::kDone;
    *gpu_s = f.Ago(it->second.start_ns, now);
    return LiveGpu::kRunning;
  }
  // A stream runs its work in order: when the GPU reached a later call on it, this one ended. A
  // call the GPU reached is marked within two collection rounds unless a later call was reached
  // meanwhile; so when neither it nor any later call on its stream has a mark, and the latest
  // was issued long enough ago for the timer to have looked, the GPU has not reached it.
  auto stream = f.stream_calls.find(c.stream);
  if (stream == f.stream_calls.end() || stream->second.empty() ||
      stream->second.front().uid > c.uid)
    return LiveGpu::kUnknown;
  for (const LiveFile::StreamCall& later : stream->second)
    if (later.uid > c.uid && f.gpu.count(later.uid)) return LiveGpu::kDone;
  return f.Ago(stream->second.back().enter_ns, now) >= kGpuSettleS ? LiveGpu::kNotStarted
                                                                   : LiveGpu::kUnknown;
}

std::string LiveFile::Process() const {
  const HeaderData& h = follower.header();
  if (!follower.has_header()) return follower.path();
  return h.host + " pid " + std::to_string(h.pid);
}

std::string LiveFile::CommName(uint64_t comm_id) const {
  auto it = comm_name_ids.find(comm_id);
  if (it == comm_name_ids.end()) return "";
  auto s = strings.find(it->second);
  return s == strings.end() ? "" : s->second;
}

LiveStatus::LiveStatus(std::string dir, LiveStatusOptions options)
    : dir_(std::move(dir)), options_(options), state_(std::make_unique<State>()) {}

LiveStatus::~LiveStatus() = default;

StatusOr<LiveReport> LiveStatus::Refresh(int64_t now_real_ns) {
  auto paths = ListTraceFiles(dir_);
  if (!paths.ok()) return paths.status();
  for (const std::string& p : *paths) state_->files.try_emplace(p, p);
  LiveReport report;
  report.dir = dir_;
  TraceFile delta;
  for (auto& [path, f] : state_->files) {
    if (!f.error.empty()) continue;  // not a trace: said once, not read again
    if (Status s = f.follower.Poll(&delta); !s.ok()) {
      f.error = s.message();
      continue;
    }
    Apply(f, delta);
  }
  for (const auto& [path, f] : state_->files) {
    if (!f.error.empty()) {
      report.notes.push_back(f.error);
      continue;
    }
    if (!f.follower.has_header()) continue;  // created, header not written yet
    ++report.files;
    report.open_files += !f.closed;
    report.calls += f.calls;
    if (f.follower.header().ring_mode && !f.closed) ++report.ring_files;
  }
  if (report.ring_files > 0)
    report.notes.push_back(std::to_string(report.ring_files) +
                           " process(es) record in flight-recorder mode (--ring): their calls "
                           "appear only when they dump; `ncclrr status DIR --dump` asks every "
                           "one to dump now");
  JudgeComms(state_->files, options_, now_real_ns, &report);
  return report;
}

int LiveReport::ExitCode() const {
  switch (verdict) {
    case LiveVerdict::kHung:
      return 1;
    case LiveVerdict::kNoData:
      return 2;
    default:
      return 0;
  }
}

StatusOr<std::string> RequestDump(const std::string& dir, const std::string& who) {
  namespace fs = std::filesystem;
  std::error_code ec;
  if (!fs::is_directory(dir, ec))
    return NotFound("'" + dir +
                    "' is not a directory; expected the trace directory of a running "
                    "`ncclrr record --ring N -o DIR`");
  const auto now = std::chrono::system_clock::now().time_since_epoch();
  const std::string id =
      std::to_string(std::chrono::duration_cast<std::chrono::nanoseconds>(now).count()) + "-" +
      std::to_string(getpid());
  const std::string text = id + " " + who + "\n";
  // Written beside, then renamed over the request: a reader never sees half a request, and a
  // link planted under the request's name is replaced, not followed.
  const std::string final_path = (fs::path(dir) / kDumpRequestFile).string();
  const std::string tmp = final_path + "." + std::to_string(getpid()) + ".tmp";
  const int fd = open(tmp.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0644);
  if (fd < 0) return IoError("cannot write '" + tmp + "': " + std::strerror(errno));
  const bool ok = write(fd, text.data(), text.size()) == static_cast<ssize_t>(text.size());
  close(fd);
  if (!ok || rename(tmp.c_str(), final_path.c_str()) != 0) {
    unlink(tmp.c_str());
    return IoError("cannot write '" + final_path + "': " + std::strerror(errno));
  }
  return id;
}

}  // namespace ncclrr::analysis
