// `ncclrr record [-o DIR] [--ring N] [--sketch] [--capture BYTES] [--capture-filter F]
// [--gpu-timing] [--gpu-progress] [--stacks] -- CMD [ARGS...]`: runs CMD with the interposer
// preloaded (children inherit it: torchrun, mpirun, multiprocessing), exits with CMD's status
// (128+N if a signal N killed it; 125 if ncclrr failed before launching it; 126/127 when CMD
// cannot be run or is not found, as a shell says), and ends with a one-line summary read from
// the trace. docs/recording.md is the user documentation.
#include <fcntl.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <climits>
#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <ctime>
#include <filesystem>
#include <map>
#include <set>
#include <string>
#include <vector>

#include <fmt/format.h>

#include "command.h"
#include "ncclrr/base/args.h"
#include "ncclrr/trace/capture_filter.h"
#include "ncclrr/trace/format.h"
#include "ncclrr/trace/trace_reader.h"
#include "ncclrr/trace/trace_writer.h"
#include "record_launch.h"

extern char** environ;

namespace ncclrr::cli {
namespace {

namespace fs = std::filesystem;
constexpr int kExitNotLaunched = 125;

struct Plan {
  std::vector<std::string> ours;     // ncclrr's flags
  std::vector<std::string> command;  // CMD [ARGS...]
};

// Everything up to "--" or the first word that is not a flag is ncclrr's; the rest is the
// command, so `ncclrr record python -u train.py` works as well as with "--".
Plan Split(const std::vector<std::string>& raw) {
  static const std::set<std::string> kWithValue = {"-o", "--ring", "--capture", "--capture-filter"};
  Plan p;
  for (size_t i = 0; i < raw.size(); ++i) {
    const std::string& a = raw[i];
    if (a == "--") {
      p.command.assign(raw.begin() + static_cast<long>(i) + 1, raw.end());
      return p;
    }
    if (a.empty() || a[0] != '-') {
      p.command.assign(raw.begin() + static_cast<long>(i), raw.end());
      return p;
    }
    p.ours.push_back(a);
    if (kWithValue.count(a) && i + 1 < raw.size()) p.ours.push_back(raw[++i]);
  }
  return p;
}

// ./ncclrr-YYYYmmdd-HHMMSS, created here; when another record made it in the same second,
// ./ncclrr-YYYYmmdd-HHMMSS-2, -3, ... (mkdir decides, so two records never share one).
std::string CreateDefaultDir(std::error_code* ec) {
  const std::time_t now = std::time(nullptr);
  std::tm tm{};
  localtime_r(&now, &tm);
  char buf[64];
  std::strftime(buf, sizeof buf, "ncclrr-%Y%m%d-%H%M%S", &tm);
  for (int n = 1; n <= 1000; ++n) {
    const std::string name = n == 1 ? std::string(buf) : std::string(buf) + "-" + std::to_string(n);
    if (mkdir(name.c_str(), 0755) == 0) return name;
    if (errno != EEXIST) {
      *ec = std::error_code(errno, std::generic_category());
      return name;
    }
  }
  *ec = std::make_error_code(std::errc::file_exists);
  return buf;
}

// One recording per directory and host: an exclusive lock on DIR/.ncclrr-record-<host>.lock,
// which this process holds until it exits (the job does not inherit it). Per host, because on a
// shared filesystem one `ncclrr record` per node of one job writes into one directory. -1 with
// *why set when it cannot be taken.
int LockDir(const fs::path& dir, std::string* why) {
  const fs::path path = dir / (".ncclrr-record-" + HostName() + ".lock");
  const int fd = open(path.c_str(), O_RDWR | O_CREAT | O_NOFOLLOW | O_CLOEXEC, 0644);
  if (fd < 0) {
    *why = "cannot create " + path.string() + ": " + std::strerror(errno);
    return -1;
  }
  if (flock(fd, LOCK_EX | LOCK_NB) != 0) {
    close(fd);
    *why = "another ncclrr record on this host is recording into " + dir.string() +
           "; choose another directory with -o";
    return -1;
  }
  return fd;
}

// The preload library: NCCLRR_INTERPOSE_LIBRARY, else ../lib beside this executable.
std::string FindInterposer() {
  if (const char* v = std::getenv("NCCLRR_INTERPOSE_LIBRARY"); v != nullptr && *v != '\0') return v;
  std::error_code ec;
  const fs::path exe = fs::read_symlink("/proc/self/exe", ec);
  if (ec) return "";
  return (exe.parent_path().parent_path() / "lib" / "libncclrr-interpose.so").string();
}

// The dynamic loader splits LD_PRELOAD at spaces and colons and has no quoting, so a preload
// path holding one would load nothing and record nothing. Such a path is reached through a
// symbolic link whose own path holds neither: in the trace directory (DIR/.ncclrr-preload/),
// or, when that path holds one too, in a new directory under /tmp (*scratch, removed after the
// job). "" with *why set when neither can be made.
bool SafeForPreload(const std::string& path) {
  return path.find_first_of(" \t\n:") == std::string::npos;
}

std::string PreloadPath(const std::string& lib, const fs::path& dir, fs::path* scratch,
                        std::string* why) {
  if (SafeForPreload(lib)) return lib;
  std::error_code ec;
  fs::path link_dir = dir / ".ncclrr-preload";
  if (SafeForPreload(link_dir.string())) {
    fs::create_directories(link_dir, ec);
  } else {
    char tmpl[] = "/tmp/ncclrr-preload-XXXXXX";
    if (mkdtemp(tmpl) == nullptr) ec = std::error_code(errno, std::generic_category());
    link_dir = tmpl;
    *scratch = link_dir;
  }
  const fs::path link = link_dir / fs::path(lib).filename();
  if (!ec) {
    fs::remove(link, ec);  // a link left by an earlier record into this directory
    ec.clear();
    fs::create_symlink(fs::absolute(lib), link, ec);
  }
  if (ec) {
    *why = "the interposer's path '" + lib +
           "' holds a space or a colon, which LD_PRELOAD cannot carry, and a link to it could "
           "not be made in " +
           link_dir.string() + " (" + ec.message() +
           "); install ncclrr under a path without spaces or colons, or set "
           "NCCLRR_INTERPOSE_LIBRARY to a copy of the library there";
    return "";
  }
  return link.string();
}

size_t TraceFilesIn(const fs::path& dir) {
  // Only this host's files (<host>-<pid>.ncclrr): with one `ncclrr record` per node and a shared
  // -o, the other nodes' files of the same run are expected.
  const std::string mine = HostName() + "-";
  size_t n = 0;
  std::error_code ec;
  for (const auto& e : fs::directory_iterator(dir, ec))
    if (e.path().extension() == format::kFileSuffix &&
        e.path().filename().string().rfind(mine, 0) == 0)
      ++n;
  return n;
}

// NCCL's profiler plugin route (statically linked NCCL): libnccl-profiler-ncclrr.so beside the
// preload, unless NCCLRR_PROFILER_PLUGIN=0. Empty when it is not there.
std::string FindProfilerPlugin(const std::string& lib) {
  if (const char* v = std::getenv("NCCLRR_PROFILER_PLUGIN"); v != nullptr && std::string(v) == "0")
    return "";
  const fs::path plugin = fs::path(lib).parent_path() / "libnccl-profiler-ncclrr.so";
  return access(plugin.c_str(), R_OK) == 0 ? plugin.string() : "";
}

std::vector<std::string> ChildEnvironment(const std::string& lib, const std::string& plugin,
                                          const std::string& dir, long long ring, bool stacks) {
  std::map<std::string, std::string> env;
  for (char** e = environ; *e != nullptr; ++e) {
    const std::string kv = *e;
    const size_t eq = kv.find('=');
    if (eq != std::string::npos) env[kv.substr(0, eq)] = kv.substr(eq + 1);
  }
  std::string& preload = env["LD_PRELOAD"];
  if (preload.find(lib) == std::string::npos) preload += (preload.empty() ? "" : " ") + lib;
  env["NCCLRR_TRACE_DIR"] = dir;
  env["NCCLRR_RING"] = std::to_string(ring);
  env["NCCLRR_STACKS"] = stacks ? "1" : "0";
  if (!plugin.empty()) {  // chain to a profiler plugin the user already set
    auto user = env.find("NCCL_PROFILER_PLUGIN");
    if (user != env.end() && user->second != plugin && !user->second.empty())
      env["NCCLRR_CHAIN_PROFILER_PLUGIN"] = user->second;
    env["NCCL_PROFILER_PLUGIN"] = plugin;
  }
  std::vector<std::string> out;
  for (const auto& [k, v] : env) out.push_back(k + "=" + v);
  return out;
}

// --gpu-timing: "ncclrr: 1234 GPU times (cupti 1200, events 34)", or the trace's note saying why
// there are none.
void PrintGpuTimingSummary(const std::vector<FileSummary>& files) {
  uint64_t cupti = 0, events = 0, total = 0;
  std::string why;
  for (const FileSummary& f : files) {
    const FooterSummary& s = *f.totals.summary;
    total += s.gpu_times;
    cupti += s.gpu_times_cupti;
    events += s.gpu_times_events;
    for (const std::string& n : s.notes)
      if (why.empty() && n.find("GPU timing (--gpu-timing) is unavailable") == 0) why = n;
  }
  if (total > 0) {
    std::fprintf(stderr, "ncclrr: %llu GPU times (cupti %llu, events %llu)\n",
                 static_cast<unsigned long long>(total), static_cast<unsigned long long>(cupti),
                 static_cast<unsigned long long>(events));
  } else {
    std::fprintf(stderr, "ncclrr: no GPU times: %s\n",
                 why.empty() ? "no timed call completed" : why.c_str());
  }
}

// --capture: "ncclrr: captured 24 buffers (98304 bytes) of 12 calls", and whether the budget
// stopped it.
void PrintCaptureSummary(const std::vector<FileSummary>& files) {
  uint64_t buffers = 0, bytes = 0, calls = 0;
  std::string stop;
  for (const FileSummary& f : files) {
    const FooterSummary& s = *f.totals.summary;
    buffers += s.captures;
    bytes += s.capture_bytes;
    calls += s.captured_calls;
    for (const std::string& n : s.notes)
      if (stop.empty() && n.rfind("capture: stopped", 0) == 0) stop = n.substr(9);
  }
  std::fprintf(stderr, "ncclrr: captured %llu buffers (%llu bytes) of %llu calls%s%s\n",
               static_cast<unsigned long long>(buffers), static_cast<unsigned long long>(bytes),
               static_cast<unsigned long long>(calls), stop.empty() ? "" : "; ", stop.c_str());
}

// The trace files of `dir`, each read from its footer (files without one: a bounded scan, see
// FileSummary), never loaded whole: a job's exit status is not held up by a large trace.
std::vector<FileSummary> SummariesOf(const std::string& dir) {
  std::vector<FileSummary> out;
  std::error_code ec;
  for (const auto& e : fs::directory_iterator(dir, ec)) {
    if (!e.is_regular_file(ec) || e.path().extension() != format::kFileSuffix) continue;
    auto s = ReadFileSummary(e.path().string());
    if (s.ok()) out.push_back(std::move(*s));
  }
  return out;
}

// "ncclrr: recorded 2 processes, 1 communicator (ranks 2 of 2), 1234 calls, 0 dropped, route
// preload, in DIR"; or why nothing was recorded. Read from the files' footers.
void PrintSummary(const std::string& dir, bool gpu_timing, bool capture, int exit_code) {
  std::error_code ec;
  if (!fs::is_directory(dir, ec)) {
    std::fprintf(stderr,
                 "ncclrr: the trace directory %s was removed while the job ran: nothing could "
                 "be recorded there\n",
                 dir.c_str());
    return;
  }
  const std::vector<FileSummary> files = SummariesOf(dir);
  if (files.empty()) {
    std::fprintf(stderr,
                 "ncclrr: no NCCL call was seen, nothing was recorded in %s. Neither a "
                 "dynamically loaded libnccl nor NCCL's profiler plugin (NCCL >= 2.23, also for "
                 "a statically linked NCCL) reported a call; an older, statically linked NCCL "
                 "can only be read from its logs (ncclrr import-nccl-log). If a process printed "
                 "\"ncclrr: cannot record this process\" above, it could not create its trace "
                 "file there.\n",
                 dir.c_str());
    if (exit_code > 128 &&
        exit_code - 128 < NSIG)  // stopped by a signal (a timeout, the scheduler)
      std::fprintf(stderr,
                   "ncclrr: the job ended by signal %d (%s): if it hung, it hung before its "
                   "first NCCL call (in its rendezvous, a compilation or its data loading), "
                   "where ncclrr sees nothing to check.\n",
                   exit_code - 128, strsignal(exit_code - 128));
    return;
  }
  uint64_t calls = 0, dropped = 0;
  size_t open_files = 0, uncounted = 0;
  std::map<uint64_t, std::set<int>> ranks;
  std::map<uint64_t, int> sizes;
  std::set<std::string> routes;
  std::string write_error;  // the first file's, when writing a trace failed (a full disk)
  size_t failed_files = 0;
  for (const FileSummary& f : files) {
    open_files += !f.has_footer;
    uncounted += !f.counted;
    routes.insert(RouteName(f.header.route));
    if (!f.counted) continue;
    calls += f.totals.calls;
    dropped += f.totals.dropped;
    const size_t at = f.totals.reason.find(format::kWriteErrorPrefix);
    if (at != std::string::npos && failed_files++ == 0)
      write_error = f.totals.reason.substr(at + std::strlen(format::kWriteErrorPrefix));
    for (const FooterSummary::CommRank& c : f.totals.summary->comms) {
      ranks[c.comm_id].insert(c.rank);
      sizes[c.comm_id] = c.nranks;
    }
  }
  uint64_t largest = 0;
  for (const auto& [id, n] : sizes)
    if (largest == 0 || n > sizes[largest]) largest = id;
  std::string route;
  for (const auto& r : routes) route += (route.empty() ? "" : "+") + r;
  std::string comm_text = "no communicator";
  if (!sizes.empty())
    comm_text = fmt::format("{} communicator{} (ranks {} of {})", sizes.size(),
                            sizes.size() == 1 ? "" : "s", ranks[largest].size(), sizes[largest]);
  std::string open_text;
  if (open_files)
    open_text =
        " (" + std::to_string(open_files) +
        " file(s) not closed: a process was killed or is still running" +
        (uncounted ? "; " + std::to_string(uncounted) +
                         " of them too large to count here: `ncclrr info " + dir + "` reads them"
                   : "") +
        ")";
  std::fprintf(stderr,
               "ncclrr: recorded %zu process%s, %s, %llu calls, %llu dropped, route %s, in %s%s\n",
               files.size(), files.size() == 1 ? "" : "es", comm_text.c_str(),
               static_cast<unsigned long long>(calls), static_cast<unsigned long long>(dropped),
               route.c_str(), dir.c_str(), open_text.c_str());
  if (failed_files > 0)
    std::fprintf(stderr,
                 "ncclrr: writing the trace failed in %zu file(s) (%s): the dropped records "
                 "could not be written; record onto a disk with room\n",
                 failed_files, write_error.c_str());
  std::vector<FileSummary> counted;
  for (const FileSummary& f : files)
    if (f.counted) counted.push_back(f);
  if (gpu_timing) PrintGpuTimingSummary(counted);
  if (capture) PrintCaptureSummary(counted);
}

// --capture BYTES and --capture-filter F, checked before launching: the budget, or 0.
uint64_t CaptureBudget(const Args& args) {
  if (args.Has("--capture-filter")) {
    if (!args.Has("--capture"))
      throw UsageError("--capture-filter selects what --capture BYTES captures: add --capture");
    auto f = ParseCaptureFilter(*args.Get("--capture-filter"));
    if (!f.ok()) throw UsageError(f.status().message());
  }
  if (!args.Has("--capture")) return 0;
  auto bytes = ParseByteCount(*args.Get("--capture"));
  if (!bytes.ok()) throw UsageError("--capture: " + bytes.status().message());
  return *bytes;
}

class RecordCommand : public Command {
 public:
  const char* name() const override { return "record"; }
  const char* synopsis() const override {
    return "[-o DIR] [--ring N] [--sketch] [--capture BYTES] [--capture-filter F] "
           "[--gpu-timing] [--gpu-progress] [--stacks] -- CMD [ARGS...]";
  }
  const char* help() const override {
    return "Runs CMD with every NCCL call recorded: one trace file per process that calls NCCL\n"
           "(<host>-<pid>.ncclrr in DIR; children inherit the recording). Exits with CMD's\n"
           "status, 128+N if signal N killed it, 125 if ncclrr could not launch it, 126/127\n"
           "if CMD cannot be run or is not found.\n"
           "  -o DIR      trace directory (default ./ncclrr-YYYYmmdd-HHMMSS); a directory\n"
           "              holding another run's trace is refused\n"
           "  --ring N    flight recorder: keep the last N calls of each thread in memory and\n"
           "              write them at exit, on a fatal signal, SIGUSR1, an NCCL error, or a\n"
           "              call in flight longer than NCCLRR_WATCHDOG_MS\n"
           "  --stacks    record a call-site id per call (return addresses; in a Python\n"
           "              process the job's Python frames are recorded by default, without\n"
           "              --stacks: NCCLRR_PY_SITES=0 turns that off)\n"
           "  --sketch    sketch the send and recv buffers of every collective and send/recv\n"
           "              (a few hundred bytes each) for ncclrr check's data checks\n"
           "  --gpu-timing  when each collective's kernels ran on the GPU (CUPTI, or CUDA events\n"
           "              when CUPTI is missing or the job uses CUPTI itself); 'ncclrr check'\n"
           "              reports stragglers\n"
           "  --gpu-progress  --gpu-timing, and with CUPTI one CUDA event before each call too\n"
           "              (about 1 us per call), so that 'ncclrr status' tells a call not started\n"
           "              on the GPU from one running (CUDA event timing tells it at no cost)\n"
           "  --capture BYTES  copy the send and recv buffers of every collective and send/recv\n"
           "              into a side file per process (<host>-<pid>.capture) until BYTES\n"
           "              (per process; K/M/G/T suffixes) are used: 'ncclrr check' verifies the\n"
           "              outputs exactly, 'ncclrr replay --data captured' replays the data\n"
           "  --capture-filter F  capture only matching calls, F = comm=HEXPREFIX,seq=A-B,\n"
           "              op=NAME,step=A-B (any subset; seq=1,3-7 lists ranges; op takes\n"
           "              allreduce, send, ... or sum, max, ...; a step begins each time a rank\n"
           "              issues its first collective on the communicator again)\n"
           "NCCL's profiler plugin (libnccl-profiler-ncclrr.so beside the preload) is set up\n"
           "too, for a statically linked NCCL, chaining to NCCL_PROFILER_PLUGIN if set;\n"
           "NCCLRR_PROFILER_PLUGIN=0 leaves it out. docs/recording.md lists the knobs.";
  }

