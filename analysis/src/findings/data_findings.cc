#include "findings/data_findings.h"

#include <algorithm>
#include <cstdio>

#include "checks/checkers.h"
#include "report/text_util.h"

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

bool Diverges(const CallDataOutcome& o, int rank) {
  return o.divergence &&
         std::binary_search(o.divergence->ranks.begin(), o.divergence->ranks.end(), rank);
}

// "output differs from rank 0's", "outputs differ (no majority)".
std::string DivergenceState(const OutputDivergence& d) {
  if (d.reference.empty()) return "outputs differ (no majority)";
  return "output differs from " + (d.reference.size() == 1 ? RankList(d.reference) + "'s"
                                                           : "that of " + RankList(d.reference));
}

// The cell of one rank: its call, then what happened to its data.
std::string RankState(const TraceModel& m, const CallDataOutcome& o, const RankDataOutcome& r) {
  std::vector<std::string> parts;
  if (r.race) parts.push_back("send buffer changed during the call");
  const bool diverges = Diverges(o, r.rank);
  if (diverges) parts.push_back(DivergenceState(*o.divergence));
  // A divergent output within the tolerance still "matches" no one: say how close it is.
  const std::string out = diverges && r.verdict && r.verdict->verdict == sketch::Verdict::kOk
                              ? "within the rounding tolerance of its inputs"
                              : OutputState(r);
  if (!out.empty()) parts.push_back(out);
  std::string what = ShortCall(m.call(r.call));
  for (size_t i = 0; i < parts.size(); ++i) what += (i == 0 ? ": " : "; ") + parts[i];
  return what;
}

