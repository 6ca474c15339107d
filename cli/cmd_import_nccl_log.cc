// `ncclrr import-nccl-log LOG... -o DIR`: NCCL's own INFO logs into an ncclrr trace.
#include <cstdio>

#include "args.h"
#include "command.h"
#include "ncclrr/nccl_log_import.h"

namespace ncclrr::cli {
namespace {

class ImportNcclLogCommand : public Command {
 public:
  const char* name() const override { return "import-nccl-log"; }
  const char* synopsis() const override { return "LOG... -o DIR"; }
  const char* help() const override {
    return "Turns logs written with NCCL_DEBUG=INFO NCCL_DEBUG_SUBSYS=INIT,COLL (one file per\n"
           "process, or several processes mixed, each line prefixed host:pid:tid [dev]) into a\n"
           "trace directory that `check`, `dump` and the viewer read. Communicator ids come\n"
           "from the 'Init COMPLETE' lines (commId); times are log order.";
  }
  int Run(const std::vector<std::string>& raw) override {
    Args args("import-nccl-log", raw);
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
        "imported %llu calls on %llu communicator(s) from %llu lines into %zu trace "
        "file(s) in %s\n",
        static_cast<unsigned long long>(r->calls), static_cast<unsigned long long>(r->comms),
        static_cast<unsigned long long>(r->lines), r->files.size(), out->c_str());
    return kExitOk;
  }
};

}  // namespace
NCCLRR_REGISTER_COMMAND(ImportNcclLogCommand);
}  // namespace ncclrr::cli
