// `ncclrr import-nccl-log LOG... -o DIR`: NCCL's and RCCL's own INFO logs into an ncclrr trace.
#include <cstdio>

#include "command.h"
#include "ncclrr/analysis/nccl_log_import.h"
#include "ncclrr/base/args.h"

namespace ncclrr::cli {
namespace {

class ImportNcclLogCommand : public Command {
 public:
  const char* name() const override { return "import-nccl-log"; }
  const char* synopsis() const override { return "LOG... -o DIR"; }
  const char* help() const override {
    return "Turns NCCL or RCCL console logs (NCCL_DEBUG=INFO with NCCL_DEBUG_SUBSYS=COLL, best\n"
           "with INIT too) into a trace directory that `check`, `replay --backend host`, `dump`\n"
           "and the viewer read. LOG is one file per process (NCCL_DEBUG_FILE) or a console log\n"
           "of many processes interleaved, with or without what a launcher puts in front of\n"
           "NCCL's 'host:pid:tid [dev] NCCL INFO' prefix ([rank3]:, [default0]:, Ray's\n"
           "(RayTrainWorker …), Slurm's '0: ', timestamps). NCCL 2.4 to 2.30 and RCCL; tuning and\n"
           "RCCL '##' kernel-trace lines are ignored. Logs of only some hosts of a job are fine.\n"
           "\n"
           "Communicators and ranks come from the 'Init COMPLETE' lines (commId) when the log has\n"
           "them; otherwise they are inferred from [nranks=N], the communicator handle of each\n"
           "process and the order of first use, RCCL's globalrank, torchrun's [rankN] prefix and\n"
           "the CUDA device. The import prints how each communicator was inferred and how sure\n"
           "that is; `check` repeats it as 'inferred' notes and names the ranks no log shows.\n"
           "Calls are aligned by opCount where it increases, else by log order; times are log\n"
           "order. docs/import.md says which evidence gives which checks.\n"
           "\n"
           "Exit status: 0 imported, 2 nothing to import or an error.";
  }
  int Run(const std::vector<std::string>& raw) override {
    Args args("ncclrr import-nccl-log", raw);
    args.Option("-o");
    args.Parse();
    if (args.positional().empty()) throw UsageError("missing LOG file(s)");
    const auto out = args.Get("-o");
    if (!out) throw UsageError("missing -o DIR (where to write the trace)");
    auto r = ImportNcclLogs(args.positional(), *out);
    if (!r.ok()) {
      std::fprintf(stderr, "ncclrr import-nccl-log: %s\n", r.status().message().c_str());
      return kExitError;
    }
    for (const auto& w : r->warnings) std::fprintf(stderr, "warning: %s\n", w.c_str());
    std::printf(
        "imported %llu calls of %llu process(es) on %llu communicator(s) from %llu lines into "
        "%zu trace file(s) in %s\n",
        static_cast<unsigned long long>(r->calls), static_cast<unsigned long long>(r->processes),
        static_cast<unsigned long long>(r->comms), static_cast<unsigned long long>(r->lines),
        r->files.size(), out->c_str());
    for (const auto& n : r->notes) std::printf("inferred: %s\n", n.c_str());
    return kExitOk;
  }
};

}  // namespace
NCCLRR_REGISTER_COMMAND(ImportNcclLogCommand);
}  // namespace ncclrr::cli
