// The words of `ncclrr diff`: one line and a paragraph per divergence, and the table rows of
// the ranks that show it.
#include <algorithm>
#include <cstdio>
#include <map>

#include "diff/diff_events.h"
#include "report/text_util.h"

namespace ncclrr::analysis {
namespace {

constexpr size_t kCallsNamed = 3;  // calls spelled out in one cell
// Calls that must agree after a skipped or added call, before the run without it ends, to call
// it skipped or added (the alignment itself looks 3 calls ahead).
constexpr uint64_t kAgreeingToTell = 3;

std::vector<int> RanksOf(const std::vector<DiffEvent>& evs) {
  std::vector<int> r;
  for (const DiffEvent& e : evs)
    if (r.empty() || r.back() != e.rank) r.push_back(e.rank);
  return r;
}

std::string Who(const std::vector<int>& ranks, int nranks) {
  if (nranks > 1 && static_cast<int>(ranks.size()) == nranks) return "every rank";
  return RankList(ranks);
}

std::string Pos(uint64_t pos, bool p2p) { return (p2p ? "p2p #" : "seq ") + std::to_string(pos); }

std::string CallsOnly(const TraceModel& m, const std::vector<DiffSlot>& slots) {
  std::string s;
  for (size_t i = 0; i < slots.size() && i < kCallsNamed; ++i)
    s += (i ? " then " : "") + ShortCall(m.call(slots[i].call));
  if (slots.size() > kCallsNamed) s += " then " + Thousands(slots.size() - kCallsNamed) + " more";
  return s;
}

// What differs between two calls of different signatures: "count 36864 in run A, 36928 in run B".
std::string ArgumentChange(const CallRecord& x, const CallRecord& y) {
  std::vector<std::string> parts;
  auto add = [&](const std::string& what, const std::string& va, const std::string& vb) {
    if (va != vb) parts.push_back(what + " " + va + " in run A, " + vb + " in run B");
  };
  add("operation", std::string(ApiName(CanonicalApi(static_cast<Api>(x.api)))),
      std::string(ApiName(CanonicalApi(static_cast<Api>(y.api)))));
  add("count", std::to_string(x.count), std::to_string(y.count));
  add("dtype", std::string(DtypeName(x.dtype)), std::string(DtypeName(y.dtype)));
  if (Reduces(static_cast<Api>(x.api)) && Reduces(static_cast<Api>(y.api)))
    add("reduction", std::string(RedOpName(x.op, x.flags)), std::string(RedOpName(y.op, y.flags)));
  const Api api = static_cast<Api>(x.api);
  if (IsRooted(api) || IsP2p(api))
    add(IsP2p(api) ? "peer" : "root", std::to_string(x.root_peer), std::to_string(y.root_peer));
  std::string s;
  for (size_t i = 0; i < parts.size(); ++i) s += (i ? "; " : "") + parts[i];
  return s;
}

// The first frame where two call sites differ, with its depth.
std::pair<std::string, std::string> FirstDifferentFrame(const std::string& a, const std::string& b,
                                                        size_t* depth) {
  size_t i = 0, j = 0;
  *depth = 0;
  while (true) {
    const size_t ei = std::min(a.find('<', i), a.size());
    const size_t ej = std::min(b.find('<', j), b.size());
    const std::string fa = i <= a.size() ? a.substr(i, ei - i) : "";
    const std::string fb = j <= b.size() ? b.substr(j, ej - j) : "";
    if (fa != fb || (ei == a.size() && ej == b.size()))
      return {fa.empty() ? "(no frame)" : fa, fb.empty() ? "(no frame)" : fb};
    i = ei + 1;
    j = ej + 1;
    ++*depth;
  }
}

std::string Ratio(int64_t slow, int64_t fast) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.1fx",
                fast > 0 ? static_cast<double>(slow) / static_cast<double>(fast) : 0.0);
  return buf;
}

// "inputs agree", "output differs", "output not sketched".
std::string Agree(const char* what, bool plural, Agreement a) {
  const char* verb = a == Agreement::kAgree    ? (plural ? "agree" : "agrees")
                     : a == Agreement::kDiffer ? (plural ? "differ" : "differs")
                                               : "not sketched";
  return std::string(what) + " " + verb;
}

class Describer {
 public:
  Describer(const EventGroup& g, const DiffSide& a, const DiffSide& b, Divergence* d)
      : g_(g),
        a_(*a.model),
        b_(*b.model),
        d_(*d),
        e_(g.events.front()),
        ranks_(RanksOf(g.events)),
        who_(Who(ranks_, g.nranks)),
        all_(g.nranks > 1 && static_cast<int>(ranks_.size()) == g.nranks) {}

