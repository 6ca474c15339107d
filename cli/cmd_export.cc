// `ncclrr export DIR [--format perfetto|chrome-json|flight-recorder[-json]] -o PATH`: the trace for
// other tools: Perfetto's protobuf trace or Chrome trace JSON for ui.perfetto.dev (flows across
// ranks, findings as instant events), or PyTorch Flight Recorder dumps, one per rank.
#include <cstdio>
#include <functional>

#include "command.h"
#include "ncclrr/analysis/check.h"
#include "ncclrr/analysis/flight_recorder_export.h"
#include "ncclrr/analysis/perfetto_export.h"
#include "ncclrr/base/args.h"
#include "read_notes.h"

namespace ncclrr::cli {
namespace {

class ExportCommand : public Command {
 public:
  const char* name() const override { return "export"; }
  const char* synopsis() const override {
    return "DIR [--format perfetto|chrome-json|flight-recorder|flight-recorder-json] -o PATH "
           "[--no-flows]";
  }
  const char* help() const override {
    return "Writes the trace in a format other tools read:\n"
           "  perfetto (default)  Perfetto's protobuf trace (-o FILE.pftrace), for\n"
           "                      ui.perfetto.dev and trace_processor: a process per rank, a\n"
           "                      track per stream, a slice per call on one timeline (clocks\n"
           "                      aligned across hosts), flows linking the calls NCCL paired\n"
           "                      (same comm and seq) across ranks, the findings of `ncclrr\n"
           "                      check` as instant events. About a third of the JSON's size.\n"
           "  chrome-json         the same as Chrome trace JSON (-o FILE.json; also\n"
           "                      chrome://tracing).\n"
           "  flight-recorder     PyTorch Flight Recorder dumps, pickled as FR writes them by\n"
           "                      default (version 2.10): -o is a directory that gets one\n"
           "                      nccl_trace_rank_N per rank (communicators as process groups,\n"
           "                      `state` from GPU times when recorded), for fr_trace\n"
           "                      (python -m torch.distributed.flight_recorder.fr_trace DIR)\n"
           "                      and other tools that read FR dumps.\n"
           "  flight-recorder-json  the same in FR's JSON variant (dump_json).\n"
           "--no-flows leaves the flow arrows out of perfetto and chrome-json (smaller files).";
  }
  int Run(const std::vector<std::string>& raw) override {
    Args args("ncclrr export", raw);
    args.Option("--format").Option("-o").Flag("--no-flows");
    args.Parse();
    const std::string& dir = args.Positional(0, "trace directory (DIR)");
    const std::string format = args.GetOr("--format", "perfetto");
    const bool fr = format == "flight-recorder" || format == "flight-recorder-json";
    if (format != "perfetto" && format != "chrome-json" && !fr)
      throw UsageError(
          "--format must be perfetto, chrome-json, flight-recorder or flight-recorder-json, got '" +
          format + "'");
    const auto path = args.Get("-o");
    if (!path)
      throw UsageError(fr ? "-o DIR is required (the directory that gets one dump per rank)"
                          : "-o FILE is required (where to write the exported trace)");
    auto model = analysis::TraceModel::Load(dir);
    if (!model.ok()) {
      std::fprintf(stderr, "ncclrr export: %s\n", model.status().message().c_str());
      return kExitError;
    }
    PrintReadNotes("export", model->dir());
    if (fr)
      return FlightRecorder(*model, *path,
                            format == "flight-recorder" ? analysis::FlightRecorderEncoding::kPickle
                                                        : analysis::FlightRecorderEncoding::kJson);
    return Timeline(*model, format, *path, !args.Has("--no-flows"));
  }

 private:
  static int Fail(const Status& s) {
    std::fprintf(stderr, "ncclrr export: %s\n", s.message().c_str());
    return kExitError;
  }

  static int FlightRecorder(const analysis::TraceModel& model, const std::string& out_dir,
                            analysis::FlightRecorderEncoding encoding) {
    analysis::FlightRecorderStats st;
    const Status s = analysis::ExportFlightRecorder(model, out_dir, encoding, &st);
    if (!s.ok()) return Fail(s);
    std::printf("wrote %llu Flight Recorder dumps (%llu entries, %.1f MB) into %s\n",
                static_cast<unsigned long long>(st.files),
                static_cast<unsigned long long>(st.entries), static_cast<double>(st.bytes) / 1e6,
                out_dir.c_str());
    return kExitOk;
  }

  static int Timeline(const analysis::TraceModel& model, const std::string& format,
                      const std::string& path, bool flows) {
    const analysis::Report report = analysis::Check(model);
    analysis::ExportOptions eo;
    eo.flows = flows;
    analysis::ExportStats st;
    const auto write = format == "perfetto" ? analysis::ExportPerfetto : analysis::ExportChromeJson;
    const Status s = analysis::ExportToFile(
        path, [&](std::ostream& out) { return write(model, &report, eo, out, &st); });
    if (!s.ok()) return Fail(s);
    std::printf(
        "wrote %s: %s, %llu %s, %llu flows, %llu findings, %.1f MB; open it in "
        "https://ui.perfetto.dev\n",
        path.c_str(), format == "perfetto" ? "Perfetto protobuf" : "Chrome trace JSON",
        static_cast<unsigned long long>(st.events), format == "perfetto" ? "packets" : "events",
        static_cast<unsigned long long>(st.flows),
        static_cast<unsigned long long>(report.findings.size()),
        static_cast<double>(st.bytes) / 1e6);
    return kExitOk;
  }
};

}  // namespace
NCCLRR_REGISTER_COMMAND(ExportCommand);
}  // namespace ncclrr::cli
