// `ncclrr export DIR --format perfetto -o FILE.json`: the trace as Chrome trace JSON for
// ui.perfetto.dev, with flow arrows across ranks and findings as instant events.
#include <cstdio>

#include "args.h"
#include "command.h"
#include "read_notes.h"
#include "ncclrr/analysis/check.h"
#include "ncclrr/analysis/perfetto_export.h"

namespace ncclrr::cli {
namespace {

class ExportCommand : public Command {
 public:
  const char* name() const override { return "export"; }
  const char* synopsis() const override { return "DIR --format perfetto -o FILE.json"; }
  const char* help() const override {
    return "Writes the trace as Chrome trace JSON that opens in ui.perfetto.dev: a process per\n"
           "rank, a track per stream, a slice per call on one timeline (clocks aligned across\n"
           "hosts), flow arrows linking the same (comm, seq) across ranks, and the findings of\n"
           "`ncclrr check` as instant events. --no-flows leaves the arrows out (smaller files).";
  }
  int Run(const std::vector<std::string>& raw) override {
    Args args("export", raw);
    args.Option("--format").Option("-o").Flag("--no-flows");
    args.Parse();
    const std::string& dir = args.Positional(0, "trace directory (DIR)");
    const std::string format = args.GetOr("--format", "perfetto");
    if (format != "perfetto")
      throw UsageError("--format must be perfetto (Chrome trace JSON), got '" + format + "'");
    const auto path = args.Get("-o");
    if (!path) throw UsageError("-o FILE.json is required (where to write the exported trace)");
    auto model = analysis::TraceModel::Load(dir);
    if (!model.ok()) {
      std::fprintf(stderr, "ncclrr export: %s\n", model.status().message().c_str());
      return kExitError;
    }
    PrintReadNotes("export", model->dir());
    const analysis::Report report = analysis::Check(*model);
    analysis::PerfettoOptions po;
    po.flows = !args.Has("--no-flows");
    analysis::ExportStats st;
    const Status s = analysis::ExportPerfettoFile(*model, &report, po, *path, &st);
    if (!s.ok()) {
      std::fprintf(stderr, "ncclrr export: %s\n", s.message().c_str());
      return kExitError;
    }
    std::printf(
        "wrote %s: %llu events, %llu flows, %llu findings, %.1f MB; open it in "
        "https://ui.perfetto.dev\n",
        path->c_str(), static_cast<unsigned long long>(st.events),
        static_cast<unsigned long long>(st.flows),
        static_cast<unsigned long long>(report.findings.size()),
        static_cast<double>(st.bytes) / 1e6);
    return kExitOk;
  }
};

}  // namespace
NCCLRR_REGISTER_COMMAND(ExportCommand);
}  // namespace ncclrr::cli
