// The nccl backend: the real libnccl.so.2 and the CUDA runtime, both through dlopen, one GPU per
// actor thread. Inputs are uploaded on a side stream that the call's stream waits for (a
// pageable cudaMemcpyAsync synchronizes its own stream first, which must never be a stream
// holding a possibly hung collective); completion markers are CUDA events.
#include <dlfcn.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cstdlib>
#include <deque>
#include <map>

#include "backend.h"
#include "ncclrr/base/cuda_runtime.h"
#include "ncclrr/base/python_libs.h"
#include "replay_env.h"

namespace ncclrr::replay {
namespace {

using cudaEvent = cudart::Event;
using CudaRt = cudart::Runtime;
using cudart::kEventDisableTiming;
using cudart::kNotReady;
using cudart::kStreamNonBlocking;
constexpr int kH2D = cudart::kHostToDevice, kD2H = cudart::kDeviceToHost;

StatusOr<CudaRt> LoadCudaRt() {
  auto rt = cudart::OpenRuntime();
  if (!rt.ok())
    return Status(rt.status().code(),
                  "--backend nccl: " + rt.status().message() + "; or replay with --backend host");
  return rt;
}

class CudaActor : public ActorDevice {
 public:
  explicit CudaActor(const CudaRt& rt) : rt_(rt) {}
  ~CudaActor() override { Release(); }

  Status Init() {
    if (int e = rt_.StreamCreateWithFlags(&upload_, kStreamNonBlocking); e != 0)
      return Err("stream", e);
    if (int e = rt_.StreamCreateWithFlags(&download_, kStreamNonBlocking); e != 0)
      return Err("stream", e);
    return Status::Ok();
  }
  StatusOr<void*> Alloc(size_t bytes) override {
    void* p = nullptr;
    if (int e = rt_.Malloc(&p, bytes); e != 0)
      return Err("cudaMalloc(" + std::to_string(bytes) + ")", e);
    allocations_.push_back(p);
    return p;
  }
  void Free(void*) override {}  // freed in Release, after the comms are gone (cudaFree syncs)
  StatusOr<cudaStream_t> NewStream() override {
    cudaStream_t s = nullptr;
    if (int e = rt_.StreamCreateWithFlags(&s, kStreamNonBlocking); e != 0) return Err("stream", e);
    streams_.push_back(s);
    return s;
  }
  Status Upload(void* dst, const void* src, size_t bytes, cudaStream_t s) override {
    if (int e = rt_.MemcpyAsync(dst, src, bytes, kH2D, upload_); e != 0) return Err("upload", e);
    auto ev = Event();
    if (!ev.ok()) return ev.status();
    rt_.EventRecord(*ev, upload_);
    rt_.StreamWaitEvent(s, *ev, 0);
    spare_.push_back(*ev);  // reusable once recorded again: waits captured the current state
    return Status::Ok();
  }
  Status Download(void* dst, const void* src, size_t bytes) override {
    if (int e = rt_.MemcpyAsync(dst, src, bytes, kD2H, download_); e != 0)
      return Err("download", e);
    if (int e = rt_.StreamSynchronize(download_); e != 0) return Err("download", e);
    return Status::Ok();
  }
  StatusOr<uint64_t> Mark(cudaStream_t s) override {
    auto ev = Event();
    if (!ev.ok()) return ev.status();
    if (int e = rt_.EventRecord(*ev, s); e != 0) return Err("cudaEventRecord", e);
    Marks& m = marks_[s];
    m.pending.push_back({++m.issued, *ev});
    return m.issued;
  }
  bool Reached(cudaStream_t s, uint64_t marker) override {
    Marks& m = marks_[s];
    while (!m.pending.empty() && rt_.EventQuery(m.pending.front().second) != kNotReady) {
      m.reached = m.pending.front().first;
      spare_.push_back(m.pending.front().second);
      m.pending.pop_front();
    }
    return m.reached >= marker;
  }
  void Release() override {
    for (auto& [s, m] : marks_)
      for (auto& p : m.pending) rt_.EventDestroy(p.second);
    marks_.clear();
    for (cudaEvent e : spare_) rt_.EventDestroy(e);
    spare_.clear();
    for (cudaStream_t s : streams_) rt_.StreamDestroy(s);
    streams_.clear();
    for (cudaStream_t s : {upload_, download_})
      if (s) rt_.StreamDestroy(s);
    upload_ = download_ = nullptr;
    for (void* p : allocations_) rt_.Free(p);
    allocations_.clear();
  }

