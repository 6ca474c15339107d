// `ncclrr demo`: the motivating bug end to end. Two ranks reduce two same-size gradients in
// different orders in some steps (TensorFlow's nccl_ops.all_sum), so NCCL pairs rank 0's A with
// rank 1's B: wrong sums, no error. The demo records the job, shows the damage, lets `check`
// explain it, proves it with `replay` (recorded order: wrong; canonical order: right), exports
// a Perfetto timeline and renders the viewer.
#include <cstdio>
#include <filesystem>

#include "command.h"
#include "demo_steps.h"
#include "ncclrr/base/args.h"

namespace ncclrr::cli {
namespace {

namespace fs = std::filesystem;

void Heading(int n, const char* text) {
  std::printf("\n== %d. %s\n", n, text);
  std::fflush(stdout);
}

class DemoCommand : public Command {
 public:
  const char* name() const override { return "demo"; }
  const char* synopsis() const override { return "[--backend host|nccl] [-o DIR]"; }
  const char* help() const override {
    return "Runs the motivating bug end to end on the host NCCL (default) or real NCCL and\n"
           "GPUs (--backend nccl): records `ncclrr-example swap-same-size`, checks the trace,\n"
           "replays it in the recorded and the canonical order, exports a Perfetto timeline and\n"
           "renders the viewer to a PNG (or opens it when a display is present). Everything\n"
           "goes under DIR (default ./ncclrr-demo), which is replaced.";
  }
  int Run(const std::vector<std::string>& raw) override {
    Args args("ncclrr demo", raw);
    args.Option("--backend").Option("-o");
    args.Parse();
    const std::string backend = args.GetOr("--backend", "host");
    if (backend != "host" && backend != "nccl")
      throw UsageError("--backend must be host or nccl, got '" + backend + "'");
    const fs::path dir = fs::absolute(args.GetOr("-o", "ncclrr-demo"));
    std::error_code ec;
    fs::remove_all(dir, ec);
    fs::create_directories(dir, ec);
    if (ec) {
      std::fprintf(stderr, "ncclrr demo: cannot create %s: %s\n", dir.c_str(),
                   ec.message().c_str());
      return kExitError;
    }
    const std::string bin = SelfDir();
    const std::string self = bin + "/ncclrr";
    const std::string trace = (dir / "trace").string();

    Heading(1,
            "record: ncclrr-example swap-same-size, 2 ranks; rank 1 reduces two same-size "
            "gradients in the other order in odd steps");
    StepResult rec =
        RunCaptured({self, "record", "-o", trace, "--", bin + "/ncclrr-example", "swap-same-size",
                     "--ranks", "2", "--steps", "6", "--backend", backend});
    PrintLines(rec.output, {"#wrong", "ncclrr record", "recorded", "error"}, 12);
    if (rec.status != 0 && rec.status != 1) {
      std::fprintf(stderr, "ncclrr demo: recording failed (exit %d)\n%s", rec.status,
                   rec.output.c_str());
      return kExitError;
    }
    const std::string damage = FindLine(rec.output, "total");

    Heading(2, "check: what went wrong, where, and why");
    StepResult chk = RunCaptured({self, "check", trace});
    PrintLines(chk.output, {}, 40);

    Heading(3, "replay --order recorded: the bug, reproduced offline");
    StepResult recorded = RunCaptured({self, "replay", trace, "--order", "recorded"});
    PrintLines(recorded.output, {}, 12);

    Heading(4, "replay --order canonical: every rank in the logical order, the fix");
    StepResult canonical = RunCaptured({self, "replay", trace, "--order", "canonical"});
    PrintLines(canonical.output, {}, 12);

    Heading(5, "export: a timeline for ui.perfetto.dev");
    const std::string perfetto = (dir / "swap-same-size.pftrace").string();
    StepResult exp = RunCaptured({self, "export", trace, "--format", "perfetto", "-o", perfetto});
    PrintLines(exp.output, {}, 4);

    Heading(6, "viewer");
    std::string shot;
    const std::string viewer = bin + "/ncclrr-viewer";
    if (!fs::exists(viewer)) {
      std::printf("   ncclrr-viewer was not built (Qt6 missing: apt-get install qt6-base-dev)\n");
    } else if (std::getenv("DISPLAY") || std::getenv("WAYLAND_DISPLAY")) {
      std::printf("   opening the viewer on %s\n", trace.c_str());
      RunCaptured({"/bin/sh", "-c", "'" + viewer + "' '" + trace + "' >/dev/null 2>&1 &"});
    } else {
      shot = (dir / "swap-same-size.png").string();
      StepResult v = RunCaptured({viewer, trace, "--screenshot", shot, "--select-finding", "0"},
                                 {"QT_QPA_PLATFORM=offscreen"});
      if (v.status != 0) {
        PrintLines(v.output, {}, 6);
        shot.clear();
      }
    }

    std::printf("\n== verdicts\n");
    std::printf("   damage:            %s\n", damage.empty() ? "(see above)" : damage.c_str());
    std::printf("   check:             %s (exit %d)\n",
                chk.status == 1   ? "findings reported"
                : chk.status == 0 ? "no findings"
                                  : "error",
                chk.status);
    std::printf("   replay recorded:   %s (exit %d)\n",
                recorded.status == 1 ? "wrong results reproduced" : "no wrong results",
                recorded.status);
    std::printf("   replay canonical:  %s (exit %d)\n",
                canonical.status == 0 ? "0 wrong: the logical order fixes it" : "still wrong",
                canonical.status);
    std::printf("   perfetto:          %s\n", exp.status == 0 ? perfetto.c_str() : "(failed)");
    if (!shot.empty()) std::printf("   screenshot:        %s\n", shot.c_str());
    // The demo succeeds when the story holds: damage found, reproduced, fixed.
    const bool story = chk.status == 1 && recorded.status == 1 && canonical.status == 0;
    return story ? kExitOk : kExitFindings;
  }
};

}  // namespace
NCCLRR_REGISTER_COMMAND(DemoCommand);
}  // namespace ncclrr::cli
