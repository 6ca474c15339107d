// ncclrr-gputiming-probe: small-message NCCL allreduces on every visible GPU of one process,
// timed with GpuTimer exactly as the interposer will call it, to check GPU times and measure the
// overhead on a real GPU (tests/gpu/gputiming_*.sh).
//
//   ncclrr-gputiming-probe [--timing none|auto|cupti|events] [--mode group|threads|graph|
//       nonblocking] [--iters N] [--warmup N] [--count FLOATS] [--foreign-cupti AT]
//       [--trace DIR] [--job-subscribes] [--all-api] [--launches-only] [--context-first]
//       [--job-kernel-records] [--progress]
//
// --job-kernel-records: the job itself has CUPTI record kernels (CONCURRENT_KERNEL, nothing
// else) for the whole loop; with --timing none this is CUPTI's own cost, the floor of ncclrr's.
// --progress: a start event per call beside CUPTI too (as record --gpu-progress).
//
// Prints one line of key=value results. Exit 0 when every call that should have a GPU time got
// exactly the right number of plausible ones (start <= end, not before the call was issued, not
// in the future), 1 otherwise, 2 on a setup error (no GPU, fewer than two GPUs).
#include <nccl.h>

#include <algorithm>
#include <atomic>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <map>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "cuda_rt.h"
#include "ncclrr/gputiming/gpu_timer.h"
#include "ncclrr/trace/trace_writer.h"

using ncclrr::GpuTimeRecord;
using ncclrr::MonotonicNs;
using ncclrr::gpu_test::CudaRt;
using namespace ncclrr::gputiming;