  void Run() {
    switch (g_.kind) {
      case DiffKind::kOrder:
        Order();
        break;
      case DiffKind::kArguments:
        Arguments();
        break;
      case DiffKind::kMissingCall:
      case DiffKind::kExtraCall:
        Count(g_.kind == DiffKind::kMissingCall);
        break;
      case DiffKind::kCallSite:
        CallSite();
        break;
      case DiffKind::kData:
        Data();
        break;
      case DiffKind::kTiming:
        Timing();
        break;
      case DiffKind::kUnmatchedComm:
        break;
    }
  }

 private:
  std::string A(const DiffEvent& e) const { return SlotsText(a_, e.a, g_.p2p); }
  std::string B(const DiffEvent& e) const { return SlotsText(b_, e.b, g_.p2p); }
  void Row(const DiffEvent& e, std::string a, std::string b) {
    d_.table.push_back({e.rank, std::move(a), std::move(b), true});
  }
  std::string Pairing(const std::string& run = "B") const {
    return all_ ? " Every rank changed alike, so NCCL still pairs like with like: the program "
                  "itself changed here."
                : " The other ranks did not change, so in run " + run +
                      " NCCL paired different calls across ranks here (`ncclrr check` on run " +
                      run + " says with what effect).";
  }
  std::string Span(const std::vector<DiffSlot>& slots) const {
    return Pos(slots.front().pos, g_.p2p) +
           (slots.size() > 1 ? "-" + std::to_string(slots.back().pos) : "");
  }

  void Order() {
    for (const DiffEvent& e : g_.events) Row(e, A(e), B(e));
    const std::string at = Pos(e_.a_pos, g_.p2p);
    switch (e_.evidence) {
      case DiffEvent::Evidence::kData:
        d_.short_text = who_ + " issued same-shape calls from " + at + " in another order in run B";
        d_.message =
            "The calls have the same shape in both runs, but their data sketches show "
            "that in run B, " +
            who_ + " sent at " + at + " what it sent at " + Pos(e_.a.back().pos, g_.p2p) +
            " in run A, and the other way round." + Pairing();
        return;
      case DiffEvent::Evidence::kIdentity: {
        const std::string run = e_.in_run_a ? "A" : "B", other = e_.in_run_a ? "B" : "A";
        const std::string ranks = RankList(ranks_);
        char conf[16];
        std::snprintf(conf, sizeof conf, "%.2f", e_.confidence);
        d_.table.clear();
        for (const DiffEvent& e : g_.events) {
          const std::string note = " (order differs across ranks)";
          Row(e, A(e) + (e_.in_run_a ? note : ""), B(e) + (e_.in_run_a ? "" : note));
        }
        d_.short_text =
            ranks + " disagree on the order of same-shape calls from " + at + " in run " + run;
        d_.message =
            "The calls have the same shape, so only their identity (buffers, call "
            "sites) tells them apart: `ncclrr check` finds " +
            ranks + " issuing " + Span(e_.in_run_a ? e_.a : e_.b) + " of run " + run +
            " in different orders (suspected_swap, confidence " + conf +
            "; on a tie both sides are named), and nothing like it at the same place "
            "in run " +
            other + ". NCCL pairs calls by position, so in run " + run +
            " it combined different tensors there: no error, no hang, silently wrong "
            "values. `ncclrr check` on run " +
            run +
            " gives the evidence; `record "
            "--sketch` in both runs lets diff compare the data.";
        return;
      }
      case DiffEvent::Evidence::kSignatures:
        break;
    }
    d_.short_text = who_ + " issued " + Span(e_.a) + " in another order in run B";
    d_.message = "In run A, " + who_ + " issued " + CallsOnly(a_, e_.a) + "; in run B, " +
                 CallsOnly(b_, e_.b) + "." + Pairing();
  }

  void Arguments() {
    for (const DiffEvent& e : g_.events) Row(e, A(e), B(e));
    const CallRecord& x = a_.call(e_.a.front().call);
    const CallRecord& y = b_.call(e_.b.front().call);
    d_.short_text = who_ + ": " + ArgumentChange(x, y);
    d_.message = "In run A, " + who_ + " issued " + ShortCall(x) + " at " + Pos(e_.a_pos, g_.p2p) +
                 "; in run B, " + ShortCall(y) + " at " + Pos(e_.b_pos, g_.p2p) + "." + Pairing();
  }