  int Run(const std::vector<std::string>& raw) override {
    try {
      return Record(raw);
    } catch (const UsageError& e) {
      std::fprintf(stderr, "ncclrr record: %s\nusage: ncclrr record %s\n", e.what(), synopsis());
      return kExitNotLaunched;
    } catch (const std::exception& e) {
      std::fprintf(stderr, "ncclrr record: %s\n", e.what());
      return kExitNotLaunched;
    }
  }

 private:
  int Record(const std::vector<std::string>& raw) {
    const Plan plan = Split(raw);
    Args args("ncclrr record", plan.ours);
    args.Option("-o").Option("--ring").Flag("--sketch").Option("--capture");
    args.Option("--capture-filter").Flag("--gpu-timing").Flag("--gpu-progress").Flag("--stacks");
    args.Parse();
    const uint64_t capture = CaptureBudget(args);
    if (plan.command.empty()) throw UsageError("no command to record: add -- CMD [ARGS...]");
    const long long ring = args.GetInt("--ring", 0);
    if (args.Has("--ring") && (ring < 1 || ring > (1 << 24)))
      throw UsageError("--ring expects a number of calls between 1 and 16777216, got '" +
                       *args.Get("--ring") + "'");

    const std::string lib = FindInterposer();
    if (lib.empty() || access(lib.c_str(), R_OK) != 0) {
      std::fprintf(stderr,
                   "ncclrr record: cannot find the interposer library (looked for '%s'); build "
                   "the ncclrr_interpose target or set NCCLRR_INTERPOSE_LIBRARY\n",
                   lib.c_str());
      return kExitNotLaunched;
    }
    std::error_code ec;
    fs::path dir;
    if (args.Has("-o")) {
      dir = fs::absolute(*args.Get("-o"));
      fs::create_directories(dir, ec);
    } else {
      dir = fs::absolute(CreateDefaultDir(&ec));
    }
    if (ec || access(dir.c_str(), W_OK) != 0) {
      std::fprintf(stderr, "ncclrr record: cannot write the trace directory %s: %s\n", dir.c_str(),
                   ec ? ec.message().c_str() : "not writable");
      return kExitNotLaunched;
    }
    // Each process writes DIR/<host>-<pid>.ncclrr: a path the kernel would refuse fails here,
    // not silently in every process of the job.
    if (dir.string().size() + 1 + HostName().size() + 32 >= PATH_MAX) {
      std::fprintf(stderr,
                   "ncclrr record: the trace directory path is too long for its files (%zu "
                   "characters; paths are limited to %d): choose a shorter one with -o\n",
                   dir.string().size(), PATH_MAX);
      return kExitNotLaunched;
    }
    std::string why;
    if (LockDir(dir, &why) < 0) {  // the lock is held until this process exits
      std::fprintf(stderr, "ncclrr record: %s\n", why.c_str());
      return kExitNotLaunched;
    }
    if (const size_t n = TraceFilesIn(dir); n > 0) {
      std::fprintf(stderr,
                   "ncclrr record: %s already holds the trace of another run (%zu .ncclrr "
                   "file%s); choose another directory with -o or remove it\n",
                   dir.c_str(), n, n == 1 ? "" : "s");
      return kExitNotLaunched;
    }
    std::fprintf(
        stderr, "ncclrr: recording into %s%s\n", dir.c_str(),
        ring > 0 ? (" (flight recorder, last " + std::to_string(ring) + " calls)").c_str() : "");
    fs::path scratch;
    const std::string preload = PreloadPath(lib, dir, &scratch, &why);
    if (preload.empty()) {
      std::fprintf(stderr, "ncclrr record: %s\n", why.c_str());
      return kExitNotLaunched;
    }
    const std::string plugin = FindProfilerPlugin(lib);
    setenv("NCCLRR_SKETCH", args.Has("--sketch") ? "1" : "0", 1);  // read by the preload
    setenv("NCCLRR_CAPTURE_BYTES", std::to_string(capture).c_str(), 1);
    setenv("NCCLRR_CAPTURE_FILTER", args.GetOr("--capture-filter", "").c_str(), 1);
    // The preload reads it (docs/gpu-timing.md); a test's NCCLRR_GPU_TIMING=2 (stand-ins) stays.
    const char* gpu = getenv("NCCLRR_GPU_TIMING");
    const bool gpu_timing = args.Has("--gpu-timing") || args.Has("--gpu-progress");
    if (args.Has("--gpu-progress")) setenv("NCCLRR_GPU_PROGRESS", "1", 1);
    if (!gpu_timing) {
      setenv("NCCLRR_GPU_TIMING", "0", 1);
    } else if (gpu == nullptr || std::string(gpu) != "2") {
      setenv("NCCLRR_GPU_TIMING", "1", 1);
    }
    const LaunchResult r = RunCommand(
        plan.command, ChildEnvironment(preload, plugin, dir.string(), ring, args.Has("--stacks")));
    if (!scratch.empty()) fs::remove_all(scratch, ec);
    if (!r.started) {
      std::fprintf(stderr, "ncclrr record: cannot run '%s': %s\n", plan.command[0].c_str(),
                   r.error.c_str());
      return r.exit_code != 0 ? r.exit_code : kExitNotLaunched;
    }
    PrintSummary(dir.string(), gpu_timing, capture > 0, r.exit_code);
    return r.exit_code;
  }
};

}  // namespace
NCCLRR_REGISTER_COMMAND(RecordCommand);
}  // namespace ncclrr::cli
