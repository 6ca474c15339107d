// `ncclrr replay DIR`: re-executes a trace under chosen orderings and verifies every call against
// an fp64 reference of what its logical call should combine (docs/replay.md). Exit 0 every call
// right, 1 any wrong result or hang, 2 error. The report goes to stdout (byte-identical between
// two replays of one trace), progress to stderr.
#if __has_include("ncclrr/replay/replayer.h")
#include <algorithm>
#include <cstdio>
#include <cstdlib>

#include "command.h"
#include "ncclrr/analysis/model.h"
#include "ncclrr/base/args.h"
#include "ncclrr/replay/replayer.h"

namespace ncclrr::cli {
namespace {

using replay::BackendKind;
using replay::DataMode;

class ReplayCommand : public Command {
 public:
  const char* name() const override { return "replay"; }
  const char* synopsis() const override {
    return "DIR [--backend host|nccl] [--order recorded|canonical|permute[:N]|file:F] "
           "[--data synthetic|captured] [--seed S] [--timeout SEC] [--no-verify] [--mpi] "
           "[--processes] [--json]";
  }
  const char* help() const override {
    return "Re-executes every rank's calls of a trace and checks each output against an fp64\n"
           "reference of what its logical call should combine. --order: recorded (reproduce),\n"
           "canonical (every rank follows the logical order: the fix), permute[:N] (N seeded\n"
           "reorderings of calls the trace shows to be unordered; default 8), file:F (an order\n"
           "file, docs/replay.md); several separated by commas. --backend host (default) replays\n"
           "offline on the host NCCL; nccl uses the real NCCL on the GPUs there are (more ranks\n"
           "than GPUs: one process per rank, several sharing a GPU). --data synthetic\n"
           "(default, seeded by --seed) or captured (buffers recorded with --capture).\n"
           "--timeout SEC (default 30): no progress for that long aborts the communicators and\n"
           "reports where each rank was stuck. --no-verify: pure speed run. --mpi: one process\n"
           "per rank under mpirun (nccl backend). --processes: one child process per rank.\n"
           "Exit 0 all right, 1 wrong or hang, 2 error.";
  }

  int Run(const std::vector<std::string>& raw) override {
    try {
      return Replay(raw);
    } catch (const UsageError& e) {
      // docs/replay.md: under --json, usage errors are JSON too (main prints the text).
      if (std::find(raw.begin(), raw.end(), "--json") != raw.end())
        std::fputs(replay::ErrorJson(e.what()).c_str(), stdout);
      throw;
    }
  }

 private:
  int Replay(const std::vector<std::string>& raw) {
    Args args("ncclrr replay", raw);
    args.Option("--backend")
        .Option("--order")
        .Option("--data")
        .Option("--seed")
        .Option("--timeout");
    args.Flag("--no-verify").Flag("--mpi").Flag("--processes").Flag("--json");
    args.Parse();
    const std::string& dir = args.Positional(0, "trace directory (DIR)");
    replay::ReplayOptions o;
    const std::string backend = args.GetOr("--backend", "host");
    if (backend != "host" && backend != "nccl")
      throw UsageError("--backend must be host or nccl, got '" + backend + "'");
    o.backend = backend == "host" ? BackendKind::kHost : BackendKind::kNccl;
    auto orders = replay::ParseOrderSpecs(args.GetOr("--order", "recorded"));
    if (!orders.ok()) throw UsageError(orders.status().message());
    o.orders = *orders;
    const std::string data = args.GetOr("--data", "synthetic");
    if (data != "synthetic" && data != "captured")
      throw UsageError("--data must be synthetic or captured, got '" + data + "'");
    o.data = data == "synthetic" ? DataMode::kSynthetic : DataMode::kCaptured;
    const long long seed = args.GetInt("--seed", 1);
    if (seed < 0) throw UsageError("--seed must be a non-negative number");
    o.seed = static_cast<uint64_t>(seed);
    const std::string timeout = args.GetOr("--timeout", "30");
    char* end = nullptr;
    o.timeout_s = std::strtod(timeout.c_str(), &end);
    if (end == timeout.c_str() || *end != '\0' || !(o.timeout_s > 0))
      throw UsageError("--timeout must be a positive number of seconds, got '" + timeout + "'");
    o.verify = !args.Has("--no-verify");
    o.mpi = args.Has("--mpi");
    o.processes = args.Has("--processes");
    if (o.mpi && o.processes) throw UsageError("--mpi and --processes exclude each other");
    o.command_line = {"replay"};
    o.command_line.insert(o.command_line.end(), raw.begin(), raw.end());
    if (!replay::IsReplayChild())  // children keep quiet: the parent reports
      o.progress = [](std::string_view s) {
        std::fprintf(stderr, "ncclrr replay: %.*s\n", static_cast<int>(s.size()), s.data());
      };
    const bool json = args.Has("--json");

    analysis::LoadOptions lo;
    lo.progress = o.progress;
    auto model = analysis::TraceModel::Load(dir, lo);
    if (!model.ok()) return Fail(json, model.status().message());
    auto report = replay::Replay(*model, o);
    if (!report.ok()) return Fail(json, report.status().message());
    if (report->secondary) return report->ExitCode();  // the root process prints the report
    const std::string out = json ? replay::FormatJson(*report) : replay::FormatText(*report);
    std::fwrite(out.data(), 1, out.size(), stdout);
    std::fflush(stdout);
    return report->ExitCode();
  }

  static int Fail(bool json, const std::string& message) {
    std::fprintf(stderr, "ncclrr replay: %s\n", message.c_str());
    if (json) std::fputs(replay::ErrorJson(message).c_str(), stdout);
    return kExitError;
  }
};

}  // namespace
NCCLRR_REGISTER_COMMAND(ReplayCommand);
}  // namespace ncclrr::cli

#else  // the replayer is not part of this build (no nccl.h): the verb says so and exits 2
#include "pending_command.h"

namespace ncclrr::cli {
NCCLRR_PENDING_COMMAND(
    Replay, "replay",
    "DIR [--backend host|nccl] [--order recorded|canonical|permute[:N]|file:F] "
    "[--data synthetic|captured] [--seed S] [--timeout SEC] [--no-verify] [--mpi] [--processes] "
    "[--json]",
    "re-executes a trace; this build has no replayer (nccl.h was not found)")
}  // namespace ncclrr::cli
#endif
