#include "process_group.h"

#include <algorithm>
#include <cstring>

#include "stuck.h"

namespace ncclrr::replay {
namespace {

// What one process sends the root: its actor's call outcomes and report, its hang flag, error and
// times. Plain bytes: every process runs this same binary.
class Blob {
 public:
  explicit Blob(std::string s = {}) : s_(std::move(s)) {}
  template <typename T>
  void Put(const T& v) {
    s_.append(reinterpret_cast<const char*>(&v), sizeof v);
  }
  void PutString(const std::string& v) {
    Put<uint64_t>(v.size());
    s_ += v;
  }
  template <typename T>
  T Get() {
    T v{};
    if (pos_ + sizeof v <= s_.size()) std::memcpy(&v, s_.data() + pos_, sizeof v);
    pos_ += sizeof v;
    return v;
  }
  std::string GetString() {
    const uint64_t n = Get<uint64_t>();
    std::string v = n <= s_.size() && pos_ <= s_.size() - n ? s_.substr(pos_, n) : std::string();
    pos_ += n;
    return v;
  }
  const std::string& str() const { return s_; }

 private:
  std::string s_;
  size_t pos_ = 0;
};

std::string Pack(const ReplayPlan& plan, uint32_t actor, const ExecResult& r) {
  Blob b;
  b.Put<uint32_t>(actor);
  b.Put<uint8_t>(r.hang);
  b.PutString(r.error);
  b.Put<double>(r.seconds);
  b.Put<double>(r.setup_seconds);
  // An execution that failed before it started (its error says why) reports no actor.
  static const ActorReport kNone;
  const ActorReport& a = actor < r.actors.size() ? r.actors[actor] : kNone;
  b.Put<uint64_t>(a.issued_units);
  b.Put<uint8_t>(a.waiting_for_memory);
  b.Put<uint64_t>(a.in_flight_heads.size());
  for (uint32_t u : a.in_flight_heads) b.Put<uint32_t>(u);
  for (uint32_t i = 0; i < plan.calls.size() && i < r.calls.size(); ++i) {
    if (plan.calls[i].actor != actor) continue;
    const CallOutcome& o = r.calls[i];
    b.Put<uint32_t>(i);
    b.Put<uint8_t>(static_cast<uint8_t>(o.issued | o.completed << 1 | o.failed << 2));
    b.Put<CallCheck>(o.check);
  }
  return b.str();
}

void Unpack(const ReplayPlan& plan, const std::string& s, ExecResult* merged) {
  Blob b(s);
  const uint32_t actor = b.Get<uint32_t>();
  if (actor >= plan.actors.size()) return;
  merged->hang |= b.Get<uint8_t>() != 0;
  const std::string error = b.GetString();
  if (merged->error.empty()) merged->error = error;
  merged->seconds = std::max(merged->seconds, b.Get<double>());
  merged->setup_seconds = std::max(merged->setup_seconds, b.Get<double>());
  ActorReport& a = merged->actors[actor];
  a.issued_units = b.Get<uint64_t>();
  a.waiting_for_memory = b.Get<uint8_t>() != 0;
  const uint64_t heads = b.Get<uint64_t>();
  for (uint64_t k = 0; k < heads && k < plan.units.size(); ++k)
    a.in_flight_heads.push_back(b.Get<uint32_t>());
  for (uint32_t i = 0; i < plan.calls.size(); ++i) {
    if (plan.calls[i].actor != actor) continue;
    const uint32_t idx = b.Get<uint32_t>();
    const uint8_t flags = b.Get<uint8_t>();
    const CallCheck check = b.Get<CallCheck>();
    if (idx >= plan.calls.size()) return;
    CallOutcome& o = merged->calls[idx];
    o.issued = flags & 1;
    o.completed = flags & 2;
    o.failed = flags & 4;
    o.check = check;
  }
}

// Sent before each ordering: the root's plan size (every process must have built the same plan)
// and whether it could make the ids, then the ids.
struct Start {
  uint64_t calls = 0;
  uint64_t units = 0;
  uint8_t ids_made = 0;
};

}  // namespace

ExecResult ExecuteInGroup(ProcessGroup& group, const ReplayPlan& plan, Backend& backend,
                          const DataSource& data, const IssueOrder& order, ExecOptions options) {
  ExecResult local;
  local.calls.resize(plan.calls.size());
  local.actors.resize(plan.actors.size());
  options.ids.assign(plan.comms.size(), ncclUniqueId{});
  Start start{plan.calls.size(), plan.units.size(), 1};
  if (group.root())
    for (size_t ci = 0; ci < plan.comms.size() && start.ids_made; ++ci)
      if (plan.comms[ci].used)
        if (const ncclResult_t r = backend.nccl().GetUniqueId(&options.ids[ci]); r != ncclSuccess) {
          local.error = "ncclGetUniqueId: " + backend.nccl().ErrorText(r, nullptr);
          start.ids_made = 0;
        }
  Status sent = group.Broadcast(&start, sizeof start);
  if (sent.ok())
    sent = group.Broadcast(options.ids.data(), options.ids.size() * sizeof(ncclUniqueId));
  if (!sent.ok()) local.error = sent.message();
  if (local.error.empty() && !start.ids_made) local.error = "the root process could not make ids";
  if (local.error.empty() && (start.calls != plan.calls.size() || start.units != plan.units.size()))
    local.error = "this process built a different plan from the trace than the root (" +
                  std::to_string(plan.calls.size()) + " calls, the root " +
                  std::to_string(start.calls) + "): did the trace change on disk?";
  const int actor = group.actor();
  if (actor >= 0 && local.error.empty()) {
    options.run_actors = {static_cast<uint32_t>(actor)};
    options.device_slot = group.device_slot();
    // The other processes' watchdogs fire a moment later: waiting after the snapshot lets them
    // record their heads before this abort moves them.
    options.abort_grace_s = std::min(1.0, options.timeout_s / 2);
    local = Execute(plan, backend, data, order, options);
  }
  const std::string blob = actor >= 0 ? Pack(plan, static_cast<uint32_t>(actor), local) : "";
  std::vector<std::string> all;
  const Status gathered = group.GatherToRoot(blob, &all);
  if (!group.root()) {
    if (!gathered.ok() && local.error.empty()) local.error = gathered.message();
    return local;
  }
  ExecResult merged;
  merged.calls.resize(plan.calls.size());
  merged.actors.resize(plan.actors.size());
  merged.error = local.error;
  for (const std::string& s : all)
    if (!s.empty()) Unpack(plan, s, &merged);
  const std::vector<uint64_t> positions = ReplayPositions(plan, order);
  for (size_t i = 0; i < merged.calls.size(); ++i) merged.calls[i].position = positions[i];
  // A peer's abort fails the others' calls: with a hang that is the hang, not an error. A process
  // that died is an error whatever the others saw.
  if (merged.hang) merged.error.clear();
  if (!gathered.ok()) merged.error = gathered.message();
  if (merged.hang || !merged.error.empty())
    merged.stuck = ExplainStuck(plan, order, positions, merged.actors);
  return merged;
}

}  // namespace ncclrr::replay
