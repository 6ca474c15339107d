#include "mpi.h"

#include <dlfcn.h>

#include <algorithm>
#include <cstdlib>
#include <cstring>

#include "replay_env.h"
#include "stuck.h"

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
  return w;
}

MpiWorld::~MpiWorld() {
  if (api_ && api_->Finalize) api_->Finalize();
}

void MpiWorld::Broadcast(void* data, size_t bytes) {
  api_->Bcast(data, static_cast<int>(bytes), api_->byte, 0, api_->world);
}

std::vector<std::string> MpiWorld::GatherToRoot(const std::string& blob) {
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
  std::vector<std::string> out;
  for (int i = 0; i < size_ && rank_ == 0; ++i) out.push_back(all.substr(offsets[i], sizes[i]));
  return out;
}

namespace {

// What one process sends rank 0: its actor's call outcomes and report, its hang flag, error and
// times. Plain bytes: every process runs this same binary.
class Blob {
 public:
  explicit Blob(std::string s = {}) : s_(std::move(s)) {}
  template <typename T>
  void Put(const T& v) {
    s_.append(reinterpret_cast<const char*>(&v), sizeof v);
  }
  void PutString(const std::string& v) {
    Put<uint64_t>(v.size());
    s_ += v;
  }
  template <typename T>
  T Get() {
    T v{};
    if (pos_ + sizeof v <= s_.size()) std::memcpy(&v, s_.data() + pos_, sizeof v);
    pos_ += sizeof v;
    return v;
  }
  std::string GetString() {
    const uint64_t n = Get<uint64_t>();
    std::string v = pos_ + n <= s_.size() ? s_.substr(pos_, n) : std::string();
    pos_ += n;
    return v;
  }
  const std::string& str() const { return s_; }

 private:
  std::string s_;
  size_t pos_ = 0;
};

std::string Pack(const ReplayPlan& plan, uint32_t actor, const ExecResult& r) {
  Blob b;
  b.Put<uint32_t>(actor);
  b.Put<uint8_t>(r.hang);
  b.PutString(r.error);
  b.Put<double>(r.seconds);
  b.Put<double>(r.setup_seconds);
  const ActorReport& a = r.actors[actor];
  b.Put<uint64_t>(a.issued_units);
  b.Put<uint8_t>(a.waiting_for_memory);
  b.Put<uint64_t>(a.in_flight_heads.size());
  for (uint32_t u : a.in_flight_heads) b.Put<uint32_t>(u);
  for (uint32_t i = 0; i < plan.calls.size(); ++i) {
    if (plan.calls[i].actor != actor) continue;
    const CallOutcome& o = r.calls[i];
    b.Put<uint32_t>(i);
    b.Put<uint8_t>(static_cast<uint8_t>(o.issued | o.completed << 1 | o.failed << 2));
    b.Put<CallCheck>(o.check);
  }
  return b.str();
}

void Unpack(const ReplayPlan& plan, const std::string& s, ExecResult* merged) {
  Blob b(s);
  const uint32_t actor = b.Get<uint32_t>();
  if (actor >= plan.actors.size()) return;
  merged->hang |= b.Get<uint8_t>() != 0;
  const std::string error = b.GetString();
  if (merged->error.empty()) merged->error = error;
  merged->seconds = std::max(merged->seconds, b.Get<double>());
  merged->setup_seconds = std::max(merged->setup_seconds, b.Get<double>());
  ActorReport& a = merged->actors[actor];
  a.issued_units = b.Get<uint64_t>();
  a.waiting_for_memory = b.Get<uint8_t>() != 0;
  const uint64_t heads = b.Get<uint64_t>();
  for (uint64_t k = 0; k < heads && k < plan.units.size(); ++k)
    a.in_flight_heads.push_back(b.Get<uint32_t>());
  for (uint32_t i = 0; i < plan.calls.size(); ++i) {
    if (plan.calls[i].actor != actor) continue;
    const uint32_t idx = b.Get<uint32_t>();
    const uint8_t flags = b.Get<uint8_t>();
    const CallCheck check = b.Get<CallCheck>();
    if (idx >= plan.calls.size()) return;
    CallOutcome& o = merged->calls[idx];
    o.issued = flags & 1;
    o.completed = flags & 2;
    o.failed = flags & 4;
    o.check = check;
  }
}

}  // namespace

ExecResult ExecuteUnderMpi(MpiWorld& mpi, const ReplayPlan& plan, Backend& backend,
                           const DataSource& data, const IssueOrder& order, ExecOptions options) {
  const uint32_t actor = static_cast<uint32_t>(mpi.rank());
  options.ids.assign(plan.comms.size(), ncclUniqueId{});
  if (mpi.rank() == 0)
    for (size_t ci = 0; ci < plan.comms.size(); ++ci)
      if (plan.comms[ci].used) backend.nccl().GetUniqueId(&options.ids[ci]);
  mpi.Broadcast(options.ids.data(), options.ids.size() * sizeof(ncclUniqueId));
  options.run_actors = {actor};
  options.device_slot = mpi.local_rank();
  options.abort_grace_s = std::min(1.0, options.timeout_s / 2);
  ExecResult local = Execute(plan, backend, data, order, options);
  const std::vector<std::string> all = mpi.GatherToRoot(Pack(plan, actor, local));
  if (mpi.rank() != 0) return local;
  ExecResult merged;
  merged.calls.resize(plan.calls.size());
  merged.actors.resize(plan.actors.size());
  for (const std::string& s : all) Unpack(plan, s, &merged);
  const std::vector<uint64_t> positions = ReplayPositions(plan, order);
  for (size_t i = 0; i < merged.calls.size(); ++i) merged.calls[i].position = positions[i];
  if (merged.hang) merged.error.clear();
  if (merged.hang || !merged.error.empty())
    merged.stuck = ExplainStuck(plan, order, positions, merged.actors);
  return merged;
}

}  // namespace ncclrr::replay
