#include "mpi.h"

#include <dlfcn.h>

#include <algorithm>
#include <cstdlib>
#include <cstring>

#include "replay_env.h"

namespace ncclrr::replay {

// Open MPI's C API, typed by hand: handles are pointers to the predefined objects.
struct MpiWorld::Api {
  void* handle = nullptr;
  int (*Initialized)(int*) = nullptr;
  int (*InitThread)(int*, char***, int, int*) = nullptr;
  int (*Finalize)() = nullptr;
  int (*CommRank)(void*, int*) = nullptr;
  int (*CommSize)(void*, int*) = nullptr;
  int (*Bcast)(void*, int, void*, int, void*) = nullptr;
  int (*Gather)(const void*, int, void*, void*, int, void*, int, void*) = nullptr;
  int (*Gatherv)(const void*, int, void*, void*, const int*, const int*, void*, int,
                 void*) = nullptr;
  void* world = nullptr;
  void* byte = nullptr;
  void* int32 = nullptr;
};

namespace {

constexpr int kThreadFunneled = 1;  // MPI calls come from the replay's main thread only

template <typename F>
bool Sym(void* h, const char* name, F* f) {
  *f = reinterpret_cast<F>(dlsym(h, name));
  return *f != nullptr;
}

}  // namespace

StatusOr<std::unique_ptr<MpiWorld>> MpiWorld::Init() {
  std::vector<std::string> names;
  if (!Env().mpi_library.empty()) names.push_back(Env().mpi_library);
  names.insert(names.end(), {"libmpi.so.40", "libmpi.so"});
  auto api = std::make_unique<Api>();
  std::string tried;
  for (const std::string& n : names) {
    // RTLD_GLOBAL: Open MPI's components resolve libmpi's symbols when it loads them.
    if ((api->handle = dlopen(n.c_str(), RTLD_NOW | RTLD_GLOBAL)) != nullptr) break;
    tried += (tried.empty() ? "" : ", ") + n;
  }
  if (api->handle == nullptr)
    return NotFound("--mpi: Open MPI's libmpi was not found (tried " + tried +
                    "); install Open MPI (Debian: openmpi-bin) or set NCCLRR_MPI_LIBRARY");
  void* h = api->handle;
  api->world = dlsym(h, "ompi_mpi_comm_world");
  api->byte = dlsym(h, "ompi_mpi_byte");
  api->int32 = dlsym(h, "ompi_mpi_int");
  if (!api->world || !api->byte || !api->int32)
    return Unsupported(
        "--mpi: the libmpi found is not Open MPI's (no ompi_mpi_comm_world); "
        "the replayer speaks Open MPI's ABI");
  if (!Sym(h, "MPI_Initialized", &api->Initialized) ||
      !Sym(h, "MPI_Init_thread", &api->InitThread) || !Sym(h, "MPI_Finalize", &api->Finalize) ||
      !Sym(h, "MPI_Comm_rank", &api->CommRank) || !Sym(h, "MPI_Comm_size", &api->CommSize) ||
      !Sym(h, "MPI_Bcast", &api->Bcast) || !Sym(h, "MPI_Gather", &api->Gather) ||
      !Sym(h, "MPI_Gatherv", &api->Gatherv))
    return Unsupported("--mpi: libmpi lacks a needed MPI function");
  int initialized = 0, provided = 0;
  api->Initialized(&initialized);
  if (!initialized && api->InitThread(nullptr, nullptr, kThreadFunneled, &provided) != 0)
    return IoError("--mpi: MPI_Init_thread failed (is this process started by mpirun?)");
  std::unique_ptr<MpiWorld> w(new MpiWorld());
  w->api_ = std::move(api);
  w->api_->CommRank(w->api_->world, &w->rank_);
  w->api_->CommSize(w->api_->world, &w->size_);
  w->local_rank_ = w->rank_;
  if (Env().mpi_local_rank >= 0) w->local_rank_ = Env().mpi_local_rank;
  w->local_size_ = Env().mpi_local_size > 0 ? Env().mpi_local_size : w->size_;
  return w;
}

MpiWorld::~MpiWorld() {
  if (api_ && api_->Finalize) api_->Finalize();
}

GpuPlacement MpiWorld::Place(int gpus, int nccl_version) {
  placement_ = PlaceOnGpus(local_size_, gpus, nccl_version);
  for (const auto& [k, v] : placement_.EnvFor(local_rank_, HostName()))
    setenv(k.c_str(), v.c_str(), 1);
  return placement_;
}

Status MpiWorld::Broadcast(void* data, size_t bytes) {
  if (api_->Bcast(data, static_cast<int>(bytes), api_->byte, 0, api_->world) != 0)
    return IoError("--mpi: MPI_Bcast failed");
  return Status::Ok();
}

Status MpiWorld::GatherToRoot(const std::string& blob, std::vector<std::string>* out) {
  const int mine = static_cast<int>(blob.size());
  std::vector<int> sizes(static_cast<size_t>(size_)), offsets(static_cast<size_t>(size_));
  api_->Gather(&mine, 1, api_->int32, sizes.data(), 1, api_->int32, 0, api_->world);
  int total = 0;
  for (int i = 0; i < size_ && rank_ == 0; ++i) {
    offsets[i] = total;
    total += sizes[i];
  }
  std::string all(static_cast<size_t>(total), '\0');
  api_->Gatherv(blob.data(), mine, api_->byte, all.data(), sizes.data(), offsets.data(), api_->byte,
                0, api_->world);
  for (int i = 0; i < size_ && rank_ == 0; ++i) out->push_back(all.substr(offsets[i], sizes[i]));
  return Status::Ok();
}

}  // namespace ncclrr::replay