 private:
  Status Err(const std::string& what, int e) const {
    return IoError("CUDA " + what + ": " + rt_.GetErrorString(e));
  }
  StatusOr<cudaEvent> Event() {
    if (!spare_.empty()) {
      cudaEvent e = spare_.front();
      spare_.pop_front();
      return e;
    }
    cudaEvent e = nullptr;
    if (int err = rt_.EventCreateWithFlags(&e, kEventDisableTiming); err != 0)
      return Err("event", err);
    return e;
  }
  struct Marks {
    uint64_t issued = 0, reached = 0;
    std::deque<std::pair<uint64_t, cudaEvent>> pending;
  };
  CudaRt rt_;
  cudaStream_t upload_ = nullptr, download_ = nullptr;
  std::vector<cudaStream_t> streams_;
  std::vector<void*> allocations_;
  std::map<cudaStream_t, Marks> marks_;
  std::deque<cudaEvent> spare_;
};

bool IsHostNccl(void* handle) { return dlsym(handle, "ncclrrHostIsHostNccl") != nullptr; }

class NcclBackend : public Backend {
 public:
  static StatusOr<std::unique_ptr<Backend>> Create(const BackendConfig& config) {
    auto b = std::unique_ptr<NcclBackend>(new NcclBackend());
    b->Pin(config.recorded_env);
    auto rt = LoadCudaRt();
    if (!rt.ok()) return rt.status();
    b->rt_ = *rt;
    if (b->rt_.GetDeviceCount(&b->gpus_) != 0 || b->gpus_ < 1)
      return NotFound(
          "--backend nccl: no CUDA device is visible (check nvidia-smi and "
          "CUDA_VISIBLE_DEVICES), or replay with --backend host");
    std::vector<std::string> candidates;
    if (!config.library.empty()) candidates.push_back(config.library);
    if (const char* env = Env().nccl_library.c_str(); *env) {
      struct stat st {};
      const bool dir = stat(env, &st) == 0 && S_ISDIR(st.st_mode);
      candidates.push_back(dir ? std::string(env) + "/libnccl.so.2" : std::string(env));
    }
    for (const char* p : {"libnccl.so.2", "/usr/lib/x86_64-linux-gnu/libnccl.so.2",
                          "/usr/local/cuda/lib64/libnccl.so.2"})
      candidates.push_back(p);
    for (const std::string& dir : PythonNvidiaLibDirs("nccl"))  // PyTorch's and JAX's wheels
      candidates.push_back(dir + "/libnccl.so.2");
    std::string tried;
    for (const std::string& path : candidates) {
      auto api = NcclApi::Load(path);
      if (!api.ok() || IsHostNccl(api->handle)) {
        tried += (tried.empty() ? "" : "; ") +
                 (api.ok() ? path + ": the host NCCL, not the real one" : api.status().message());
        continue;
      }
      b->nccl_ = std::move(*api);
      return std::unique_ptr<Backend>(std::move(b));
    }
    return NotFound("--backend nccl: no real libnccl.so.2 found (" + tried +
                    "); set NCCLRR_NCCL_LIBRARY to the library or its folder");
  }

  std::string Describe() const override {
    return "NCCL " + NcclVersionString(nccl_.version) + " (" + nccl_.path + ") on " +
           std::to_string(gpus_) + " GPU(s)";
  }
  int MaxActors() const override { return gpus_; }
  StatusOr<std::unique_ptr<ActorDevice>> BindActor(int slot, int) override {
    if (int e = rt_.SetDevice(slot); e != 0)
      return IoError("cudaSetDevice(" + std::to_string(slot) + "): " + rt_.GetErrorString(e));
    auto a = std::make_unique<CudaActor>(rt_);
    NCCLRR_RETURN_IF_ERROR(a->Init());
    return std::unique_ptr<ActorDevice>(std::move(a));
  }

 private:
  NcclBackend() = default;

  // Algorithm, protocol and channels decide the order of floating-point additions: pin them
  // (the recording's values when it had them) so two replays are bitwise equal. A value the
  // user set in the environment wins.
  void Pin(const std::vector<std::pair<std::string, std::string>>& recorded) {
    auto recorded_value = [&](const std::string& k) -> std::string {
      for (const auto& [key, value] : recorded)
        if (key == k) return value;
      return "";
    };
    const std::pair<const char*, const char*> knobs[] = {{"NCCL_ALGO", "Ring"},
                                                         {"NCCL_PROTO", "Simple"},
                                                         {"NCCL_MIN_NCHANNELS", nullptr},
                                                         {"NCCL_MAX_NCHANNELS", nullptr}};
    for (const auto& [name, fallback] : knobs) {
      if (const char* set = std::getenv(name); set && *set) {
        notes_.push_back(std::string(name) + "=" + set + " (from the environment)");
        continue;
      }
      std::string v = recorded_value(name);
      const char* origin = "as recorded";
      if (v.empty() && fallback) {
        v = fallback;
        origin = "the recording did not set it";
      }
      if (v.empty()) {
        notes_.push_back(std::string(name) + " not pinned (the recording did not set it)");
        continue;
      }
      setenv(name, v.c_str(), 1);
      notes_.push_back(std::string("pinned ") + name + "=" + v + " (" + origin + ")");
    }
  }

  CudaRt rt_{};
  int gpus_ = 0;
};

}  // namespace

StatusOr<std::unique_ptr<Backend>> MakeNcclBackend(const BackendConfig& config) {
  return NcclBackend::Create(config);
}

}  // namespace ncclrr::replay
