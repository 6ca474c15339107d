#include "data_findings.h"

#include <algorithm>
#include <cstdio>

#include "checkers.h"
#include "text_util.h"

namespace ncclrr::analysis {
namespace {

// At most this many ranks get a row of their own; the others share one.
constexpr size_t kRowsShown = 8;

bool Wrong(const RankDataOutcome& r) { return r.verdict && sketch::IsFailure(r.verdict->verdict); }

std::string OutputState(const RankDataOutcome& r) {
  if (!r.verdict) return "";
  switch (r.verdict->verdict) {
    case sketch::Verdict::kWrongSum:
      return "output off by " + Sci(r.verdict->error) + " (tolerance " + Sci(r.verdict->tolerance) +
             ")";
    case sketch::Verdict::kWrongCopy:
      return "output is not a copy of its source";
    case sketch::Verdict::kNonFiniteLost:
      return "output lost NaN/Inf of an input";
    case sketch::Verdict::kOk:
      return "output matches its inputs";
    case sketch::Verdict::kNotAnOutput:
      return "";
    default:
      return std::string("not checked (") + sketch::VerdictName(r.verdict->verdict) + ")";
  }
}

std::vector<TableRow> Table(const TraceModel& m, const CallDataOutcome& o) {
  std::vector<TableRow> rows;
  std::vector<int> quiet;
  for (const RankDataOutcome& r : o.ranks) {
    const bool differs = Wrong(r) || r.race.has_value();
    if (!differs || rows.size() >= kRowsShown) {
      quiet.push_back(r.rank);
      continue;
    }
    std::string what = ShortCall(m.call(r.call));
    if (r.race) what += ": send buffer changed during the call";
    const std::string out = OutputState(r);
    if (!out.empty()) what += (r.race ? "; " : ": ") + out;
    rows.push_back({std::to_string(r.rank), std::to_string(r.seq), what, true});
  }
  if (!quiet.empty()) {
    // The first quiet rank speaks for the group (same call, by the metadata checks).
    const RankDataOutcome* first = nullptr;
    for (const RankDataOutcome& r : o.ranks)
      if (r.rank == quiet.front()) first = &r;
    std::string what = ShortCall(m.call(first->call));
    const std::string out = OutputState(*first);
    if (!out.empty()) what += ": " + out;
    rows.insert(rows.begin(), {CompactRanks(quiet), std::to_string(first->seq), what, false});
  }
  return rows;
}

Finding Base(const TraceModel& m, const CallDataOutcome& o, FindingKind kind) {
  Finding f = FindingOn(kind, m, o.comm_index);
  f.seq = o.seq;
  f.peer = o.peer;
  f.first_time = INT64_MAX;
  for (const RankDataOutcome& r : o.ranks) {
    f.first_time = std::min(f.first_time, r.time_ns);
    f.calls.push_back({r.call, r.rank, r.seq});
  }
  if (o.ranks.empty()) f.first_time = 0;
  f.table = Table(m, o);
  return f;
}

std::string Where(const CallDataOutcome& o) {
  return (o.peer ? "At pair index " : "At seq ") + std::to_string(o.seq);
}

// The failing ranks' own sentences (block, observed error, tolerance) for the message; ranks
// whose outputs are off alike (a race reaches every rank) share one sentence. At most four.
std::string WrongDetails(const std::vector<const RankDataOutcome*>& wrong) {
  std::vector<std::pair<std::string, std::vector<int>>> alike;  // sentence -> ranks
  for (const RankDataOutcome* r : wrong) {
    std::string m = r->verdict->message;
    const std::string prefix = "rank " + std::to_string(r->rank) + ": ";
    if (m.rfind(prefix, 0) == 0) m.erase(0, prefix.size());
    auto it = std::find_if(alike.begin(), alike.end(), [&](const auto& a) { return a.first == m; });
    if (it == alike.end()) it = alike.insert(alike.end(), {m, {}});
    it->second.push_back(r->rank);
  }
  std::string s;
  for (size_t i = 0; i < alike.size() && i < 4; ++i) {
    std::string who = RankList(alike[i].second);
    who[0] = 'R';  // starts a sentence
    s += " " + who + ": " + alike[i].first + ".";
  }
  if (alike.size() > 4) s += " (" + std::to_string(alike.size() - 4) + " more.)";
  return s;
}

// "rank 1's output", "the outputs of ranks 0 and 1".
std::string Possessive(const std::vector<int>& ranks, const std::string& what) {
  if (ranks.size() == 1) return RankList(ranks) + "'s " + what;
  return "the " + what + "s of " + RankList(ranks);
}

std::vector<int> RanksOf(const std::vector<const RankDataOutcome*>& v) {
  std::vector<int> out;
  for (const RankDataOutcome* r : v) out.push_back(r->rank);
  std::sort(out.begin(), out.end());
  return out;
}

const char* kRaceAdvice =
    " Make whatever writes the buffer (a kernel on another stream, a copy, the host) wait for "
    "the collective: record an event on the NCCL stream after the call and make the writer's "
    "stream wait on it (in PyTorch: wait on the work handle or use record_stream), or write into "
    "a different buffer.";

Finding RaceFinding(const TraceModel& m, const CallDataOutcome& o,
                    const std::vector<const RankDataOutcome*>& racing,
                    const std::vector<const RankDataOutcome*>& wrong,
                    const Finding* captured_wrong) {
  Finding f = Base(m, o, FindingKind::kBufferRace);
  f.ranks = RanksOf(racing);
  const std::string call = ShortCall(m.call(racing[0]->call));
  const std::string who = RankList(f.ranks);
  f.pattern = "race:" + call + (wrong.empty() && !captured_wrong ? "" : ":wrong");
  f.short_text = Possessive(f.ranks, "send buffer") + " of " + call +
                 " changed while the collective was in flight";
  const sketch::RaceEvidence& ev = *racing[0]->race;
  f.message = Where(o) + " the send buffer of " + call + " on " + who +
              " changed after the call was issued, while NCCL could still read it: between the "
              "sketches taken before and after the call, " +
              (ev.dots_compared ? std::to_string(ev.dots_differing) +
                                      " of 16 projections of the re-read eighth and "
                                : std::string()) +
              std::to_string(ev.samples_differing) + " of " + std::to_string(ev.samples_compared) +
              " sampled values differ.";
  if (captured_wrong) {
    f.message += " This race explains the wrong result that the buffers captured by `record "
                 "--capture` prove: " +
                 captured_wrong->short_text + " (wrong_sum, not reported separately).";
  } else if (!wrong.empty()) {
    f.message += " This race explains the wrong result: the output on " + RankList(RanksOf(wrong)) +
                 " is not what the sketched inputs combine to (wrong_sum, not reported "
                 "separately)." +
                 WrongDetails(wrong);
  } else {
    f.message +=
        " The outputs still matched the sketched inputs (NCCL read those bytes before they "
        "changed), but the result depends on timing and can be wrong in any step.";
  }
  f.message += kRaceAdvice;
  return f;
}

Finding WrongSumFinding(const TraceModel& m, const CallDataOutcome& o,
                        const std::vector<const RankDataOutcome*>& wrong) {
  Finding f = Base(m, o, FindingKind::kWrongSum);
  f.ranks = RanksOf(wrong);
  const CallRecord& c = m.call(wrong[0]->call);
  const std::string call = ShortCall(c);
  const std::string who = RankList(f.ranks);
  const sketch::Verdict v = wrong[0]->verdict->verdict;
  f.pattern = "wrong:" + call + ":" + sketch::VerdictName(v);
  const bool copy = v == sketch::Verdict::kWrongCopy;
  const bool p2p = o.peer.has_value();
  f.short_text = Possessive(f.ranks, "output") + " of " + call +
                 (f.ranks.size() == 1 ? " is" : " are") +
                 (copy ? " not a copy of what was sent" : " not what the ranks' inputs sum to");
  const std::string proof =
      copy ? " The sketches of the sent buffer (before the call) and of the received one (after "
             "it) prove it, and a copy must match bit for bit:"
           : " The sketches of every send buffer (before the call) and of the output (after it) "
             "prove it; the tolerance bounds every rounding a correct reduction can make "
             "(false-positive rate below 1e-7 per block):";
  f.message =
      Where(o) + " the output of " + call + " on " + who +
      (copy ? " differs from what " + std::string(p2p ? "the sender" : "its source rank") + " sent"
            : " is not the combination of what the ranks sent") +
      ", although NCCL reported success." + proof + WrongDetails(wrong) +
      " Usual causes: a send buffer written by another stream or the host while the "
      "collective ran (the buffer_race check sees that only for out-of-place calls), an "
      "output overwritten before the collective's stream was waited on, or memory "
      "corruption. `ncclrr replay` re-executes the call (with `record --capture`, on the "
      "recorded data: `--data captured`) to see whether it reproduces.";
  return f;
}

}  // namespace

std::string Sci(double v) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.3g", v);
  return buf;
}

std::vector<Finding> DataFindings(const TraceModel& m, const CallDataOutcome& o,
                                  const Finding* captured_wrong) {
  std::vector<const RankDataOutcome*> racing, wrong;
  for (const RankDataOutcome& r : o.ranks) {
    if (r.race) racing.push_back(&r);
    if (Wrong(r)) wrong.push_back(&r);
  }
  if (!racing.empty()) return {RaceFinding(m, o, racing, wrong, captured_wrong)};
  if (captured_wrong) return {*captured_wrong};  // exact, so it stands for the sketches' verdict
  if (!wrong.empty()) return {WrongSumFinding(m, o, wrong)};
  return {};
}

}  // namespace ncclrr::analysis