  // Where each rank of the shorter run stopped: "rank 1 before seq 8 and rank 0 before seq 9".
  std::string Stops(bool missing) const {
    std::map<uint64_t, std::vector<int>> at;
    for (const DiffEvent& e : g_.events) {
      const std::vector<DiffSlot>& calls = missing ? e.a : e.b;
      if (!calls.empty()) at[calls.front().pos].push_back(e.rank);
    }
    if (at.size() == 1) return who_ + " stopped before " + Pos(at.begin()->first, g_.p2p);
    std::string s;
    size_t i = 0;
    for (const auto& [pos, ranks] : at) {
      s += std::string(i == 0               ? ""
                       : i + 1 == at.size() ? " and "
                                            : ", ") +
           RankList(ranks) + (i == 0 ? " stopped" : "") + " before " + Pos(pos, g_.p2p);
      ++i;
    }
    return s;
  }

  void Count(bool missing) {
    const std::string longer = missing ? "A" : "B", shorter = missing ? "B" : "A";
    const std::vector<DiffSlot>& calls = missing ? e_.a : e_.b;
    bool unclean = false;
    for (const DiffEvent& e : g_.events) {
      Row(e, missing ? A(e) : "", missing ? "" : B(e));
      unclean = unclean || e.short_side_unclean;
    }
    const std::string where = SlotsText(missing ? a_ : b_, calls, g_.p2p);
    if (e_.at_end) {
      uint64_t last = 0;
      for (const DiffEvent& e : g_.events)
        if (!(missing ? e.a : e.b).empty()) last = std::max(last, (missing ? e.a : e.b).back().pos);
      d_.short_text = "in run " + shorter + ", " + Stops(missing) + "; in run " + longer +
                      (g_.events.size() == 1 ? " it" : " they") + " went on to " +
                      Pos(last, g_.p2p);
      d_.message = "In run " + longer + ", " +
                   (g_.events.size() == 1 ? who_ : "rank " + std::to_string(e_.rank)) +
                   " went on to issue " + where + "; in run " + shorter + " it never did.";
      d_.message += unclean
                        ? " Run " + shorter +
                              "'s trace ends without a clean close: the "
                              "process was killed, crashed or hung after its last recorded call."
                        : " Run " + shorter +
                              "'s processes closed their traces cleanly: "
                              "the program issued fewer calls.";
      return;
    }
    const std::string n = Plural(calls.size(), "call", "calls");
    // Too few calls agree before the run ends, and they come from a graph's launch: the rank
    // may as well have launched the graph where the other run issued these calls, and hung.
    const bool untold =
        missing && e_.short_ends && e_.agree_launched && e_.agree_after < kAgreeingToTell;
    d_.short_text = "in run B, " + who_ + (missing ? " skipped " : " added ") + n + " at " +
                    Pos(missing ? e_.a_pos : e_.b_pos, g_.p2p) +
                    (untold ? ", or launched a CUDA graph there, and stopped soon after" : "");
    d_.message = "In run " + longer + ", " + who_ + " issued " + where + " where in run " +
                 shorter + " it issued nothing; ";
    if (untold) {
      d_.message +=
          "only " + Plural(e_.agree_after, "call", "calls") + " after " +
          (calls.size() == 1 ? "it" : "them") + (e_.agree_after == 1 ? " agrees" : " agree") +
          " before run " + shorter + "'s trace of the rank ends" +
          (e_.short_ends_unclean ? " without a clean close" : "") +
          (e_.agree_after == 1 ? ", and it comes" : ", and they come") +
          " from a launch of a CUDA graph: the rank may have launched "
          "the graph once more where run " +
          longer + " issued " + (calls.size() == 1 ? "this call" : "these calls") +
          " and stopped there, rather than skipped " + (calls.size() == 1 ? "it" : "them") +
          " (`ncclrr check` on run " + shorter + " compares the ranks' launch counts)." + Pairing();
      return;
    }
    d_.message += "the calls after it agree again, so " +
                  std::string(calls.size() == 1 ? "it was" : "they were") +
                  (missing ? " skipped in run B" : " added in run B") + ", not reordered." +
                  Pairing();
    if (e_.repeats_before)
      d_.message += " The same calls repeat before them in run " + longer + ", so run B may have " +
                    (missing ? "skipped" : "added") + " them at any of those steps from " +
                    Pos(e_.earliest_pos, g_.p2p) + " on (the traces cannot tell which).";
  }

  void CallSite() {
    size_t depth = 0;
    std::pair<std::string, std::string> first;
    for (const DiffEvent& e : g_.events) {
      size_t k = 0;
      auto f = FirstDifferentFrame(e.site_a, e.site_b, &k);
      if (&e == &e_) {
        first = f;
        depth = k;
      }
      Row(e, A(e) + " at " + f.first, B(e) + " at " + f.second);
    }
    d_.short_text = who_ + "'s " + Pos(e_.a_pos, g_.p2p) + " " +
                    ShortCall(a_.call(e_.a.front().call)) +
                    " was issued from another call site in run B";
    d_.message = "The call sites differ " +
                 std::string(depth == 0 ? "in the innermost frame"
                                        : Plural(depth, "frame", "frames") + " out") +
                 ": " + first.first + " in run A, " + first.second +
                 " in run B. The same call, issued from elsewhere in the program "
                 "(a rebuilt binary moves every offset: compare symbolized stacks then).";
  }

