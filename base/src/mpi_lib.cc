#include "ncclrr/base/mpi_lib.h"

#include <dlfcn.h>

#include <algorithm>
#include <cstdlib>

#include "ncclrr/base/dl.h"
#include "ncclrr/base/env_knobs.h"

namespace ncclrr {

// Open MPI's C API, typed by hand: handles are pointers to the predefined objects.
struct MpiLib::Api {
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
  int (*Alltoall)(const void*, int, void*, void*, int, void*, void*) = nullptr;
  int (*Alltoallv)(const void*, const int*, const int*, void*, void*, const int*, const int*, void*,
                   void*) = nullptr;
  void* world = nullptr;
  void* byte = nullptr;
  void* int32 = nullptr;
  void* uint64 = nullptr;
};

namespace {

constexpr int kThreadFunneled = 1;  // MPI calls come from one thread only

}  // namespace

StatusOr<std::unique_ptr<MpiLib>> MpiLib::Init(const std::string& who) {
  std::vector<std::string> names;
  if (std::string lib = env::String("NCCLRR_MPI_LIBRARY", ""); !lib.empty()) names.push_back(lib);
  names.insert(names.end(), {"libmpi.so.40", "libmpi.so"});
  auto api = std::make_unique<Api>();
  std::string tried;
  for (const std::string& n : names) {
    // RTLD_GLOBAL: Open MPI's components resolve libmpi's symbols when it loads them.
    if ((api->handle = dlopen(n.c_str(), RTLD_NOW | RTLD_GLOBAL)) != nullptr) break;
    tried += (tried.empty() ? "" : ", ") + n;
  }
  if (api->handle == nullptr)
    return NotFound(who + ": Open MPI's libmpi was not found (tried " + tried +
                    "); install Open MPI (Debian: openmpi-bin) or set NCCLRR_MPI_LIBRARY");
  void* h = api->handle;
  api->world = dlsym(h, "ompi_mpi_comm_world");
  api->byte = dlsym(h, "ompi_mpi_byte");
  api->int32 = dlsym(h, "ompi_mpi_int");
  api->uint64 = dlsym(h, "ompi_mpi_uint64_t");
  if (!api->world || !api->byte || !api->int32 || !api->uint64)
    return Unsupported(who +
                       ": the libmpi found is not Open MPI's (no ompi_mpi_comm_world); ncclrr "
                       "speaks Open MPI's ABI");
  if (!dl::LoadSymbol(h, "MPI_Initialized", &api->Initialized) ||
      !dl::LoadSymbol(h, "MPI_Init_thread", &api->InitThread) ||
      !dl::LoadSymbol(h, "MPI_Finalize", &api->Finalize) ||
      !dl::LoadSymbol(h, "MPI_Comm_rank", &api->CommRank) ||
      !dl::LoadSymbol(h, "MPI_Comm_size", &api->CommSize) ||
      !dl::LoadSymbol(h, "MPI_Bcast", &api->Bcast) ||
      !dl::LoadSymbol(h, "MPI_Gather", &api->Gather) ||
      !dl::LoadSymbol(h, "MPI_Gatherv", &api->Gatherv) ||
      !dl::LoadSymbol(h, "MPI_Alltoall", &api->Alltoall) ||
      !dl::LoadSymbol(h, "MPI_Alltoallv", &api->Alltoallv))
    return Unsupported(who + ": libmpi lacks a needed MPI function");
  int initialized = 0, provided = 0;
  api->Initialized(&initialized);
  if (!initialized && api->InitThread(nullptr, nullptr, kThreadFunneled, &provided) != 0)
    return IoError(who + ": MPI_Init_thread failed (is this process started by mpirun?)");
  std::unique_ptr<MpiLib> m(new MpiLib());
  m->api_ = std::move(api);
  m->who_ = who;
  m->api_->CommRank(m->api_->world, &m->rank_);
  m->api_->CommSize(m->api_->world, &m->size_);
  return m;
}

MpiLib::~MpiLib() {
  if (api_ && api_->Finalize) api_->Finalize();
}

Status MpiLib::Broadcast(void* data, size_t bytes) {
  if (api_->Bcast(data, static_cast<int>(bytes), api_->byte, 0, api_->world) != 0)
    return IoError(who_ + ": MPI_Bcast failed");
  return Status::Ok();
}

Status MpiLib::GatherToRoot(const std::string& blob, std::vector<std::string>* out) {
  const int mine = static_cast<int>(blob.size());
  std::vector<int> sizes(static_cast<size_t>(size_)), offsets(static_cast<size_t>(size_));
  if (api_->Gather(&mine, 1, api_->int32, sizes.data(), 1, api_->int32, 0, api_->world) != 0)
    return IoError(who_ + ": MPI_Gather failed");
  int total = 0;
  for (int i = 0; i < size_ && rank_ == 0; ++i) {
    offsets[i] = total;
    total += sizes[i];
  }
  std::string all(static_cast<size_t>(total), '\0');
  if (api_->Gatherv(blob.data(), mine, api_->byte, all.data(), sizes.data(), offsets.data(),
                    api_->byte, 0, api_->world) != 0)
    return IoError(who_ + ": MPI_Gatherv failed");
  for (int i = 0; i < size_ && rank_ == 0; ++i) out->push_back(all.substr(offsets[i], sizes[i]));
  return Status::Ok();
}

Status MpiLib::AllToAll(const std::string& out, const std::vector<uint64_t>& out_sizes,
                        std::string* in, std::vector<uint64_t>* in_sizes) {
  const auto n = static_cast<size_t>(size_);
  in_sizes->assign(n, 0);
  if (api_->Alltoall(out_sizes.data(), 1, api_->uint64, in_sizes->data(), 1, api_->uint64,
                     api_->world) != 0)
    return IoError(who_ + ": MPI_Alltoall failed");
  bool words = true;
  uint64_t out_total = 0, in_total = 0;
  for (size_t p = 0; p < n; ++p) {
    words = words && out_sizes[p] % 8 == 0 && (*in_sizes)[p] % 8 == 0;
    out_total += out_sizes[p];
    in_total += (*in_sizes)[p];
  }
  // Every process must agree on the unit: one that sends bytes makes all of them send bytes.
  std::vector<uint64_t> mine(n, words ? 1 : 0), theirs(n, 0);
  if (api_->Alltoall(mine.data(), 1, api_->uint64, theirs.data(), 1, api_->uint64, api_->world) !=
      0)
    return IoError(who_ + ": MPI_Alltoall failed");
  bool agreed = true;
  for (uint64_t w : theirs) agreed = agreed && w != 0;
  const uint64_t unit = agreed ? 8 : 1;
  if (out_total / unit > INT32_MAX || in_total / unit > INT32_MAX)
    return Unsupported(who_ + ": more than MPI's int counts can address in one exchange (" +
                       std::to_string(std::max(out_total, in_total) >> 20) +
                       " MiB); use more processes");
  std::vector<int> scount(n), sdispl(n), rcount(n), rdispl(n);
  uint64_t so = 0, ro = 0;
  for (size_t p = 0; p < n; ++p) {
    scount[p] = static_cast<int>(out_sizes[p] / unit);
    rcount[p] = static_cast<int>((*in_sizes)[p] / unit);
    sdispl[p] = static_cast<int>(so);
    rdispl[p] = static_cast<int>(ro);
    so += out_sizes[p] / unit;
    ro += (*in_sizes)[p] / unit;
  }
  in->resize(in_total);
  void* type = unit == 8 ? api_->uint64 : api_->byte;
  if (api_->Alltoallv(out.data(), scount.data(), sdispl.data(), type, in->data(), rcount.data(),
                      rdispl.data(), type, api_->world) != 0)
    return IoError(who_ + ": MPI_Alltoallv failed");
  return Status::Ok();
}

}  // namespace ncclrr
