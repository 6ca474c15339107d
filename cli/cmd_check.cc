// `ncclrr check DIR`: cross-rank analysis of a trace (findings as compiler-style diagnostics, or
// JSON). Exit 0 no findings, 1 findings (or notes under --strict), 2 no usable trace.
#include <unistd.h>
#include <cstdio>

#include "command.h"
#include "ncclrr/analysis/check.h"
#include "ncclrr/analysis/report_format.h"
#include "ncclrr/base/args.h"

namespace ncclrr::cli {
namespace {

class CheckCommand : public Command {
 public:
  const char* name() const override { return "check"; }
  const char* synopsis() const override { return "DIR [--json] [--strict] [--stable]"; }
  const char* help() const override {
    return "Explains how the ranks of each communicator disagreed: op/count/dtype/redop/root\n"
           "mismatches, reorderings (order_swap, suspected_swap), missing calls (hangs),\n"
           "p2p mismatches, cross-communicator order, graph, lifecycle and NCCL errors.\n"
           "--json prints {\"findings\",\"notes\",\"summary\"}; --stable leaves out addresses,\n"
           "pids and times; --strict counts notes (incomplete or dropped records) as findings.\n"
           "Exit 0 no findings, 1 findings, 2 no usable trace. docs/check.md explains each kind.";
  }
  int Run(const std::vector<std::string>& raw) override {
    Args args("ncclrr check", raw);
    args.Flag("--json").Flag("--strict").Flag("--stable");
    args.Parse();
    const std::string& dir = args.Positional(0, "trace directory (DIR)");
    analysis::LoadOptions lo;
    // Progress only where a person watches (a terminal), so pipes and goldens stay clean.
    const bool progress = isatty(STDERR_FILENO);
    if (progress)
      lo.progress = [](std::string_view s) {
        std::fprintf(stderr, "\rncclrr check: %.*s\033[K", static_cast<int>(s.size()), s.data());
      };
    auto model = analysis::TraceModel::Load(dir, lo);
    if (progress) std::fprintf(stderr, "\r\033[K");
    if (!model.ok()) {
      std::fprintf(stderr, "ncclrr check: %s\n", model.status().message().c_str());
      return kExitError;
    }
    analysis::CheckOptions co;
    co.stable = args.Has("--stable");
    co.progress = lo.progress;
    const analysis::Report report = analysis::Check(*model, co);
    if (progress) std::fprintf(stderr, "\r\033[K");
    analysis::FormatOptions fo;
    fo.stable = co.stable;
    fo.strict = args.Has("--strict");
    const std::string out = args.Has("--json") ? analysis::FormatJson(report, &*model, fo)
                                               : analysis::FormatText(report, &*model, fo);
    std::fwrite(out.data(), 1, out.size(), stdout);
    return report.ExitCode(fo.strict);
  }
};

}  // namespace
NCCLRR_REGISTER_COMMAND(CheckCommand);
}  // namespace ncclrr::cli