std::vector<TableRow> Table(const TraceModel& m, const CallDataOutcome& o) {
  std::vector<TableRow> rows;
  std::vector<int> quiet;
  for (const RankDataOutcome& r : o.ranks) {
    const bool differs = Wrong(r) || r.race.has_value() || Diverges(o, r.rank);
    if (!differs || rows.size() >= kRowsShown) {
      quiet.push_back(r.rank);
      continue;
    }
    rows.push_back({std::to_string(r.rank), std::to_string(r.seq), RankState(m, o, r), true});
  }
  if (!quiet.empty()) {
    // The first quiet rank speaks for the group (same call, by the metadata checks).
    const RankDataOutcome* first = nullptr;
    for (const RankDataOutcome& r : o.ranks)
      if (r.rank == quiet.front()) first = &r;
    rows.insert(rows.begin(),
                {CompactRanks(quiet), std::to_string(first->seq), RankState(m, o, *first), false});
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
    f.message +=
        " This race explains the wrong result that the buffers captured by `record "
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

// Does `ref` receive into the buffer it sends from? An in-place AlltoAll, or a Recv into the
// buffer of a Send of the same group: NCCL then receives a peer's block where this rank's block
// for that peer is still being sent from, so large transfers overwrite data before it is sent.
bool ReceivesIntoItsSendBuffer(const TraceModel& m, CallRef ref) {
  const CallRecord& c = m.call(ref);
  const Api api = static_cast<Api>(c.api);
  if (api == Api::kAlltoAll) return (c.flags & call_flags::kInPlace) != 0;
  if (api != Api::kRecv || c.group_id == 0) return false;
  const uint64_t bytes = c.count * DtypeSize(c.dtype);
  for (const CallRecord& s : m.file(ref.file).calls) {
    if (static_cast<Api>(s.api) != Api::kSend || s.group_id != c.group_id || s.tid != c.tid)
      continue;
    const uint64_t sent = s.count * DtypeSize(s.dtype);
    if (s.sendbuff < c.recvbuff + bytes && c.recvbuff < s.sendbuff + sent) return true;
  }
  return false;
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
      ", although NCCL reported success." + proof + WrongDetails(wrong);
  const bool in_place = std::any_of(wrong.begin(), wrong.end(), [&](const RankDataOutcome* w) {
    return ReceivesIntoItsSendBuffer(m, w->call);
  });
  if (copy && in_place) {
    f.pattern += ":in-place";
    f.message +=
        " The call received into the buffer it sent from: NCCL writes a peer's block where "
        "this rank's block for that peer is still being sent from, so a large transfer "
        "overwrites data before all of it has been sent and the result depends on timing "
        "(nccl-tests does not check its in-place AlltoAll and SendRecv runs for that reason). Use "
        "separate send and "
        "receive buffers.";
    return f;
  }
  f.message +=
      " Usual causes: a send buffer written by another stream or the host while the "
      "collective ran (the buffer_race check sees that only for out-of-place calls), an "
      "output overwritten before the collective's stream was waited on, or memory "
      "corruption. `ncclrr replay` re-executes the call (with `record --capture`, on the "
      "recorded data: `--data captured`) to see whether it reproduces.";
  return f;
}

std::string Value(double v) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.9g", v);
  return buf;
}

// "2.28.9" from NCCL_VERSION_CODE (22809).
std::string NcclVersion(int32_t code) {
  return std::to_string(code / 10000) + "." + std::to_string(code / 100 % 100) + "." +
         std::to_string(code % 100);
}

// What the sketches of the two described outputs show: "16 of 16 projections (by up to 0.25),
// the sum of squares and 1 of 256 sampled values (element 100: 1.25 on rank 1, 1 on rank 0)".
std::string SketchEvidence(const OutputDivergence& d) {
  std::vector<std::string> parts;
  const sketch::SketchDifference& x = d.diff;
  if (x.dots > 0)
    parts.push_back(std::to_string(x.dots) + " of 16 projections (by up to " + Sci(x.largest) +
                    ")");
  if (x.sumsq) parts.push_back("the sum of squares");
  if (x.counts) parts.push_back("the NaN/Inf counts");
  if (x.samples > 0) {
    std::string p = Plural(uint64_t(x.samples), "sampled value", "sampled values");
    if (d.element)
      p += " (element " + Thousands(*d.element) + ": " + Value(d.value) + " on rank " +
           std::to_string(d.rank) + ", " + Value(d.other_value) + " on rank " +
           std::to_string(d.other) + ")";
    parts.push_back(p);
  }
  std::string s;
  for (size_t i = 0; i < parts.size(); ++i)
    s += (i == 0 ? "" : i + 1 == parts.size() ? " and " : ", ") + parts[i];
  return s;
}

Finding DivergenceFinding(const TraceModel& m, const CallDataOutcome& o,
                          const std::vector<const RankDataOutcome*>& wrong,
                          const Finding* captured_wrong) {
  const OutputDivergence& d = *o.divergence;
  Finding f = Base(m, o, FindingKind::kOutputDivergence);
  f.ranks = d.ranks;
  const CallRecord& c = m.call(o.ranks[0].call);
  const std::string call = ShortCall(c);
  const bool tie = d.reference.empty();
  const std::string who = RankList(d.ranks);
  const std::string ref_output =
      d.reference.size() == 1 ? RankList(d.reference) + "'s" : "that of " + RankList(d.reference);
  f.pattern = "diverge:" + call;
  f.short_text = tie ? "the outputs of " + who + " of " + call + " differ"
                     : Possessive(d.ranks, "output") + " of " + call +
                           (d.ranks.size() == 1 ? " differs" : " differ") + " from " + ref_output;
  f.message = Where(o) + " the output of " + call + " on " + who + " is not bit-identical to " +
              (tie ? "the other ranks'" : ref_output) + ", although NCCL gives every rank the " +
              "same bytes (AllReduce, Broadcast and AllGather outputs are identical on every " +
              "rank). The sketches taken after the call, on the collective's stream, differ in " +
              "elements [" + Thousands(d.first) + ", " + Thousands(d.first + d.count) +
              ") of rank " + std::to_string(d.rank) + "'s and rank " + std::to_string(d.other) +
              "'s output: " + SketchEvidence(d) + ".";
  if (d.outputs > 2)
    f.message += " The ranks hold " + std::to_string(d.outputs) + " different outputs.";
  const std::string not_reported = " (wrong_sum, not reported separately).";
  if (captured_wrong) {
    f.message +=
        " The buffers captured by `record --capture` prove it: " + captured_wrong->short_text +
        not_reported;
  } else if (d.by_identity) {
    f.message +=
        " The identity check tells which output is wrong: " + Possessive(d.reference, "output") +
        (d.reference.size() == 1 ? " is" : " are") + " what the ranks' inputs combine to, " +
        Possessive(d.ranks, "output") + (d.ranks.size() == 1 ? " is not" : " are not") +
        not_reported + WrongDetails(wrong);
  } else if (!wrong.empty()) {
    f.message += " The identity check finds " + Possessive(RanksOf(wrong), "output") +
                 " wrong too" + not_reported + WrongDetails(wrong);
  } else if (std::all_of(o.ranks.begin(), o.ranks.end(), [](const RankDataOutcome& r) {
               return r.verdict && r.verdict->verdict == sketch::Verdict::kOk;
             })) {
    f.message +=
        " Every output is still within the rounding tolerance of what the inputs "
        "combine to: the difference is small (low-order bits), and still one that NCCL "
        "never makes.";
  }
  if (tie)
    f.message +=
        " No output is held by a majority of the ranks, and the identity check cannot "
        "tell which is right, so every rank is named.";
  const std::string where = tie ? "one of " + who : who;
  f.message += " Likely causes: a faulty GPU, NVLink/PCIe link or GPU memory on " + where +
               " (look for Xid and ECC errors: `dmesg`, `nvidia-smi -q -d ECC`; rerun without "
               "that GPU); a buffer race on " +
               where +
               ": something wrote the output buffer after NCCL did, before the sketch after the "
               "call read it (a kernel or copy on another stream that does not wait for the "
               "collective, or the host)";
  if (o.mispaired_at)
    f.message += "; a mismatched call: this communicator's calls were mispaired at seq " +
                 std::to_string(*o.mispaired_at) +
                 " (reported above), so the ranks may have run different calls since";
  if (o.nccl_versions.size() > 1) {
    std::string versions;
    for (size_t i = 0; i < o.nccl_versions.size(); ++i)
      versions += (i == 0                            ? ""
                   : i + 1 == o.nccl_versions.size() ? " and "
                                                     : ", ") +
                  NcclVersion(o.nccl_versions[i]);
    f.message += "; a mismatched call: the ranks ran different NCCL libraries (" + versions +
                 "), whose protocols need not agree";
  }
  f.message +=
      ". A difference that recurs on one GPU whatever the call points at the hardware; "
      "one that recurs at the same call, at a race.";
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
  std::vector<const RankDataOutcome*> racing, wrong, diverged_wrong;
  for (const RankDataOutcome& r : o.ranks) {
    if (r.race) racing.push_back(&r);
    if (Wrong(r)) (Diverges(o, r.rank) ? diverged_wrong : wrong).push_back(&r);
  }
  std::vector<Finding> out;
  if (o.divergence) {
    // A captured wrong sum about divergent ranks only says the same: it joins the divergence.
    const Finding* absorbed = nullptr;
    if (captured_wrong && std::all_of(captured_wrong->ranks.begin(), captured_wrong->ranks.end(),
                                      [&](int r) { return Diverges(o, r); })) {
      absorbed = captured_wrong;
      captured_wrong = nullptr;
    }
    out.push_back(DivergenceFinding(m, o, diverged_wrong, absorbed));
  }
  if (!racing.empty()) {
    // The race explains every wrong output, the divergent ones included.
    wrong.insert(wrong.end(), diverged_wrong.begin(), diverged_wrong.end());
    out.push_back(RaceFinding(m, o, racing, wrong, captured_wrong));
  } else if (captured_wrong) {
    out.push_back(*captured_wrong);  // exact, so it stands for the sketches' verdict
  } else if (!wrong.empty()) {
    out.push_back(WrongSumFinding(m, o, wrong));
  }
  return out;
}

}  // namespace ncclrr::analysis
