#include "sketch_expect.h"

#include <algorithm>
#include <cstring>
#include <set>

#include "ncclrr/sketch/plan.h"
#include "ncclrr/sketch/sketch.h"
#include "scenarios.h"

namespace ncclrr::testing {
namespace {

std::string CallName(const CallRecord& c) {
  return std::string(ApiName(static_cast<Api>(c.api))) + " rank " + std::to_string(c.rank) +
         " seq " + std::to_string(c.seq) + " uid " + std::to_string(c.uid);
}

void ExpectCount(const CallSketches& s, SketchWhich w, size_t want, const CallRecord& c,
                 std::vector<std::string>* problems) {
  if (s.Count(w) != want)
    problems->push_back(CallName(c) + ": " + std::to_string(s.Count(w)) + " " + SketchWhichName(w) +
                        " sketches, want " + std::to_string(want));
}

void ExpectSame(const SketchData* got, const SketchData& want, const std::string& what,
                std::vector<std::string>* problems) {
  std::string why;
  if (got == nullptr)
    problems->push_back(what + ": missing");
  else if (!SameSketch(*got, want, &why))
    problems->push_back(what + ": " + why);
}

constexpr uint8_t kFloat = 7;          // ncclFloat32
constexpr float kRacyValue = 1000.0f;  // what ncclrr-example's racing write stores

sketch::SketchRequest OneBlock(size_t count, sketch::SketchMode mode) {
  sketch::SketchRequest r;
  r.layout.dtype = kFloat;
  r.layout.block_count = count;
  r.mode = mode;
  return r;
}

SketchData Race(const std::vector<float>& x, sketch::SketchMode mode) {
  auto r = sketch::SketchHost(x.data(), OneBlock(x.size(), mode));
  return r.ok() && r->race ? *r->race : SketchData{};
}

}  // namespace

std::map<uint64_t, CallSketches> SketchesByCall(const TraceFile& t) {
  std::map<uint64_t, CallSketches> out;
  for (const SketchData& s : t.sketches) out[s.call_uid].by_which[s.which].push_back(&s);
  return out;
}

bool SameSketch(const SketchData& a, const SketchData& b, std::string* why) {
  auto fail = [&](const std::string& w) { return *why = w, false; };
  if (a.count != b.count || a.first != b.first)
    return fail("count/first " + std::to_string(a.count) + "/" + std::to_string(a.first) + " vs " +
                std::to_string(b.count) + "/" + std::to_string(b.first));
  if (std::memcmp(a.dots.data(), b.dots.data(), sizeof a.dots) != 0)
    return fail("dots differ (" + std::to_string(a.dots[0]) + " vs " + std::to_string(b.dots[0]) +
                ")");
  if (std::memcmp(&a.sumsq, &b.sumsq, sizeof a.sumsq) != 0) return fail("sumsq differs");
  if (a.nan != b.nan || a.posinf != b.posinf || a.neginf != b.neginf)
    return fail("non-finite counts differ");
  if (a.sample_idx != b.sample_idx) return fail("sample indices differ");
  if (a.samples.size() != b.samples.size() ||
      std::memcmp(a.samples.data(), b.samples.data(), a.samples.size() * sizeof(double)) != 0)
    return fail("samples differ");
  return true;
}

std::vector<std::string> CheckPlannedSketches(const TraceFile& t, size_t* calls_checked) {
  std::vector<std::string> problems;
  const auto sketches = SketchesByCall(t);
  std::map<std::pair<uint64_t, int>, int> nranks;
  for (const CommRecord& c : t.comms) nranks[{c.comm_id, c.rank}] = c.nranks;
  std::set<uint64_t> simulated;  // groups ended by ncclGroupSimulateEnd: nothing ran
  for (const CallRecord& c : t.calls)
    if (static_cast<Api>(c.api) == Api::kGroupSimulateEnd) simulated.insert(c.group_id);
  *calls_checked = 0;
  for (const CallRecord& c : t.calls) {
    const Api api = static_cast<Api>(c.api);
    if (!IsCollective(api) && !IsP2p(api)) continue;
    static const CallSketches kNone;
    auto it = sketches.find(c.uid);
    const CallSketches& s = it == sketches.end() ? kNone : it->second;
    const bool ran = (c.result == ncclSuccess || c.result == ncclInProgress) && c.capture == 0 &&
                     (c.group_id == 0 || !simulated.count(c.group_id));
    if (!ran) {  // a refused call may have had its before-half sketched, never its after-half
      if (s.Count(SketchWhich::kRecvAfter) + s.Count(SketchWhich::kSendAfterSample) > 0)
        problems.push_back(CallName(c) + ": did not run but has after-call sketches");
      continue;
    }
    const auto plan = sketch::PlanCall(api, c.dtype, c.count, nranks[{c.comm_id, c.rank}], c.rank,
                                       c.root_peer, (c.flags & call_flags::kInPlace) != 0);
    if (!plan.ok()) {
      problems.push_back(CallName(c) + ": " + plan.status().message());
      continue;
    }
    ++*calls_checked;
    const bool send = plan->send && plan->send->total() > 0;
    const bool recv = plan->recv && plan->recv->total() > 0;
    ExpectCount(s, SketchWhich::kSendBefore, send ? plan->send->nblocks : 0, c, &problems);
    ExpectCount(s, SketchWhich::kRecvAfter, recv ? plan->recv->nblocks : 0, c, &problems);
    const size_t race = send && plan->send_race ? 1 : 0;
    ExpectCount(s, SketchWhich::kSendBeforeSample, race, c, &problems);
    ExpectCount(s, SketchWhich::kSendAfterSample, race, c, &problems);
    ExpectCount(s, SketchWhich::kScalar, (c.flags & call_flags::kScalarOnDevice) ? 1 : 0, c,
                &problems);
    if (send)
      for (uint32_t b = 0; b < plan->send->nblocks && b < s.Count(SketchWhich::kSendBefore); ++b)
        if (s.by_which.at(SketchWhich::kSendBefore)[b]->first != plan->send->first(b))
          problems.push_back(CallName(c) + ": send block " + std::to_string(b) + " misplaced");
  }
  return problems;
}

std::vector<std::string> CheckExampleSketches(const TraceFile& t, const ExampleRun& run) {
  std::vector<std::string> problems;
  const example::Scenario* sc = example::FindScenario(run.scenario);
  if (sc == nullptr) return {"no scenario " + run.scenario};
  const auto sketches = SketchesByCall(t);
  // What each rank's k-th collective is: (step, call) in issue order.
  auto plan_of = [&](int rank) {
    std::vector<std::pair<int, example::Call>> calls;
    for (int s = 0; s < run.steps; ++s)
      for (const example::Call& c : sc->plan(s, rank, run.ranks)) calls.push_back({s, c});
    return calls;
  };
  // The send buffer's contents when the call read it, and before the call.
  auto data = [&](int step, const example::Call& c, int rank, bool at_call) {
    std::vector<float> x(c.count);
    const bool raced = rank == sc->race_rank && c.tensor == 0 && (at_call || run.group);
    for (size_t i = 0; i < c.count; ++i)
      x[i] = raced ? kRacyValue : example::InputValue(c.tensor, step, rank, i);
    return x;
  };
  for (int r = 0; r < run.ranks; ++r) {
    std::vector<CallRecord> calls;
    for (const CallRecord& c : t.calls)
      if (c.rank == r && IsCollective(static_cast<Api>(c.api))) calls.push_back(c);
    std::sort(calls.begin(), calls.end(),
              [](const CallRecord& a, const CallRecord& b) { return a.seq < b.seq; });
    const auto expected = plan_of(r);
    if (calls.size() != expected.size()) {
      problems.push_back("rank " + std::to_string(r) + ": " + std::to_string(calls.size()) +
                         " collectives recorded, the scenario issues " +
                         std::to_string(expected.size()));
      continue;
    }
    for (size_t k = 0; k < calls.size(); ++k) {
      const CallRecord& rec = calls[k];
      const auto& [step, call] = expected[k];
      const std::string what = CallName(rec);
      auto it = sketches.find(rec.uid);
      if (it == sketches.end()) {
        problems.push_back(what + ": no sketches");
        continue;
      }
      const CallSketches& s = it->second;
      const bool bcast = call.op == example::Call::kBroadcast;
      // What NCCL combined at this position: every rank's send at the same index of the step.
      std::vector<float> recv(call.count, 0.0f);
      for (int q = 0; q < run.ranks; ++q) {
        const auto [qstep, qcall] = plan_of(q)[k];
        if (bcast && q != call.root) continue;
        const std::vector<float> sent = data(qstep, qcall, q, true);
        for (size_t i = 0; i < recv.size() && i < sent.size(); ++i) recv[i] += sent[i];
      }
      ExpectSame(s.One(SketchWhich::kRecvAfter),
                 sketch::SketchHostBlock(recv.data(), kFloat, recv.size(), 0), what + " recv",
                 &problems);
      if (bcast && r != call.root) continue;
      const std::vector<float> before = data(step, call, r, false);
      const std::vector<float> after = data(step, call, r, true);
      ExpectSame(s.One(SketchWhich::kSendBefore),
                 sketch::SketchHostBlock(before.data(), kFloat, before.size(), 0), what + " send",
                 &problems);
      ExpectSame(s.One(SketchWhich::kSendBeforeSample),
                 Race(before, sketch::SketchMode::kFullAndRace), what + " race twin", &problems);
      ExpectSame(s.One(SketchWhich::kSendAfterSample), Race(after, sketch::SketchMode::kRaceOnly),
                 what + " race sample after", &problems);
    }
  }
  return problems;
}

}  // namespace ncclrr::testing