namespace {

struct Options {
  std::string timing = "auto", mode = "group", trace;
  int iters = 2000, warmup = 200, foreign_at = -1;
  bool progress = false;        // a start event per call beside CUPTI (record --gpu-progress)
  bool job_subscribes = false;  // the job holds CUPTI's subscriber slot before ncclrr starts
  bool all_api = false;        // CUPTI records every API call, as for a job with a context at start
  bool launches_only = false;  // CUPTI keeps to launch records even with a context at start
  bool job_kernel_records = false;  // the job's own CUPTI records kernels from the start
  bool context_first = false;       // every device's context exists before timing starts (PyTorch)
  size_t count = 2;
};

struct Issued {
  uint64_t uid;
  int64_t enter_ns;
  int launches;  // GPU records expected (graph templates: one per launch)
};

std::atomic<uint64_t> g_uid{1};
std::mutex g_mu;
std::map<uint64_t, std::vector<GpuTimeRecord>> g_records;
std::vector<Issued> g_issued;
std::unique_ptr<ncclrr::TraceWriter> g_writer;

void NcclCheck(ncclResult_t r, const char* what) {
  if (r != ncclSuccess && r != ncclInProgress) {
    std::fprintf(stderr, "%s failed: %s\n", what, ncclGetErrorString(r));
    std::exit(2);
  }
}

void Record(uint64_t uid, int64_t enter, int launches, int device, uint64_t stream,
            uint8_t capture) {
  {
    std::lock_guard<std::mutex> lock(g_mu);
    g_issued.push_back({uid, enter, launches});
  }
  if (g_writer) {
    ncclrr::CallRecord c{};
    c.uid = uid;
    c.api = static_cast<uint16_t>(ncclrr::Api::kAllReduce);
    c.comm_id = 0x9e00 + static_cast<uint64_t>(device);
    c.device = device;
    c.stream = stream;
    c.enter_ns = enter;
    c.exit_ns = MonotonicNs();
    c.capture = capture;
    c.root_peer = -1;
    g_writer->AppendCall(c);
  }
}

// CUPTI used by "the job itself" (--foreign-cupti): its own buffers count NCCL kernels.
std::atomic<int> g_job_kernels{0};
void* g_cupti = nullptr;
void JobBufferRequested(uint8_t** buf, size_t* size, size_t* max) {
  *size = 1 << 20;
  *buf = static_cast<uint8_t*>(aligned_alloc(8, *size));
  *max = 0;
}
void JobBufferCompleted(void*, uint32_t, uint8_t* buf, size_t, size_t valid) {
  using Next = int (*)(uint8_t*, size_t, void**);
  auto next = reinterpret_cast<Next>(dlsym(g_cupti, "cuptiActivityGetNextRecord"));
  void* rec = nullptr;
  while (next(buf, valid, &rec) == 0) {
    uint32_t kind = 0;
    std::memcpy(&kind, rec, 4);
    const char* name = nullptr;
    if (kind == 10) std::memcpy(&name, static_cast<uint8_t*>(rec) + 104, sizeof name);
    if (name != nullptr && std::strstr(name, "nccl") != nullptr) ++g_job_kernels;
  }
  free(buf);
}
void* OpenCupti() {
  void* h = nullptr;
  for (const char* n : {"libcupti.so.13", "/usr/local/cuda/lib64/libcupti.so.13",
                        "/usr/local/cuda/extras/CUPTI/lib64/libcupti.so.13"})
    if ((h = dlopen(n, RTLD_NOW | RTLD_NOLOAD)) != nullptr) return h;
  for (const char* n : {"libcupti.so.13", "/usr/local/cuda/lib64/libcupti.so.13"})
    if ((h = dlopen(n, RTLD_NOW)) != nullptr) return h;
  return nullptr;
}
void JobCallback(void*, int, uint32_t, const void*) {}
// What the PyTorch profiler or Nsight does first: take CUPTI's subscriber slot.
bool JobSubscribes() {
  void* h = OpenCupti();
  if (h == nullptr) return false;
  using Subscribe = int (*)(void**, void (*)(void*, int, uint32_t, const void*), void*);
  void* sub = nullptr;
  return reinterpret_cast<Subscribe>(dlsym(h, "cuptiSubscribe"))(&sub, JobCallback, nullptr) == 0;
}
bool StartJobsOwnCupti() {
  g_cupti = OpenCupti();
  if (g_cupti == nullptr) return false;
  using Reg = int (*)(void (*)(uint8_t**, size_t*, size_t*),
                      void (*)(void*, uint32_t, uint8_t*, size_t, size_t));
  using Enable = int (*)(int);
  auto reg = reinterpret_cast<Reg>(dlsym(g_cupti, "cuptiActivityRegisterCallbacks"));
  auto enable = reinterpret_cast<Enable>(dlsym(g_cupti, "cuptiActivityEnable"));
  return reg(JobBufferRequested, JobBufferCompleted) == 0 && enable(10) == 0;
}
void FlushJobsCupti() {
  if (g_cupti == nullptr) return;
  reinterpret_cast<int (*)(uint32_t)>(dlsym(g_cupti, "cuptiActivityFlushAll"))(1);
}

Options Parse(int argc, char** argv) {
  Options o;
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    auto next = [&]() -> std::string {
      if (i + 1 >= argc) {
        std::fprintf(stderr, "%s needs a value\n", a.c_str());
        std::exit(2);
      }
      return argv[++i];
    };
    if (a == "--timing")
      o.timing = next();
    else if (a == "--mode")
      o.mode = next();
    else if (a == "--iters")
      o.iters = std::atoi(next().c_str());
    else if (a == "--warmup")
      o.warmup = std::atoi(next().c_str());
    else if (a == "--count")
      o.count = static_cast<size_t>(std::atoll(next().c_str()));
    else if (a == "--foreign-cupti")
      o.foreign_at = std::atoi(next().c_str());
    else if (a == "--trace")
      o.trace = next();
    else if (a == "--job-subscribes")
      o.job_subscribes = true;
    else if (a == "--all-api")
      o.all_api = true;
    else if (a == "--launches-only")
      o.launches_only = true;
    else if (a == "--progress")
      o.progress = true;
    else if (a == "--job-kernel-records")
      o.job_kernel_records = true;
    else if (a == "--context-first")
      o.context_first = true;
    else {
      std::fprintf(stderr, "unknown argument %s\n", a.c_str());
      std::exit(2);
    }
  }
  return o;
}

}  // namespace

