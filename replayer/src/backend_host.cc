// The host backend: libncclrr-hostnccl.so loaded with dlopen (never linked, so the replayer and
// the real NCCL can live in one build). Buffers are host memory; streams are host streams.
// Completion markers are one-element allreduces on a private 1-rank communicator queued behind
// the replayed calls: the host NCCL runs a stream's tasks in order, so a marker's value lands
// exactly when everything before it on that stream has finished.
#include <dlfcn.h>
#include <unistd.h>

#include <atomic>
#include <climits>
#include <cstdlib>
#include <cstring>
#include <deque>
#include <map>

#include "backend.h"
#include "replay_env.h"

namespace ncclrr::replay {
namespace {

struct HostCalls {
  cudaStream_t (*StreamCreate)() = nullptr;
  void (*StreamDestroy)(cudaStream_t) = nullptr;
  int (*StreamBusy)(cudaStream_t) = nullptr;
  void (*SetDevice)(int) = nullptr;
};

class HostActor : public ActorDevice {
 public:
  HostActor(const NcclApi& nccl, const HostCalls& host) : nccl_(nccl), host_(host) {}
  ~HostActor() override { Release(); }

  StatusOr<void*> Alloc(size_t bytes) override {
    void* p = std::aligned_alloc(256, (bytes + 255) / 256 * 256 + 256);
    if (p == nullptr) return IoError("out of host memory allocating " + std::to_string(bytes));
    return p;
  }
  void Free(void* p) override { std::free(p); }
  StatusOr<cudaStream_t> NewStream() override {
    cudaStream_t s = host_.StreamCreate();
    streams_.push_back(s);
    return s;
  }
  Status Upload(void* dst, const void* src, size_t bytes, cudaStream_t) override {
    std::memcpy(dst, src, bytes);  // the host NCCL reads inputs only once every rank arrived
    return Status::Ok();
  }
  Status Download(void* dst, const void* src, size_t bytes) override {
    std::memcpy(dst, src, bytes);
    return Status::Ok();
  }

  StatusOr<uint64_t> Mark(cudaStream_t s) override {
    if (marker_comm_ == nullptr) {
      ncclUniqueId id;
      ncclConfig_t cfg = NCCL_CONFIG_INITIALIZER;
      cfg.commName = "ncclrr-replay-marker";
      if (nccl_.GetUniqueId(&id) != ncclSuccess ||
          nccl_.CommInitRankConfig(&marker_comm_, 1, id, 0, &cfg) != ncclSuccess)
        return IoError("host NCCL: cannot create the replay's 1-rank marker communicator");
    }
    Marks& m = marks_[s];
    m.values.push_back(m.values.size() + 1);
    const ncclResult_t r =
        nccl_.AllReduce(&m.values.back(), &m.done, 1, ncclUint64, ncclSum, marker_comm_, s);
    if (r != ncclSuccess) return IoError("host NCCL: marker: " + nccl_.ErrorText(r, marker_comm_));
    return m.values.size();
  }

  bool Reached(cudaStream_t s, uint64_t marker) override {
    host_.StreamBusy(s);  // drives every stream of the process
    return std::atomic_ref<uint64_t>(marks_[s].done).load(std::memory_order_acquire) >= marker;
  }

  void Release() override {
    if (marker_comm_ != nullptr) nccl_.CommDestroy(marker_comm_);
    marker_comm_ = nullptr;
    for (cudaStream_t s : streams_) host_.StreamDestroy(s);
    streams_.clear();
    marks_.clear();
  }