  void Data() {
    std::vector<int> inputs_differ, outputs_differ;
    for (const DiffEvent& e : g_.events) {
      Row(e, A(e),
          Agree("inputs", true, e.data.inputs) + ", " + Agree("output", false, e.data.outputs));
      if (e.data.inputs == Agreement::kDiffer) inputs_differ.push_back(e.rank);
      if (e.data.inputs == Agreement::kAgree && e.data.outputs == Agreement::kDiffer)
        outputs_differ.push_back(e.rank);
    }
    const std::string at = Pos(e_.a_pos, g_.p2p);
    const std::string o = RankList(outputs_differ);
    d_.short_text = o + " received different data at " + at + " in run B although " +
                    (outputs_differ.size() == 1 ? "its" : "their") + " inputs agree";
    if (inputs_differ.empty()) {
      d_.message = "Every sketched input of " + at + " agrees with run A, yet " + o +
                   "'s output differs: the collective combined the same inputs differently (a "
                   "buffer written while NCCL read it, calls mispaired with another rank, or a "
                   "fault). `ncclrr check` on run B (recorded with --sketch) tests the sums.";
    } else {
      d_.message = Capitalized(RankList(inputs_differ)) + " sent different data at " + at +
                   " in run B, so " + o + "'s output differs although " +
                   (outputs_differ.size() == 1 ? "its" : "their") +
                   " own inputs agree: look at what " + RankList(inputs_differ) +
                   " issued here (a swap of same-shape tensors, or values computed differently).";
    }
  }

  void Timing() {
    for (const DiffEvent& e : g_.events) Row(e, A(e) + ": " + Seconds(e.gpu_a), Seconds(e.gpu_b));
    const bool slower = g_.cost_b > g_.cost_a;
    const std::string at = Pos(e_.a_pos, g_.p2p);
    d_.short_text = at + " " + ShortCall(a_.call(e_.a.front().call)) + " took " +
                    Seconds(g_.cost_b) + " on the GPU in run B, " + Seconds(g_.cost_a) +
                    " in run A";
    d_.message =
        "Its GPU time (the shortest over the ranks, so waiting for a late rank does not "
        "count) is " +
        (slower ? Ratio(g_.cost_b, g_.cost_a) + " longer"
                : Ratio(g_.cost_a, g_.cost_b) + " shorter") +
        " in run B. This call's median is " + Seconds(g_.median_a) + " in run A and " +
        Seconds(g_.median_b) + " in run B.";
  }

  const EventGroup& g_;
  const TraceModel& a_;
  const TraceModel& b_;
  Divergence& d_;
  const DiffEvent& e_;
  const std::vector<int> ranks_;
  const std::string who_;
  const bool all_;
};

}  // namespace

std::string_view DiffKindName(DiffKind k) {
  switch (k) {
    case DiffKind::kUnmatchedComm:
      return "unmatched_comm";
    case DiffKind::kOrder:
      return "order";
    case DiffKind::kArguments:
      return "arguments";
    case DiffKind::kMissingCall:
      return "missing_call";
    case DiffKind::kExtraCall:
      return "extra_call";
    case DiffKind::kCallSite:
      return "call_site";
    case DiffKind::kData:
      return "data";
    case DiffKind::kTiming:
      return "timing";
  }
  return "unknown";
}

std::string SlotsText(const TraceModel& m, const std::vector<DiffSlot>& slots, bool p2p) {
  if (slots.empty()) return "";
  bool contiguous = true;
  for (size_t i = 1; i < slots.size(); ++i)
    contiguous = contiguous && slots[i].pos == slots[i - 1].pos + 1;
  std::string where = p2p ? "p2p #" : "seq ";
  if (contiguous) {
    where += SeqRange(slots.front().pos, slots.size());
  } else {
    for (size_t i = 0; i < slots.size() && i < kCallsNamed; ++i)
      where += (i ? "," : "") + std::to_string(slots[i].pos);
    if (slots.size() > kCallsNamed) where += ",...";
  }
  return where + " " + CallsOnly(m, slots);
}

void DescribeDivergence(const EventGroup& g, const DiffSide& a, const DiffSide& b, Divergence* d) {
  Describer(g, a, b, d).Run();
}

}  // namespace ncclrr::analysis
