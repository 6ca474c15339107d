// `ncclrr import-fr DIR|FILE... -o DIR`: PyTorch Flight Recorder dumps into an ncclrr trace.
#include <cstdio>

#include "command.h"
#include "ncclrr/analysis/fr_import.h"
#include "ncclrr/base/args.h"

namespace ncclrr::cli {
namespace {

class ImportFrCommand : public Command {
 public:
  const char* name() const override { return "import-fr"; }
  const char* synopsis() const override { return "DIR|FILE... -o DIR"; }
  const char* help() const override {
    return "Turns PyTorch Flight Recorder dumps (one per rank, pickle or JSON, dump versions\n"
           "2.0 to 2.10; written on a watchdog timeout with TORCH_NCCL_TRACE_BUFFER_SIZE=N\n"
           "TORCH_NCCL_DUMP_ON_TIMEOUT=1, or by torch._C._distributed_c10d._dump_nccl_trace())\n"
           "into a trace directory, one process file per rank, that `check`, `replay --backend\n"
           "host`, `dump` and the viewer read. Give the dump files, or a directory holding\n"
           "them: the rank is the number that ends each name (nccl_trace_rank_3).\n"
           "Process groups become communicators (ranks from pg_config); an entry not completed\n"
           "when dumped is a call in flight (hang evidence); the Python frames are the call\n"
           "site `check` shows. FR records no reduction op, root, buffers or streams: checks\n"
           "that need them are skipped, never guessed. See docs/import-fr.md.";
  }
  int Run(const std::vector<std::string>& raw) override {
    Args args("ncclrr import-fr", raw);
    args.Option("-o");
    args.Parse();
    if (args.positional().empty()) throw UsageError("missing dump DIR or FILE(s)");
    const auto out = args.Get("-o");
    if (!out) throw UsageError("missing -o DIR (where to write the trace)");
    auto r = ImportFlightRecorder(args.positional(), *out);
    if (!r.ok()) {
      std::fprintf(stderr, "ncclrr import-fr: %s\n", r.status().message().c_str());
      return kExitError;
    }
    for (const auto& w : r->warnings) std::fprintf(stderr, "warning: %s\n", w.c_str());
    std::printf(
        "imported %llu calls (%llu in flight) on %llu process group(s) from %zu Flight Recorder "
        "dump(s) (version %s) into %s",
        static_cast<unsigned long long>(r->calls), static_cast<unsigned long long>(r->in_flight),
        static_cast<unsigned long long>(r->comms), r->files.size(), r->version.c_str(),
        out->c_str());
    if (r->skipped)
      std::printf("; %llu entries without an NCCL call of their own skipped",
                  static_cast<unsigned long long>(r->skipped));
    std::printf(
        "\nnote: Flight Recorder records no reduction op, root, buffers, streams or device: "
        "check skips redop_mismatch, root_mismatch and the data checks on this trace, and "
        "tells same-shape tensors apart only by their call sites (docs/import-fr.md)\n");
    return kExitOk;
  }
};

}  // namespace
NCCLRR_REGISTER_COMMAND(ImportFrCommand);
}  // namespace ncclrr::cli
