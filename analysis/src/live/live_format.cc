// `ncclrr status` output: text for people (one block per communicator, the verdict last) and
// JSON for scripts and schedulers.
#include <cstdio>

#include "ncclrr/analysis/live_status.h"
#include "ncclrr/base/json_writer.h"
#include "report/text_util.h"

namespace ncclrr::analysis {
namespace {

std::string Hex(uint64_t v) {
  char b[24];
  std::snprintf(b, sizeof b, "0x%016llx", static_cast<unsigned long long>(v));
  return b;
}

std::string Secs(double s) {
  char b[32];
  std::snprintf(b, sizeof b, s < 1 && s > 0 ? "%.2f s" : "%.1f s", s < 0 ? 0.0 : s);
  return b;
}

std::string CommLabel(uint64_t id, const std::string& name) {
  return "comm " + Hex(id) + (name.empty() ? "" : " \"" + name + "\"");
}

std::string Where(const LiveCall& c) {
  return c.call + " on " + CommLabel(c.comm_id, c.comm_name) + " seq " + std::to_string(c.seq);
}

// What a rank the others wait for is doing instead.
std::string Elsewhere(const LiveMissing& m, uint64_t comm) {
  if (m.process.empty())
    return "rank " + std::to_string(m.rank) +
           " has no trace file here (not recorded, or on another host whose files are elsewhere)";
  std::string s = "rank " + std::to_string(m.rank) + " (" + m.process + ")";
  if (m.deadlock)
    return s + " waits itself in comm " + Hex(m.deadlock_comm) + " seq " +
           std::to_string(m.deadlock_seq) +
           " for a rank that waits here: the two communicators are used in opposite orders, a "
           "deadlock (`ncclrr check` shows where the orders differ)";
  if (m.lag_s > 0)
    return s + " issues its collectives " + Secs(m.lag_s) +
           " after the first rank (median): the others wait for it; look at what it does "
           "between collectives (data loading, compute, host work, a slower GPU)";
  if (!m.has_elsewhere) return s + " has made no NCCL call";
  if (m.gpu_not_started)
    return s + " issued " + Where(m.last_anywhere) + " " + Secs(m.last_anywhere.ago_s) +
           " ago, but its GPU has not started it: the stream it was issued on still runs earlier "
           "work (a kernel that does not end, a wait for an event never recorded, a copy that "
           "waits); look at what that rank launched on the stream before the collective";
  const LiveCall& c = m.last_anywhere;
  if (c.in_flight && c.comm_id != comm)
    return s + " is blocked in " + Where(c) + " for " + Secs(c.ago_s) +
           ": it waits there while the others wait here (communicators used in opposite "
           "orders; `ncclrr check` explains it)";
  if (c.in_flight) return s + " is blocked in " + Where(c) + " for " + Secs(c.ago_s);
  return s + "'s last NCCL call, " + Where(c) + ", returned; issued " + Secs(c.ago_s) +
         " ago: it runs outside NCCL (a rank-dependent branch or early exit, an exception, a "
         "slow data loader, a sleep) or is killed";
}

// Where the rank's GPU is on this communicator: "; GPU: done", "; GPU: running 12.0 s",
// "; GPU: seq 31 not started" (the seq when it is not the last one issued).
std::string GpuText(const LiveRank& r) {
  if (!r.gpu_progress || !r.has_call) return "";
  if (!r.has_gpu_front) return "; GPU: done";
  const LiveCall& g = r.gpu_front;
  if (g.gpu == LiveGpu::kUnknown) return "";
  const std::string at = g.seq == r.last.seq ? "" : "seq " + std::to_string(g.seq) + " ";
  if (g.gpu == LiveGpu::kRunning) return "; GPU: " + at + "running " + Secs(g.gpu_s);
  return "; GPU: " + at + LiveGpuName(g.gpu);
}

void CommText(const LiveComm& c, std::string* out) {
  *out += CommLabel(c.id, c.name) + " (" + std::to_string(c.nranks) +
          " ranks): " + LiveStateName(c.state) + " — " + c.why + "\n";
  for (const LiveRank& r : c.ranks) {
    *out += "  rank " + std::to_string(r.rank) + " (" + r.process + "): ";
    if (!r.has_call)
      *out += r.p2p_calls > 0 || r.p2p_blocked
                  ? "no collective yet, " + std::to_string(r.p2p_calls) + " Send/Recv returned"
                  : std::string("no collective yet");
    else
      *out += "issued seq " + std::to_string(r.last.seq) + " " + r.last.call + " " +
              Secs(r.last.ago_s) + " ago";
    *out += GpuText(r);
    if (r.blocked)
      *out += "; blocked in seq " + std::to_string(r.blocked_in.seq) + " for " +
              Secs(r.blocked_in.ago_s);
    if (r.p2p_blocked)
      *out +=
          r.p2p_unmatched
              ? "; no NCCL call since " + r.p2p_blocked_in.call + ", unmatched by its peer, " +
                    Secs(r.p2p_blocked_in.ago_s) + " ago"
              : "; blocked in " + r.p2p_blocked_in.call + " for " + Secs(r.p2p_blocked_in.ago_s);
    if (r.behind) *out += "   <-- never issued seq " + std::to_string(c.wait_seq);
    *out += "\n";
  }
  if (c.state == LiveState::kHung || c.state == LiveState::kStraggler)
    for (const LiveMissing& m : c.missing) *out += "  " + Elsewhere(m, c.id) + "\n";
}

void CallJson(JsonWriter& j, const LiveCall& c) {
  j.BeginObject();
  j.Key("comm").Str(Hex(c.comm_id));
  j.Key("comm_name").Str(c.comm_name);
  j.Key("seq").Uint(c.seq);
  j.Key("call").Str(c.call);
  j.Key("ago_s").Double(c.ago_s);
  j.Key("in_flight").Bool(c.in_flight);
  j.Key("gpu");
  if (c.gpu == LiveGpu::kUnknown)
    j.Null();
  else
    j.Str(LiveGpuName(c.gpu));
  j.Key("gpu_s").Double(c.gpu_s);
  j.EndObject();
}

}  // namespace

const char* LiveStateName(LiveState s) {
  static const char* const kNames[] = {"running", "straggler", "hung", "finished"};
  return kNames[static_cast<int>(s)];
}

const char* LiveGpuName(LiveGpu g) {
  static const char* const kNames[] = {"unknown", "not started", "running", "done"};
  return kNames[static_cast<int>(g)];
}

const char* LiveVerdictName(LiveVerdict v) {
  static const char* const kNames[] = {"no data", "running", "straggler", "hung", "finished"};
  return kNames[static_cast<int>(v)];
}

std::string FormatLiveText(const LiveReport& r) {
  std::string out = "ncclrr status " + r.dir + ": " + std::to_string(r.files) +
                    " process file(s) (" + std::to_string(r.open_files) + " open), " +
                    std::to_string(r.comms.size()) + " communicator(s), " +
                    std::to_string(r.calls) + " calls returned\n";
  for (const LiveComm& c : r.comms) CommText(c, &out);
  for (const std::string& n : r.notes) out += "note: " + n + "\n";
  out += std::string("verdict: ") + LiveVerdictName(r.verdict);
  for (const LiveComm& c : r.comms)
    if (c.state == LiveState::kHung || c.state == LiveState::kStraggler) {
      out += "; " + CommLabel(c.id, c.name) + " " + LiveStateName(c.state) + " at seq " +
             std::to_string(c.wait_seq);
      if (!c.missing.empty()) {
        out += ", waiting for rank(s)";
        for (size_t i = 0; i < c.missing.size(); ++i)
          out += (i ? ", " : " ") + std::to_string(c.missing[i].rank);
      }
    }
  if (r.verdict == LiveVerdict::kNoData)
    out += " (no trace file with an NCCL call yet: is the job recorded with `ncclrr record -o " +
           r.dir + "`?)";
  return out + "\n";
}

std::string FormatLiveJson(const LiveReport& r) {
  std::string out;
  JsonWriter j(&out);
  j.BeginObject();
  j.Key("dir").Str(r.dir);
  j.Key("verdict").Str(LiveVerdictName(r.verdict));
  j.Key("files").Int(r.files);
  j.Key("open_files").Int(r.open_files);
  j.Key("ring_files").Int(r.ring_files);
  j.Key("calls").Uint(r.calls);
  j.Key("comms").BeginArray();
  for (const LiveComm& c : r.comms) {
    j.BeginObject();
    j.Key("comm").Str(Hex(c.id));
    j.Key("name").Str(c.name);
    j.Key("nranks").Int(c.nranks);
    j.Key("state").Str(LiveStateName(c.state));
    j.Key("why").Str(c.why);
    j.Key("wait_seq").Uint(c.wait_seq);
    j.Key("wait_call").Str(c.wait_call);
    j.Key("wait_s").Double(c.wait_s);
    j.Key("waiting").BeginArray();
    for (int w : c.waiting) j.Int(w);
    j.EndArray();
    j.Key("unseen_ranks").Int(c.unseen_ranks);
    j.Key("ranks").BeginArray();
    for (const LiveRank& k : c.ranks) {
      j.BeginObject();
      j.Key("rank").Int(k.rank);
      j.Key("process").Str(k.process);
      j.Key("last");
      if (k.has_call)
        CallJson(j, k.last);
      else
        j.Null();
      j.Key("blocked_in");
      if (k.blocked)
        CallJson(j, k.blocked_in);
      else
        j.Null();
      j.Key("p2p_calls").Uint(k.p2p_calls);
      j.Key("p2p_blocked_in");
      if (k.p2p_blocked)
        CallJson(j, k.p2p_blocked_in);
      else
        j.Null();
      j.Key("p2p_unmatched").Bool(k.p2p_unmatched);
      j.Key("behind").Bool(k.behind);
      j.Key("gpu_front");
      if (k.has_gpu_front)
        CallJson(j, k.gpu_front);
      else
        j.Null();
      j.EndObject();
    }
    j.EndArray();
    j.Key("missing").BeginArray();
    for (const LiveMissing& m : c.missing) {
      j.BeginObject();
      j.Key("rank").Int(m.rank);
      j.Key("process").Str(m.process);
      j.Key("calls_behind").Uint(m.calls_behind);
      j.Key("last_anywhere");
      if (m.has_elsewhere)
        CallJson(j, m.last_anywhere);
      else
        j.Null();
      j.Key("lag_s").Double(m.lag_s);
      j.Key("gpu_not_started").Bool(m.gpu_not_started);
      j.Key("deadlock_comm");
      if (m.deadlock)
        j.Str(Hex(m.deadlock_comm));
      else
        j.Null();
      j.Key("explanation").Str(Elsewhere(m, c.id));
      j.EndObject();
    }
    j.EndArray();
    j.EndObject();
  }
  j.EndArray();
  j.Key("notes").BeginArray();
  for (const std::string& n : r.notes) j.Str(n);
  j.EndArray();
  j.Key("exit_code").Int(r.ExitCode());
  j.EndObject();
  return out + "\n";
}

}  // namespace ncclrr::analysis