int main(int argc, char** argv) {
  const Options opt = Parse(argc, argv);
  const CudaRt rt = CudaRt::Load();
  int ndev = 0;
  rt.Check(rt.GetDeviceCount(&ndev), "cudaGetDeviceCount");
  if (ndev < 2) {
    std::fprintf(stderr,
                 "ncclrr-gputiming-probe needs two GPUs (a one-rank communicator "
                 "launches no NCCL kernel); this machine has %d\n",
                 ndev);
    return 2;
  }
  if (!opt.trace.empty()) {
    ncclrr::WriterOptions wo;
    wo.dir = opt.trace;
    wo.header.route = ncclrr::Route::kGenerator;
    auto w = ncclrr::TraceWriter::Create(wo);
    if (w.ok()) g_writer = std::move(w).value();
  }

  if (opt.job_subscribes && !JobSubscribes()) {
    std::fprintf(stderr, "--job-subscribes: cuptiSubscribe failed\n");
    return 2;
  }
  for (int d = 0; opt.context_first && d < ndev; ++d) {
    rt.Check(rt.SetDevice(d), "cudaSetDevice");  // makes the device's primary context
    rt.Check(rt.DeviceSynchronize(), "cudaDeviceSynchronize");
  }
  std::unique_ptr<GpuTimer> timer;
  if (opt.timing != "none") {
    GpuTimerOptions to;
    to.choice = SourceChoiceFromString(opt.timing);
    to.progress = opt.progress;
    to.api_records = opt.all_api         ? ApiRecords::kAll
                     : opt.launches_only ? ApiRecords::kLaunchesOnly
                                         : ApiRecords::kAuto;
    to.sink = [](const GpuTimeRecord& r) {
      {
        std::lock_guard<std::mutex> lock(g_mu);
        g_records[r.call_uid].push_back(r);
      }
      if (g_writer) {
        ncclrr::Record rec{};
        rec.kind = ncclrr::RecordKind::kGpuTime;
        rec.gpu = r;
        g_writer->Append(rec);
      }
    };
    to.note = [](ncclrr::NoteLevel, const std::string& t) {
      std::fprintf(stderr, "note: %s\n", t.c_str());
    };
    auto t = GpuTimer::Start(to);
    if (!t.ok()) {
      std::fprintf(stderr, "GpuTimer::Start: %s\n", t.status().message().c_str());
      return 2;
    }
    timer = std::move(t).value();
  }

  // Communicators, buffers and streams, one per device.
  std::vector<ncclComm_t> comms(ndev);
  std::vector<void*> bufs(ndev), streams(ndev);
  const bool nonblocking = opt.mode == "nonblocking";
  if (nonblocking) {
    ncclUniqueId id;
    NcclCheck(ncclGetUniqueId(&id), "ncclGetUniqueId");
    NcclCheck(ncclGroupStart(), "ncclGroupStart");
    for (int d = 0; d < ndev; ++d) {
      rt.Check(rt.SetDevice(d), "cudaSetDevice");
      ncclConfig_t cfg = NCCL_CONFIG_INITIALIZER;
      cfg.blocking = 0;
      NcclCheck(ncclCommInitRankConfig(&comms[d], ndev, id, d, &cfg), "ncclCommInitRankConfig");
    }
    NcclCheck(ncclGroupEnd(), "ncclGroupEnd");
    for (int d = 0; d < ndev; ++d) {
      ncclResult_t st = ncclInProgress;
      while (st == ncclInProgress) ncclCommGetAsyncError(comms[d], &st);
    }
  } else {
    NcclCheck(ncclCommInitAll(comms.data(), ndev, nullptr), "ncclCommInitAll");
  }
  for (int d = 0; d < ndev; ++d) {
    rt.Check(rt.SetDevice(d), "cudaSetDevice");
    rt.Check(rt.Malloc(&bufs[d], opt.count * sizeof(float) + 256), "cudaMalloc");
    rt.Check(rt.Memset(bufs[d], 0, opt.count * sizeof(float)), "cudaMemset");
    rt.Check(rt.StreamCreate(&streams[d]), "cudaStreamCreate");
  }
  auto sync_all = [&] {
    for (int d = 0; d < ndev; ++d) {
      rt.SetDevice(d);
      rt.Check(rt.StreamSynchronize(streams[d]), "cudaStreamSynchronize");
    }
  };
  auto wait_nonblocking = [&] {
    for (int d = 0; d < ndev; ++d) {
      ncclResult_t st = ncclInProgress;
      while (st == ncclInProgress) ncclCommGetAsyncError(comms[d], &st);
    }
  };

  // One group of allreduces over all devices, as the interposer times it.
  auto group_step = [&](bool record, bool captured, uint64_t group_id) {
    const int64_t enter = MonotonicNs();
    std::vector<uint64_t> uids(ndev);
    NcclCheck(ncclGroupStart(), "ncclGroupStart");
    for (int d = 0; d < ndev; ++d) {
      uids[d] = g_uid.fetch_add(1);
      const TimedCall c{uids[d], d, reinterpret_cast<uint64_t>(streams[d]), captured, nonblocking};
      if (timer) timer->AddGroupMember(c);
      if (captured && timer)
        timer->AddGraphTemplate(reinterpret_cast<uint64_t>(streams[d]) ^ 1, c, group_id);
      NcclCheck(ncclAllReduce(bufs[d], bufs[d], opt.count, ncclFloat, ncclSum, comms[d],
                              static_cast<cudaStream_t>(streams[d])),
                "ncclAllReduce");
    }
    if (timer) timer->BeginGroupEnd();
    NcclCheck(ncclGroupEnd(), "ncclGroupEnd");
    if (timer) timer->EndGroupEnd();
    if (record)
      for (int d = 0; d < ndev; ++d)
        Record(uids[d], enter, captured ? opt.iters : 1, d, reinterpret_cast<uint64_t>(streams[d]),
               captured ? 1 : 0);
    return uids;
  };

  if (opt.job_kernel_records && !StartJobsOwnCupti()) {
    std::fprintf(stderr, "--job-kernel-records: the job's CUPTI could not record kernels\n");
    return 2;
  }
  const int total = opt.warmup + opt.iters;
  int64_t t0 = 0;
  bool switched = false;
  if (opt.mode == "group" || opt.mode == "nonblocking") {
    for (int i = 0; i < total; ++i) {
      if (i == opt.warmup) t0 = MonotonicNs();
      // Only with --foreign-cupti: its default (-1) would otherwise hand CUPTI over at the last
      // warm-up iteration, and every "cupti" run would end with source=events.
      if (opt.foreign_at >= 0 && i == opt.warmup + opt.foreign_at && timer && !switched) {
        timer->OnForeignCuptiUse("cuptiActivityRegisterCallbacks");  // what the preload does
        switched = StartJobsOwnCupti();
      }
      group_step(i >= opt.warmup, false, 0);
      if (nonblocking) wait_nonblocking();
      sync_all();
    }
  } else if (opt.mode == "threads") {
    // One thread per device, blocking calls outside any group.
    std::vector<std::thread> threads;
    t0 = MonotonicNs();
    for (int d = 0; d < ndev; ++d) {
      threads.emplace_back([&, d] {
        rt.SetDevice(d);
        for (int i = 0; i < total; ++i) {
          const uint64_t uid = g_uid.fetch_add(1);
          const int64_t enter = MonotonicNs();
          if (timer)
            timer->BeginCall({uid, d, reinterpret_cast<uint64_t>(streams[d]), false, false});
          NcclCheck(ncclAllReduce(bufs[d], bufs[d], opt.count, ncclFloat, ncclSum, comms[d],
                                  static_cast<cudaStream_t>(streams[d])),
                    "ncclAllReduce");
          if (timer) timer->EndCall();
          if (i >= opt.warmup) Record(uid, enter, 1, d, reinterpret_cast<uint64_t>(streams[d]), 0);
          rt.Check(rt.StreamSynchronize(streams[d]), "cudaStreamSynchronize");
        }
      });
    }
    for (auto& t : threads) t.join();
  } else if (opt.mode == "graph") {
    // Capture one group of allreduces (one graph per device stream), then launch the graphs.
    std::vector<void*> graphs(ndev), execs(ndev);
    for (int d = 0; d < ndev; ++d) {
      rt.SetDevice(d);
      rt.Check(rt.StreamBeginCapture(streams[d], 2 /*relaxed*/), "cudaStreamBeginCapture");
    }
    group_step(true, true, 1);
    for (int d = 0; d < ndev; ++d) {
      rt.SetDevice(d);
      rt.Check(rt.StreamEndCapture(streams[d], &graphs[d]), "cudaStreamEndCapture");
      rt.Check(rt.GraphInstantiate(&execs[d], graphs[d], 0), "cudaGraphInstantiate");
    }
    for (int i = 0; i < total; ++i) {
      if (i == opt.warmup) t0 = MonotonicNs();
      if (i < opt.warmup) {  // warm-up launches are not timed: templates expect `iters` launches
        for (int d = 0; d < ndev; ++d) rt.Check(rt.GraphLaunch(execs[d], streams[d]), "launch");
      } else {
        for (int d = 0; d < ndev; ++d) {
          if (timer) timer->BeginGraphLaunch(reinterpret_cast<uint64_t>(streams[d]) ^ 1);
          rt.Check(rt.GraphLaunch(execs[d], streams[d]), "cudaGraphLaunch");
          if (timer) timer->EndGraphLaunch();
        }
      }
      sync_all();
    }
    // NCCL's communicators wait in ncclCommDestroy until no graph holds their captured work.
    for (int d = 0; d < ndev; ++d) {
      rt.SetDevice(d);
      rt.Check(rt.GraphExecDestroy(execs[d]), "cudaGraphExecDestroy");
      rt.Check(rt.GraphDestroy(graphs[d]), "cudaGraphDestroy");
    }
  } else {
    std::fprintf(stderr, "unknown --mode %s\n", opt.mode.c_str());
    return 2;
  }
  const int64_t t1 = MonotonicNs();
  FlushJobsCupti();
  std::string source = "none";
  GpuTimerStats stats;
  if (timer) {
    source = SourceName(timer->source());
    if (!timer->Stop().ok()) return 2;
    stats = timer->Stats();
  }
  if (g_writer) (void)g_writer->Close("done");

  // Validation.
  const int64_t now = MonotonicNs();
  // A GPU time mapped onto the host clock may err by the calibration's bracket (2×H200, event
  // pairs before their start was clamped to the record: 6 of 4000 calls over 2 us early).
  const int64_t slack_ns = 2'000;
  int64_t worst_early_ns = 0;
  int expected = 0, timed = 0, implausible = 0, wrong_count = 0;
  for (const Issued& is : g_issued) {
    expected += is.launches;
    auto it = g_records.find(is.uid);
    const int n = it == g_records.end() ? 0 : static_cast<int>(it->second.size());
    timed += n;
    if (timer && n != is.launches) ++wrong_count;
    if (it == g_records.end()) continue;
    for (const GpuTimeRecord& r : it->second) {
      worst_early_ns = std::max(worst_early_ns, is.enter_ns - r.start_ns);
      if (r.start_ns > r.end_ns || r.start_ns < is.enter_ns - slack_ns || r.end_ns > now)
        ++implausible;
    }
  }
  const double us = static_cast<double>(t1 - t0) / 1e3 / std::max(opt.iters, 1);
  std::printf(
      "probe mode=%s timing=%s source=%s devices=%d iters=%d count=%zu us_per_iter=%.3f "
      "expected=%d gpu_records=%d calls_with_wrong_record_count=%d implausible=%d "
      "nccl_kernels=%llu unmatched=%llu skipped=%llu cupti_dropped=%llu job_cupti_kernels=%d "
      "worst_early_start_ns=%lld launch_correlations=%llu\n",
      opt.mode.c_str(), opt.timing.c_str(), source.c_str(), ndev, opt.iters, opt.count, us,
      expected, timed, wrong_count, implausible,
      static_cast<unsigned long long>(stats.nccl_kernels),
      static_cast<unsigned long long>(stats.unmatched_kernels),
      static_cast<unsigned long long>(stats.skipped_calls),
      static_cast<unsigned long long>(stats.cupti_dropped), g_job_kernels.load(),
      static_cast<long long>(worst_early_ns),
      static_cast<unsigned long long>(stats.launch_correlations));
  for (int d = 0; d < ndev; ++d) ncclCommDestroy(comms[d]);
  // The job's own CUPTI must work.
  if ((switched || opt.job_kernel_records) && g_job_kernels.load() == 0) return 1;
  if (!timer) return 0;
  // Event pairs never time captured calls or nonblocking communicators (they say so).
  const bool untimed_by_design = source == "events" && (opt.mode == "graph" || nonblocking);
  if (implausible > 0) return 1;
  if (!untimed_by_design && (wrong_count > 0 || timed != expected)) return 1;
  return 0;
}
