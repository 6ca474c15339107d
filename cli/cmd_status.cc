// `ncclrr status DIR`: which rank is stuck where, while the job still runs (docs/check.md
// "Live status"). Exit 0 running (or finished), 1 hung, 2 no data or an unreadable DIR.
#if __has_include("ncclrr/analysis/live_status.h")
#include <unistd.h>

#include <cctype>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <thread>

#include "command.h"
#include "ncclrr/analysis/live_status.h"
#include "ncclrr/base/args.h"

namespace ncclrr::cli {
namespace {

int64_t NowRealNs() {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(
             std::chrono::system_clock::now().time_since_epoch())
      .count();
}

double PositiveSeconds(const std::string& flag, const std::string& v) {
  char* end = nullptr;
  const double s = std::strtod(v.c_str(), &end);
  if (end == v.c_str() || *end != '\0' || !(s > 0) || s > 86400)
    throw UsageError(flag + " must be a number of seconds above 0, got '" + v + "'");
  return s;
}

class StatusCommand : public Command {
 public:
  const char* name() const override { return "status"; }
  const char* synopsis() const override {
    return "DIR [--json] [--watch [SEC]] [--hang-after SEC] [--dump]";
  }
  const char* help() const override {
    return "Tells, while a recorded job runs, where every communicator stands: running, a\n"
           "straggler (who, how far behind), or hung (the collective its ranks wait in, for\n"
           "how long, and the ranks that never issued it with their last NCCL call anywhere).\n"
           "Reads only what the trace files gained since the last look. --watch [SEC]:\n"
           "refresh every SEC (default 2) until the job ends. --hang-after SEC (default 10):\n"
           "a wait this long is a hang. --dump: first ask every process recording with --ring\n"
           "to write its ring now. --json: one object per refresh. Exit 0 running or\n"
           "finished, 1 hung, 2 no data.";
  }

  int Run(const std::vector<std::string>& raw) override {
    // "--watch" takes an optional number: "--watch 5" and "--watch=5" both mean every 5 s.
    std::vector<std::string> in;
    for (size_t i = 0; i < raw.size(); ++i) {
      if (raw[i] == "--watch") {
        const bool number =
            i + 1 < raw.size() && !raw[i + 1].empty() &&
            (std::isdigit(static_cast<unsigned char>(raw[i + 1][0])) || raw[i + 1][0] == '.');
        in.push_back("--watch=" + (number ? raw[++i] : std::string("2")));
        continue;
      }
      in.push_back(raw[i]);
    }
    Args args("ncclrr status", in);
    args.Option("--watch").Option("--hang-after");
    args.Flag("--json").Flag("--dump");
    args.Parse();
    const std::string& dir = args.Positional(0, "trace directory (DIR)");
    analysis::LiveStatusOptions o;
    if (auto h = args.Get("--hang-after")) o.hang_after_s = PositiveSeconds("--hang-after", *h);
    const bool watch = args.Has("--watch");
    const double every = watch ? PositiveSeconds("--watch", *args.Get("--watch")) : 0;
    const bool json = args.Has("--json");
    if (args.Has("--dump")) {
      char host[256] = {};
      gethostname(host, sizeof host - 1);
      auto id = analysis::RequestDump(
          dir, std::string("ncclrr status --dump on ") + host + " pid " + std::to_string(getpid()));
      if (!id.ok()) return Fail(id.status().message());
      std::fprintf(stderr,
                   "ncclrr status: asked every process recording into %s to write its ring "
                   "(request %s); reading in 1 s\n",
                   dir.c_str(), id->c_str());
      std::this_thread::sleep_for(std::chrono::seconds(1));  // processes look every 100 ms
    }
    analysis::LiveStatus live(dir, o);
    const bool tty = isatty(STDOUT_FILENO);
    for (;;) {
      auto report = live.Refresh(NowRealNs());
      if (!report.ok()) return Fail(report.status().message());
      const std::string text =
          json ? analysis::FormatLiveJson(*report) : analysis::FormatLiveText(*report);
      if (watch && tty && !json) std::fputs("\x1b[H\x1b[2J", stdout);  // redraw in place
      std::fwrite(text.data(), 1, text.size(), stdout);
      if (watch && !json && !tty) std::fputs("\n", stdout);
      std::fflush(stdout);
      if (!watch || report->verdict == analysis::LiveVerdict::kFinished) return report->ExitCode();
      std::this_thread::sleep_for(std::chrono::duration<double>(every));
    }
  }

 private:
  static int Fail(const std::string& message) {
    std::fprintf(stderr, "ncclrr status: %s\n", message.c_str());
    return kExitError;
  }
};

}  // namespace
NCCLRR_REGISTER_COMMAND(StatusCommand);
}  // namespace ncclrr::cli
#endif