 private:
  struct Marks {
    std::deque<uint64_t> values;  // deque: queued markers keep pointing at their value
    alignas(8) uint64_t done = 0;
  };
  const NcclApi& nccl_;
  HostCalls host_;
  ncclComm_t marker_comm_ = nullptr;
  std::vector<cudaStream_t> streams_;
  std::map<cudaStream_t, Marks> marks_;
};

class HostBackend : public Backend {
 public:
  static StatusOr<std::unique_ptr<Backend>> Create(const BackendConfig& config) {
    // The replay's own --timeout decides when a call is stuck; the host NCCL's timeout (which
    // fails blocked calls by itself) is pushed past it unless the user set one.
    const long ms = static_cast<long>(config.timeout_s * 1000) + 60000;
    setenv("NCCLRR_HOST_TIMEOUT_MS", std::to_string(ms).c_str(), 0);
    std::vector<std::string> candidates;
    if (!config.library.empty()) {
      candidates.push_back(config.library);
    } else if (!Env().hostnccl_library.empty()) {
      candidates.push_back(Env().hostnccl_library);
    } else {
      const std::string dir = ExecutableDir();
      candidates.push_back(dir + "/../lib/libncclrr-hostnccl.so");
      candidates.push_back(dir + "/libncclrr-hostnccl.so");
    }
    std::string tried;
    for (const std::string& path : candidates) {
      if (access(path.c_str(), R_OK) != 0) {
        tried += (tried.empty() ? "" : ", ") + path;
        continue;
      }
      auto api = NcclApi::Load(path);
      if (!api.ok()) return api.status();
      auto b = std::unique_ptr<HostBackend>(new HostBackend());
      b->nccl_ = std::move(*api);
      void* h = b->nccl_.handle;
      int (*is_host)() = reinterpret_cast<int (*)()>(dlsym(h, "ncclrrHostIsHostNccl"));
      b->host_.StreamCreate =
          reinterpret_cast<cudaStream_t (*)()>(dlsym(h, "ncclrrHostStreamCreate"));
      b->host_.StreamDestroy =
          reinterpret_cast<void (*)(cudaStream_t)>(dlsym(h, "ncclrrHostStreamDestroy"));
      b->host_.StreamBusy =
          reinterpret_cast<int (*)(cudaStream_t)>(dlsym(h, "ncclrrHostStreamBusy"));
      b->host_.SetDevice = reinterpret_cast<void (*)(int)>(dlsym(h, "ncclrrHostSetDevice"));
      if (!is_host || is_host() != 1 || !b->host_.StreamCreate || !b->host_.StreamDestroy ||
          !b->host_.StreamBusy || !b->host_.SetDevice)
        return Unsupported("'" + path +
                           "' is not the host NCCL (it lacks the ncclrrHost* calls); point "
                           "NCCLRR_HOSTNCCL_LIBRARY at build/lib/libncclrr-hostnccl.so");
      return std::unique_ptr<Backend>(std::move(b));
    }
    return NotFound("--backend host: the host NCCL library was not found (tried " + tried +
                    "); build the ncclrr_hostnccl target or set NCCLRR_HOSTNCCL_LIBRARY");
  }

  std::string Describe() const override {
    return "host NCCL " + NcclVersionString(nccl_.version) + " (" + nccl_.path + ")";
  }
  int MaxActors() const override { return INT_MAX; }
  size_t PacedUnits() const override { return 32; }
  StatusOr<std::unique_ptr<ActorDevice>> BindActor(int, int recorded_device) override {
    host_.SetDevice(recorded_device);
    return std::unique_ptr<ActorDevice>(new HostActor(nccl_, host_));
  }

 private:
  HostBackend() = default;
  HostCalls host_;
};

}  // namespace

std::string ExecutableDir() {
  char buf[4096];
  const ssize_t n = readlink("/proc/self/exe", buf, sizeof buf - 1);
  if (n <= 0) return "";
  std::string path(buf, static_cast<size_t>(n));
  const size_t slash = path.rfind('/');
  return slash == std::string::npos ? "." : path.substr(0, slash);
}

StatusOr<std::unique_ptr<Backend>> MakeHostBackend(const BackendConfig& config) {
  return HostBackend::Create(config);
}

}  // namespace ncclrr::replay
