#include "ncclrr/replay/report.h"

#include <cmath>
#include <cstdio>
#include <map>

#include "json.h"
#include "ncclrr/trace/describe.h"

namespace ncclrr::replay {
namespace {

std::string Num(double v) {
  if (std::isnan(v)) return "nothing (past the logical output)";
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.10g", v);
  return buf;
}

std::string CommText(uint64_t id, const std::string& name) {
  return "comm " + Hex64(id) + (name.empty() ? "" : " (" + name + ")");
}

bool IsPermute(const OrderResult& r) { return r.trial >= 0; }

// ": 5, 12, 20" (the first eight, then how many more).
std::string StepList(const std::vector<uint64_t>& steps) {
  std::string s;
  for (size_t i = 0; i < steps.size() && i < 8; ++i)
    s += (i ? ", " : ": ") + std::to_string(steps[i]);
  if (steps.size() > 8) s += " and " + std::to_string(steps.size() - 8) + " more";
  return s;
}

// "2 of 4 steps wrong (seq 4–5 swapped on rank 1)", "0 wrong", "hangs (...)".
std::string Verdict(const OrderResult& r) {
  const std::string why = r.explanation.empty() ? "" : " (" + r.explanation.front() + ")";
  switch (r.outcome) {
    case Outcome::kRight:
      return "0 wrong";
    case Outcome::kWrong:
      if (r.steps > 0 && r.wrong_steps > 0)
        return std::to_string(r.wrong_steps) + " of " + std::to_string(r.steps) + " steps wrong" +
               StepList(r.wrong_step_list) + why;
      return std::to_string(r.wrong_calls) + " of " + std::to_string(r.calls) + " calls wrong" +
             why;
    case Outcome::kHang: {
      std::string s = "hangs";
      if (!r.stuck.empty())
        s += " at seq " + std::to_string(r.stuck.front().seq) + " of " +
             CommText(r.stuck.front().comm_id, r.stuck.front().comm_name) + " on rank " +
             std::to_string(r.stuck.front().rank);
      return s + why;
    }
    case Outcome::kError:
      return "error: " + r.error;
  }
  return "";
}

std::string Timing(const OrderResult& r) {
  char buf[160];
  std::snprintf(buf, sizeof buf, "%.3f s (setup %.3f s), bus bandwidth %.2f GB/s", r.seconds,
                r.setup_seconds, r.seconds > 0 ? r.bus_bytes / r.seconds * 1e-9 : 0.0);
  return buf;
}

void ResultText(const ReplayReport& rep, const OrderResult& r, std::string* out) {
  const std::string head = IsPermute(r) ? "  trial " + std::to_string(r.trial) : r.order + " order";
  *out += head + ": " + OutcomeName(r.outcome) + " \u2014 " + Verdict(r) + "\n";
  const std::string ind = IsPermute(r) ? "    " : "  ";
  if (IsPermute(r)) {  // one line per trial; the full lists are in --json
    if (r.moved_calls || r.outcome != Outcome::kRight)
      *out += ind + std::to_string(r.moved_calls) + " calls moved, " +
              std::to_string(r.wrong_calls) + " wrong, " + std::to_string(r.stuck.size()) +
              " stuck" + (r.order_json.empty() ? "" : " (its order: --json, \"order_file\")") +
              "\n";
    for (size_t i = 1; i < r.explanation.size(); ++i) *out += ind + r.explanation[i] + "\n";
    return;
  }
  *out += ind + std::to_string(r.calls) + " calls replayed, " + std::to_string(r.checked_calls) +
          " checked, " + std::to_string(r.wrong_calls) + " wrong (" +
          std::to_string(r.wrong_elements) + " elements)";
  if (r.moved_calls)
    *out += ", " + std::to_string(r.moved_calls) + " moved from their recorded place";
  *out += "\n";
  if (rep.include_timing) *out += ind + "time: " + Timing(r) + "\n";
  for (size_t i = 1; i < r.explanation.size(); ++i) *out += ind + r.explanation[i] + "\n";
  if (r.reproduced)
    *out += ind + "reproduced the recorded outputs: " + (*r.reproduced ? "yes" : "no") + " (" +
            std::to_string(r.reproduced_calls) + " calls match, " +
            std::to_string(r.unreproduced_calls) + " differ)\n";
  const size_t shown = std::min(r.wrong.size(), kMaxListedCalls);
  for (size_t i = 0; i < shown; ++i) {
    const WrongCall& w = r.wrong[i];
    *out += ind + "  " + CommText(w.comm_id, w.comm_name) + " seq " + std::to_string(w.seq) +
            " rank " + std::to_string(w.rank) + " " + w.call + " (" + w.logical + "): #wrong " +
            std::to_string(w.wrong_elements) + " of " + std::to_string(w.checked_elements) +
            "; element " + std::to_string(w.first_wrong) + " got " + Num(w.got) + ", expected " +
            Num(w.expected) + (w.args_differ ? "; the ranks' arguments for it differ" : "") + "\n";
  }
  if (r.wrong_calls > shown)
    *out += ind + "  ... and " + std::to_string(r.wrong_calls - shown) + " more wrong calls\n";
  for (const StuckCall& s : r.stuck)
    *out += ind + "  stuck: " + CommText(s.comm_id, s.comm_name) + " seq " + std::to_string(s.seq) +
            " rank " + std::to_string(s.rank) + " " + s.call + ": " + s.why + "\n";
}

// What identifies a replayed call in JSON: communicator, position, rank, the call.
Json CallJson(uint64_t comm, const std::string& name, uint64_t seq, int rank,
              const std::string& call) {
  Json j = Json::Object();
  j.Set("comm", Json::Str(Hex64(comm)));
  j.Set("comm_name", Json::Str(name));
  j.Set("seq", Json::Uint(seq));
  j.Set("rank", Json::Int(rank));
  j.Set("call", Json::Str(call));
  return j;
}

Json WrongJson(const WrongCall& w) {
  Json j = CallJson(w.comm_id, w.comm_name, w.seq, w.rank, w.call);
  j.Set("logical", Json::Str(w.logical));
  j.Set("#wrong", Json::Uint(w.wrong_elements));
  j.Set("checked", Json::Uint(w.checked_elements));
  Json first = Json::Object();
  first.Set("index", Json::Uint(w.first_wrong));
  first.Set("got", Json::Number(w.got));
  first.Set("expected", Json::Number(w.expected));
  j.Set("first_wrong", std::move(first));
  j.Set("args_differ", Json::Bool(w.args_differ));
  return j;
}

Json ResultJson(const ReplayReport& rep, const OrderResult& r) {
  Json j = Json::Object();
  j.Set("order", Json::Str(r.order));
  j.Set("trial", IsPermute(r) ? Json::Int(r.trial) : Json());
  j.Set("trial_seed", IsPermute(r) ? Json::Uint(r.trial_seed) : Json());
  j.Set("outcome", Json::Str(OutcomeName(r.outcome)));
  j.Set("verdict", Json::Str(Verdict(r)));
  j.Set("error", r.error.empty() ? Json() : Json::Str(r.error));
  j.Set("calls", Json::Uint(r.calls));
  j.Set("checked_calls", Json::Uint(r.checked_calls));
  j.Set("wrong_calls", Json::Uint(r.wrong_calls));
  j.Set("#wrong", Json::Uint(r.wrong_elements));
  j.Set("steps", Json::Uint(r.steps));
  j.Set("wrong_steps", Json::Uint(r.wrong_steps));
  Json list = Json::Array();
  for (uint64_t step : r.wrong_step_list) list.Push(Json::Uint(step));
  j.Set("wrong_step_list", std::move(list));
  j.Set("moved_calls", Json::Uint(r.moved_calls));
  j.Set("reproduced", r.reproduced ? Json::Bool(*r.reproduced) : Json());
  j.Set("reproduced_calls", Json::Uint(r.reproduced_calls));
  j.Set("unreproduced_calls", Json::Uint(r.unreproduced_calls));
  Json expl = Json::Array();
  for (const std::string& e : r.explanation) expl.Push(Json::Str(e));
  j.Set("explanation", std::move(expl));
  Json wrong = Json::Array();
  for (const WrongCall& w : r.wrong) wrong.Push(WrongJson(w));
  j.Set("wrong", std::move(wrong));
  Json stuck = Json::Array();
  for (const StuckCall& s : r.stuck) {
    Json o = CallJson(s.comm_id, s.comm_name, s.seq, s.rank, s.call);
    o.Set("why", Json::Str(s.why));
    stuck.Push(std::move(o));
  }
  j.Set("stuck", std::move(stuck));
  if (!r.order_json.empty()) {
    auto parsed = Json::Parse(r.order_json);
    j.Set("order_file", parsed.ok() ? std::move(*parsed) : Json());
  }
  if (rep.include_timing) {
    Json t = Json::Object();
    t.Set("seconds", Json::Number(r.seconds));
    t.Set("setup_seconds", Json::Number(r.setup_seconds));
    t.Set("bus_bytes", Json::Number(r.bus_bytes));
    t.Set("bus_gbps", Json::Number(r.seconds > 0 ? r.bus_bytes / r.seconds * 1e-9 : 0));
    j.Set("timing", std::move(t));
  }
  return j;
}

}  // namespace

const char* OutcomeName(Outcome o) {
  switch (o) {
    case Outcome::kRight:
      return "right";
    case Outcome::kWrong:
      return "wrong";
    case Outcome::kHang:
      return "hang";
    case Outcome::kError:
      return "error";
  }
  return "?";
}

int ReplayReport::ExitCode() const {
  if (secondary) return secondary_exit_code;
  int code = 0;
  for (const OrderResult& r : results) {
    if (r.outcome == Outcome::kError) return 2;
    if (r.outcome != Outcome::kRight) code = 1;
  }
  return code;
}

std::string SummaryLine(const ReplayReport& rep) {
  std::string s;
  std::map<std::string, std::map<Outcome, int>> permute;  // order label -> outcome counts
  std::vector<std::string> labels;
  for (const OrderResult& r : rep.results) {
    if (!IsPermute(r)) {
      labels.push_back(r.order + " order: " + Verdict(r));
      continue;
    }
    if (!permute.count(r.order)) labels.push_back("\x01" + r.order);
    permute[r.order][r.outcome]++;
  }
  for (const std::string& l : labels) {
    if (!s.empty()) s += "; ";
    if (l[0] != '\x01') {
      s += l;
      continue;
    }
    const auto& counts = permute[l.substr(1)];
    int total = 0;
    for (const auto& [o, n] : counts) total += n;
    auto n = [&](Outcome o) {
      auto it = counts.find(o);
      return it == counts.end() ? 0 : it->second;
    };
    s += l.substr(1) + ": " + std::to_string(n(Outcome::kWrong)) + " of " + std::to_string(total) +
         " trials wrong, " + std::to_string(n(Outcome::kHang)) + " hang";
    if (n(Outcome::kError)) s += ", " + std::to_string(n(Outcome::kError)) + " error";
  }
  if (rep.left_out_calls > 0)
    s += "; of an incomplete trace: only the calls every rank's file holds were replayed (" +
         std::to_string(rep.left_out_calls) + " left out, see the notes)";
  return s;
}

std::string FormatText(const ReplayReport& rep) {
  std::string out = "ncclrr replay " + rep.trace + ": " + std::to_string(rep.ranks) + " rank(s), " +
                    std::to_string(rep.comms) + " communicator(s), " + std::to_string(rep.calls) +
                    " calls; data " +
                    (rep.options.data == DataMode::kCaptured ? "captured" : "synthetic") +
                    " (seed " + std::to_string(rep.options.seed) + ")" +
                    (rep.options.verify ? "" : ", not verified (--no-verify)") + "\n";
  if (!rep.mode.empty()) out += "mode: " + rep.mode + "\n";
  for (const std::string& w : rep.warnings) out += "note: " + w + "\n";
  std::string last_permute;
  for (const OrderResult& r : rep.results) {
    if (IsPermute(r) && r.order != last_permute) {
      out += r.order + ": seeded reorderings of the calls the trace shows to be unordered\n";
      last_permute = r.order;
    }
    ResultText(rep, r, &out);
  }
  out += "summary: " + SummaryLine(rep) + "\n";
  return out;
}

std::string ErrorJson(const std::string& message) {
  Json j = Json::Object();
  j.Set("error", Json::Str(message));
  j.Set("exit_code", Json::Int(2));
  return j.Serialize(0) + "\n";
}

std::string FormatJson(const ReplayReport& rep) {
  Json j = Json::Object();
  j.Set("trace", Json::Str(rep.trace));
  j.Set("backend", Json::Str(rep.options.backend == BackendKind::kHost ? "host" : "nccl"));
  j.Set("data", Json::Str(rep.options.data == DataMode::kCaptured ? "captured" : "synthetic"));
  j.Set("seed", Json::Uint(rep.options.seed));
  j.Set("verify", Json::Bool(rep.options.verify));
  j.Set("timeout_s", Json::Number(rep.options.timeout_s));
  j.Set("mode", Json::Str(rep.mode));
  Json v = Json::Object();
  v.Set("recorded", Json::Int(rep.recorded_nccl_version));
  v.Set("replay", Json::Int(rep.replay_nccl_version));
  j.Set("nccl_version", std::move(v));
  j.Set("ranks", Json::Uint(rep.ranks));
  j.Set("communicators", Json::Uint(rep.comms));
  j.Set("trace_calls", Json::Uint(rep.calls));
  j.Set("left_out_calls", Json::Uint(rep.left_out_calls));
  Json warnings = Json::Array();
  for (const std::string& w : rep.warnings) warnings.Push(Json::Str(w));
  j.Set("notes", std::move(warnings));
  Json results = Json::Array();
  for (const OrderResult& r : rep.results) results.Push(ResultJson(rep, r));
  j.Set("results", std::move(results));
  j.Set("summary", Json::Str(SummaryLine(rep)));
  j.Set("exit_code", Json::Int(rep.ExitCode()));
  return j.Serialize(2) + "\n";
}

}  // namespace ncclrr::replay
