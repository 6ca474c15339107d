#include "ncclrr/replay/report.h"

#include <cmath>
#include <cstdio>
#include <map>
#include <nlohmann/json.hpp>

#include "ncclrr/base/json_writer.h"
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
void CallMembers(JsonWriter& w, uint64_t comm, const std::string& name, uint64_t seq, int rank,
                 const std::string& call) {
  w.Key("comm").Str(Hex64(comm)).Key("comm_name").Str(name);
  w.Key("seq").Uint(seq).Key("rank").Int(rank).Key("call").Str(call);
}

void WriteWrong(JsonWriter& w, const WrongCall& c) {
  w.BeginObject();
  CallMembers(w, c.comm_id, c.comm_name, c.seq, c.rank, c.call);
  w.Key("logical").Str(c.logical);
  w.Key("#wrong").Uint(c.wrong_elements).Key("checked").Uint(c.checked_elements);
  w.Key("first_wrong").BeginObject();
  w.Key("index").Uint(c.first_wrong);
  w.Key("got").ExactDouble(c.got).Key("expected").ExactDouble(c.expected);
  w.EndObject();
  w.Key("args_differ").Bool(c.args_differ);
  w.EndObject();
}

// A trial's order is kept as the compact file text (OrderToJson); the report lays it out like its
// other members, so it is read back and written member by member, in the file's order.
void WriteParsed(JsonWriter& w, const nlohmann::ordered_json& v) {
  using Type = nlohmann::ordered_json::value_t;
  switch (v.type()) {
    case Type::boolean:
      w.Bool(v.get<bool>());
      return;
    case Type::number_integer:
      w.Int(v.get<int64_t>());
      return;
    case Type::number_unsigned:
      w.Uint(v.get<uint64_t>());
      return;
    case Type::number_float:
      w.ExactDouble(v.get<double>());
      return;
    case Type::string:
      w.Str(v.get_ref<const std::string&>());
      return;
    case Type::array:
      w.BeginArray();
      for (const auto& item : v) WriteParsed(w, item);
      w.EndArray();
      return;
    case Type::object:
      w.BeginObject();
      for (const auto& [key, value] : v.items()) {
        w.Key(key);
        WriteParsed(w, value);
      }
      w.EndObject();
      return;
    case Type::null:
    default:  // binary and discarded values do not come out of order files
      w.Null();
      return;
  }
}

// The order a failed trial used, as the file to replay it with (null if it does not parse).
void WriteOrderFile(JsonWriter& w, const std::string& order_json) {
  const auto parsed =
      nlohmann::ordered_json::parse(order_json, nullptr, /*allow_exceptions=*/false);
  if (parsed.is_discarded())
    w.Null();
  else
    WriteParsed(w, parsed);
}

void WriteTiming(JsonWriter& w, const OrderResult& r) {
  w.BeginObject();
  w.Key("seconds").ExactDouble(r.seconds).Key("setup_seconds").ExactDouble(r.setup_seconds);
  w.Key("bus_bytes").ExactDouble(r.bus_bytes);
  w.Key("bus_gbps").ExactDouble(r.seconds > 0 ? r.bus_bytes / r.seconds * 1e-9 : 0);
  w.EndObject();
}

void WriteResult(JsonWriter& w, const ReplayReport& rep, const OrderResult& r) {
  w.BeginObject();
  w.Key("order").Str(r.order);
  if (IsPermute(r))
    w.Key("trial").Int(r.trial).Key("trial_seed").Uint(r.trial_seed);
  else
    w.Key("trial").Null().Key("trial_seed").Null();
  w.Key("outcome").Str(OutcomeName(r.outcome)).Key("verdict").Str(Verdict(r));
  if (r.error.empty())
    w.Key("error").Null();
  else
    w.Key("error").Str(r.error);
  w.Key("calls").Uint(r.calls).Key("checked_calls").Uint(r.checked_calls);
  w.Key("wrong_calls").Uint(r.wrong_calls).Key("#wrong").Uint(r.wrong_elements);
  w.Key("steps").Uint(r.steps).Key("wrong_steps").Uint(r.wrong_steps);
  w.Key("wrong_step_list").BeginArray();
  for (uint64_t step : r.wrong_step_list) w.Uint(step);
  w.EndArray();
  w.Key("moved_calls").Uint(r.moved_calls);
  if (r.reproduced)
    w.Key("reproduced").Bool(*r.reproduced);
  else
    w.Key("reproduced").Null();
  w.Key("reproduced_calls").Uint(r.reproduced_calls);
  w.Key("unreproduced_calls").Uint(r.unreproduced_calls);
  w.Key("explanation").BeginArray();
  for (const std::string& e : r.explanation) w.Str(e);
  w.EndArray();
  w.Key("wrong").BeginArray();
  for (const WrongCall& c : r.wrong) WriteWrong(w, c);
  w.EndArray();
  w.Key("stuck").BeginArray();
  for (const StuckCall& s : r.stuck) {
    w.BeginObject();
    CallMembers(w, s.comm_id, s.comm_name, s.seq, s.rank, s.call);
    w.Key("why").Str(s.why);
    w.EndObject();
  }
  w.EndArray();
  if (!r.order_json.empty()) WriteOrderFile(w.Key("order_file"), r.order_json);
  if (rep.include_timing) WriteTiming(w.Key("timing"), r);
  w.EndObject();
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
  std::string out;
  JsonWriter(&out).BeginObject().Key("error").Str(message).Key("exit_code").Int(2).EndObject();
  return out + "\n";
}

std::string FormatJson(const ReplayReport& rep) {
  std::string out;
  JsonWriter w(&out, /*indent=*/2);
  w.BeginObject();
  w.Key("trace").Str(rep.trace);
  w.Key("backend").Str(rep.options.backend == BackendKind::kHost ? "host" : "nccl");
  w.Key("data").Str(rep.options.data == DataMode::kCaptured ? "captured" : "synthetic");
  w.Key("seed").Uint(rep.options.seed).Key("verify").Bool(rep.options.verify);
  w.Key("timeout_s").ExactDouble(rep.options.timeout_s);
  w.Key("mode").Str(rep.mode);
  w.Key("nccl_version").BeginObject();
  w.Key("recorded").Int(rep.recorded_nccl_version).Key("replay").Int(rep.replay_nccl_version);
  w.EndObject();
  w.Key("ranks").Uint(rep.ranks).Key("communicators").Uint(rep.comms);
  w.Key("trace_calls").Uint(rep.calls).Key("left_out_calls").Uint(rep.left_out_calls);
  w.Key("notes").BeginArray();
  for (const std::string& note : rep.warnings) w.Str(note);
  w.EndArray();
  w.Key("results").BeginArray();
  for (const OrderResult& r : rep.results) WriteResult(w, rep, r);
  w.EndArray();
  w.Key("summary").Str(SummaryLine(rep)).Key("exit_code").Int(rep.ExitCode());
  w.EndObject();
  return out + "\n";
}

}  // namespace ncclrr::replay
