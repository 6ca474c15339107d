// ncclrr-example SCENARIO [--ranks N] [--backend host|nccl] [--steps K] [--group]
//                        [--race-elems N] [--processes]
//
// Small NCCL programs with the bug classes ncclrr explains. Exit 0: every result right; 1: #wrong
// > 0; 2: usage or setup error; 3: hang (an NCCL error, or the 20 s watchdog).
//
// The binary NEEDs libnccl.so.2 and finds the host NCCL copy through its RUNPATH
// ($ORIGIN/../lib/hostnccl). For --backend nccl it re-executes itself once with LD_LIBRARY_PATH
// (searched before RUNPATH) pointing at the real library: $NCCLRR_NCCL_LIBRARY (the file or its
// folder) or a standard location.
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#include "backend.h"
#include "ncclrr/base/args.h"
#include "ncclrr/base/python_libs.h"
#include "processes.h"
#include "runner.h"
#include "sweep.h"

using namespace ncclrr::example;

namespace {

int Usage(const char* msg) {
  std::fprintf(stderr,
               "%s\nusage: ncclrr-example SCENARIO [--ranks N] [--backend host|nccl] [--steps K] "
               "[--group] [--race-elems N] [--processes]\nscenarios: %s\n",
               msg, (ScenarioNames() + ", sweep").c_str());
  return 2;
}

// A positive decimal count, nothing else.
bool ParseCount(const char* s, size_t* out) {
  if (*s < '1' || *s > '9') return false;
  char* end = nullptr;
  errno = 0;
  const unsigned long long v = std::strtoull(s, &end, 10);
  if (errno != 0 || *end != '\0') return false;
  *out = size_t(v);
  return true;
}

bool Exists(const std::string& path) {
  struct stat st {};
  return stat(path.c_str(), &st) == 0;
}

std::string RealNcclDir() {
  if (const char* env = std::getenv("NCCLRR_NCCL_LIBRARY"); env != nullptr && *env) {
    std::string p = env;
    struct stat st {};
    if (stat(p.c_str(), &st) == 0 && S_ISDIR(st.st_mode)) return p;
    const size_t slash = p.rfind('/');
    return slash == std::string::npos ? "." : p.substr(0, slash);
  }
  std::vector<std::string> dirs = {"/usr/lib/x86_64-linux-gnu", "/usr/local/cuda/lib64"};
  for (const std::string& dir : ncclrr::PythonNvidiaLibDirs("nccl")) dirs.push_back(dir);
  for (const std::string& dir : dirs)
    if (Exists(dir + "/libnccl.so.2")) return dir;
  return "";
}

// Replaces the process with itself, the real NCCL's folder first on the library path.
int ReexecWithRealNccl(char** argv) {
  if (std::getenv("NCCLRR_EXAMPLE_REEXEC") != nullptr) {
    std::fprintf(stderr, "ncclrr-example: --backend nccl: the host NCCL is still the one loaded\n");
    return 2;
  }
  const std::string dir = RealNcclDir();
  if (dir.empty()) {
    std::fprintf(stderr,
                 "ncclrr-example: --backend nccl: no real libnccl.so.2 found; set "
                 "NCCLRR_NCCL_LIBRARY\n");
    return 2;
  }
  const char* old = std::getenv("LD_LIBRARY_PATH");
  const std::string path = dir + (old != nullptr && *old ? ":" + std::string(old) : "");
  setenv("LD_LIBRARY_PATH", path.c_str(), 1);
  setenv("NCCLRR_EXAMPLE_REEXEC", "1", 1);
  execv("/proc/self/exe", argv);
  std::fprintf(stderr, "ncclrr-example: re-exec failed: %s\n", std::strerror(errno));
  return 2;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc < 2) return Usage("missing SCENARIO");
  Options opt;
  std::string backend = "host";
  bool processes = false;
  opt.scenario = std::strcmp(argv[1], "sweep") == 0 ? &SweepScenario() : FindScenario(argv[1]);
  if (opt.scenario == nullptr) return Usage((std::string("unknown scenario ") + argv[1]).c_str());
  try {
    ncclrr::Args args("ncclrr-example", argc, argv, 2);
    args.Flag("--group").Flag("--processes");
    args.Option("--ranks").Option("--steps").Option("--backend").Option("--race-elems");
    args.Parse();
    if (!args.positional().empty())
      return Usage(("unexpected argument " + args.positional()[0]).c_str());
    opt.group = args.Has("--group");
    processes = args.Has("--processes");
    backend = args.GetOr("--backend", backend);
    opt.ranks = static_cast<int>(args.GetInt("--ranks", opt.ranks));
    opt.steps = static_cast<int>(args.GetInt("--steps", opt.steps));
    if (auto v = args.Get("--race-elems"); v && !ParseCount(v->c_str(), &opt.race_elems))
      return Usage(("--race-elems expects a positive number of elements, got " + *v).c_str());
  } catch (const ncclrr::UsageError& e) {
    return Usage(e.what());
  }
  if (opt.ranks < 1 || opt.steps < 1) return Usage("--ranks must be >= 1 and --steps >= 1");
  if (opt.race_elems > 0 && opt.scenario->race_rank < 0)
    return Usage("--race-elems applies to send-race only");
  if (backend != "host" && backend != "nccl") return Usage("--backend must be host or nccl");
  if (processes && (opt.group || opt.scenario->run != nullptr))
    return Usage("--processes runs one rank per process: not with --group or sweep");
  if (backend == "nccl" && LoadedHostNccl()) return ReexecWithRealNccl(argv);
  if (processes && ChildRank() < 0) {
    std::printf("ncclrr-example %s: %d ranks as %d processes, backend %s\n", opt.scenario->name,
                opt.ranks, opt.ranks, backend.c_str());
    std::fflush(stdout);
    return RunRankProcesses(argv, opt.ranks, backend == "nccl");
  }
  if (processes) {
    opt.only_rank = ChildRank();
    if (opt.only_rank >= opt.ranks) return Usage("NCCLRR_EXAMPLE_RANK is past --ranks");
  }

  // Before the first NCCL call: the host NCCL reads its knobs once.
  if (backend == "host" && opt.scenario->host_flip_output != nullptr)
    setenv("NCCLRR_HOST_FLIP_OUTPUT", opt.scenario->host_flip_output, 0);
  std::string error;
  std::unique_ptr<Backend> be =
      backend == "host" ? MakeHostBackend(&error) : MakeCudaBackend(&error);
  if (be == nullptr) {
    std::fprintf(stderr, "ncclrr-example: --backend %s: %s\n", backend.c_str(), error.c_str());
    return 2;
  }
  int watchdog_s = 20;
  if (const char* w = std::getenv("NCCLRR_EXAMPLE_WATCHDOG_S"); w != nullptr && std::atoi(w) > 0) {
    watchdog_s = std::atoi(w);
  }
  std::printf("ncclrr-example %s: %s; %d ranks, %d steps, %s, backend %s\n", opt.scenario->name,
              opt.scenario->what, opt.ranks, opt.steps,
              opt.group            ? "one thread drives all ranks"
              : opt.only_rank >= 0 ? "one process per rank"
                                   : "one thread per rank",
              backend.c_str());
  std::fflush(stdout);
  StartWatchdog(watchdog_s);
  const int rc = Run(opt, *be);
  std::fflush(stdout);
  // Every rank finished (a hang leaves through the watchdog's _exit): a normal exit, so atexit
  // handlers run, e.g. a recorder closing its trace. The detached watchdog only sleeps.
  std::exit(rc);
}
