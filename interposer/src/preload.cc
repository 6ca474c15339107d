// libncclrr-interpose.so: records every NCCL call of an unmodified process (LD_PRELOAD).
//
// It runs inside someone else's process, on their hot path: the rules for its code (and for all
// code that runs inside the user's job) are in docs/design.md, "Rules for code that runs inside
// the user's job". In short: never crash or change the job, nothing before the first NCCL call,
// a per-call path without locks, allocation or I/O (call_path.h), record only what the
// application called, async-signal-safe handlers, CUDA only through dlopen, glibc's dlsym
// through RealDlsym(), knobs read once (env_config.cc).
#include <dlfcn.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <cstdio>
#include <cstring>
#include <mutex>
#include <set>

#include "call_path.h"
#include "capture_jobs.h"
#include "cuda_graphs.h"
#include "env_config.h"
#include "gpu_timing_hooks.h"
#include "ncclrr/trace/process_info.h"
#include "runtime.h"
#include "sketch_hooks.h"
#include "triggers.h"

namespace ncclrr::interpose {

__thread ThreadState t_state __attribute__((tls_model("initial-exec")));
Runtime g_runtime;

namespace {

std::mutex g_start_mu;

void Forward(const char* why) {
  g_runtime.stage.store(static_cast<int>(Stage::kForwarding), std::memory_order_release);
  if (GetConfig().verbose) std::fprintf(stderr, "ncclrr: not recording this process: %s\n", why);
}

}  // namespace

uint32_t CurrentTid() {
  uint32_t tid = t_state.tid;
  if (__builtin_expect(tid == 0, 0)) t_state.tid = tid = static_cast<uint32_t>(syscall(SYS_gettid));
  return tid;
}

const NcclLibrary* ResolveSlow() {
  const NcclLibrary* lib = ResolveRealLibrary();
  if (lib == nullptr) return nullptr;
  g_runtime.lib = lib;
  int idle = static_cast<int>(Stage::kIdle);
  g_runtime.stage.compare_exchange_strong(idle, static_cast<int>(Stage::kResolved),
                                          std::memory_order_acq_rel);
  return lib;
}

bool StartRecordingSlow() {
  std::lock_guard<std::mutex> lock(g_start_mu);
  const int s = g_runtime.stage.load(std::memory_order_acquire);
  if (s == static_cast<int>(Stage::kRecording)) return true;
  if (s == static_cast<int>(Stage::kForwarding)) return false;
  const Config& cfg = GetConfig();
  const NcclLibrary* lib = ResolveSlow();
  if (lib == nullptr) return Forward("no real NCCL"), false;
  if (cfg.disabled) return Forward("NCCLRR_DISABLE=1"), false;

  WriterOptions o = RouteWriterOptions(cfg, Route::kPreload);
  o.header.nccl_version = lib->version;
  o.header.cuda_version = CudaDriverVersion();
  auto writer = TraceWriter::Create(std::move(o));
  if (!writer.ok()) {
    std::fprintf(stderr, "ncclrr: cannot record this process: %s. The job runs on unrecorded.\n",
                 writer.status().message().c_str());
    return Forward("the trace file cannot be created"), false;
  }
  g_runtime.writer = writer->release();
  g_runtime.writer->SetNcclVersion(lib->version);
  char text[512];
  std::snprintf(text, sizeof text, "ncclrr forwards to NCCL %d.%d.%d at %s (found by %s)%s",
                lib->version / 10000, lib->version / 100 % 100, lib->version % 100,
                lib->object.path.c_str(), lib->how, lib->host_nccl ? "; it is the host NCCL" : "");
  g_runtime.writer->AddNote(NoteLevel::kInfo, text);
  if (cfg.ring_calls > 0) {
    std::snprintf(text, sizeof text,
                  "flight recorder: the last %u calls of the process are kept in memory and "
                  "written at exit, on a fatal signal, SIGUSR1, an NCCL error or a call in "
                  "flight longer than %u ms",
                  cfg.ring_calls, cfg.watchdog_ms);
    g_runtime.writer->AddNote(NoteLevel::kInfo, text);
  }
  InitCudaGraphs(*lib);
  StartGpuTiming(*lib);  // NCCLRR_GPU_TIMING
  g_runtime.stacks = cfg.stacks;
  g_runtime.sites = cfg.stacks || cfg.py_sites;
  g_runtime.stage.store(static_cast<int>(Stage::kRecording), std::memory_order_release);
  InstallTriggers();
  InitSketches(*lib);  // NCCLRR_SKETCH; after InstallTriggers: see its exit handler
  InitCaptures(*lib);  // NCCLRR_CAPTURE_BYTES; likewise
  return true;
}

void Note(NoteLevel level, std::string text) {
  if (g_runtime.writer != nullptr) g_runtime.writer->AddNote(level, std::move(text));
}

void WarnOnce(const char* key, const std::string& text) {
  static std::mutex mu;
  static std::set<std::string>* seen = new std::set<std::string>();
  {
    std::lock_guard<std::mutex> lock(mu);
    if (!seen->insert(key).second) return;
  }
  std::fprintf(stderr, "ncclrr: %s\n", text.c_str());
  Note(NoteLevel::kWarning, text);
}

ncclResult_t MissingFunction(const char* name) {
  WarnOnce(name, std::string("the real NCCL has no ") + name +
                     " (an older NCCL than the program was built for?); the call returns "
                     "ncclInvalidUsage");
  return RealLibrary() != nullptr ? ncclInvalidUsage : ncclSystemError;
}

}  // namespace ncclrr::interpose
