// `ncclrr diff A B`: two traces of the same program compared per communicator and rank (the
// first divergence of each kind). Exit 0 equivalent, 1 differences, 2 unusable input.
#include <cstdio>
#include <filesystem>
#include <optional>

#include "command.h"
#include "ncclrr/analysis/trace_diff.h"
#include "ncclrr/base/args.h"

namespace ncclrr::cli {
namespace {

class DiffCommand : public Command {
 public:
  const char* name() const override { return "diff"; }
  const char* synopsis() const override { return "A B [--json] [--stable]"; }
  const char* help() const override {
    return "Compares two traces of the same program (a good and a bad run, before and after a\n"
           "change). Communicators are matched by how they were made (ids, pids, hosts and\n"
           "addresses differ between runs), ranks by communicator rank; per communicator it\n"
           "prints the first divergence of each kind: order, arguments, missing_call,\n"
           "extra_call, call_site (--stacks), data (--sketch: inputs agree, outputs do not),\n"
           "timing (--gpu-timing: gross GPU-time outliers), unmatched_comm.\n"
           "--json prints {\"runs\",\"comms\",\"divergences\",\"notes\",\"summary\"}; --stable\n"
           "leaves out paths and file positions. Exit 0 equivalent, 1 differences, 2 unusable\n"
           "input. docs/diff.md explains each kind.";
  }
  int Run(const std::vector<std::string>& raw) override {
    Args args("ncclrr diff", raw);
    args.Flag("--json").Flag("--stable");
    args.Parse();
    if (args.positional().size() != 2)
      throw UsageError("diff: expected two trace directories (A B), got " +
                       std::to_string(args.positional().size()));
    const std::string& dir_a = args.positional()[0];
    const std::string& dir_b = args.positional()[1];
    auto a = Load(dir_a, "A");
    if (!a) return kExitError;
    auto b = Load(dir_b, "B");
    if (!b) return kExitError;
    analysis::DiffOptions o;
    o.stable = args.Has("--stable");
    const analysis::DiffReport report = analysis::DiffTraces(*a, *b, o);
    analysis::DiffFormatOptions fo;
    fo.stable = o.stable;
    fo.path_a = dir_a;
    fo.path_b = dir_b;
    const std::string out = args.Has("--json") ? analysis::FormatDiffJson(report, *a, *b, fo)
                                               : analysis::FormatDiffText(report, *a, *b, fo);
    std::fwrite(out.data(), 1, out.size(), stdout);
    return report.ExitCode();
  }

 private:
  static std::optional<analysis::TraceModel> Load(const std::string& dir, const char* which) {
    std::error_code ec;
    if (!std::filesystem::exists(dir, ec)) {
      std::fprintf(stderr,
                   "ncclrr diff: run %s: '%s' does not exist; expected a trace directory "
                   "written by `ncclrr record -o DIR`\n",
                   which, dir.c_str());
      return std::nullopt;
    }
    auto model = analysis::TraceModel::Load(dir);
    if (!model.ok()) {
      std::fprintf(stderr, "ncclrr diff: run %s: %s\n", which, model.status().message().c_str());
      return std::nullopt;
    }
    return std::move(model.value());
  }
};

}  // namespace
NCCLRR_REGISTER_COMMAND(DiffCommand);
}  // namespace ncclrr::cli
