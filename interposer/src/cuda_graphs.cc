#include "cuda_graphs.h"

#include <dlfcn.h>

#include <cstdio>
#include <map>
#include <memory>
#include <mutex>
#include <unordered_map>

#include "env_config.h"
#include "gpu_timing_hooks.h"
#include "runtime.h"
#include "sketch_hooks.h"
#include "sketch_jobs.h"
#include "symbols.h"

namespace ncclrr::interpose {

std::atomic<bool> g_graphs_active{false};

namespace {

// cuStreamGetCaptureInfo_v3 (CUDA >= 12.3) and _v2 (11.3+): optional outputs may be null.
using CaptureInfoV3 = int (*)(void* stream, int* status, unsigned long long* id, void** graph,
                              const void** deps, const void** edges, size_t* ndeps);
using CaptureInfoV2 = int (*)(void* stream, int* status, unsigned long long* id, void** graph,
                              const void** deps, size_t* ndeps);
CaptureInfoV3 g_info_v3 = nullptr;
CaptureInfoV2 g_info_v2 = nullptr;

// What one graph's templates do to one communicator's sequence numbers at each launch.
struct CommTemplates {
  uint64_t collectives = 0;
  std::map<int64_t, uint64_t> p2p;  // (peer * 2 + recv) -> calls
};
// The templates captured into one graph. Executables keep it alive: a graph may be destroyed
// right after instantiation and its executable launched long after.
struct TemplateSet {
  uint64_t graph = 0;
  uint64_t timing_id = 0;  // GPU timing's name for it: CUDA reuses a destroyed graph's handle
  std::map<CommState*, CommTemplates> comms;
  uint64_t launches = 0;
  uint64_t last_uid = 0;  // of its newest template (a reused graph handle's calls come later)
};
using SetPtr = std::shared_ptr<TemplateSet>;
std::mutex g_mu;
uint64_t g_next_timing_id = 1;  // under g_mu
// Never destroyed (graph calls may arrive while the process exits); made at first use.
std::unordered_map<uint64_t, SetPtr>& Graphs() {  // live graph handle -> set
  static auto* m = new std::unordered_map<uint64_t, SetPtr>();
  return *m;
}
std::unordered_map<uint64_t, SetPtr>& Execs() {  // executable -> set
  static auto* m = new std::unordered_map<uint64_t, SetPtr>();
  return *m;
}
std::vector<SetPtr>& AllSets() {  // every set (for the exit note)
  static auto* v = new std::vector<SetPtr>();
  return *v;
}

void EmitGraphEvent(GraphEventKind kind, uint64_t graph, uint64_t exec, uint64_t stream) {
  Record r{};
  r.kind = RecordKind::kGraphEvent;
  r.graph = {graph, exec, stream, MonotonicNs(), CurrentTid(), static_cast<uint8_t>(kind), {}};
  Emit(r);
}

// A set nothing can launch any more, for the sketch slots of its calls (told after g_mu is
// released: the sketcher's lock comes before g_mu around fork).
struct GoneSet {
  bool gone = false;
  uint64_t graph = 0, last_uid = 0, launches = 0;
  void Tell() const {
    if (gone && g_sketch_on) DeviceSketchGraphGone(graph, last_uid, launches);
  }
};

// Under g_mu, `set` just released by its graph or one executable: GPU timing forgets its
// templates once nothing can launch them (PyTorch destroys the graph right after instantiating).
GoneSet ForgetIfUnused(const SetPtr& set) {
  if (set.use_count() > 2) return {};  // + AllSets
  if (GpuTimingOn()) GpuTimingForgetGraph(set->timing_id);
  return {true, set->graph, set->last_uid, set->launches};
}

bool IsRecording() {
  return g_runtime.stage.load(std::memory_order_acquire) == static_cast<int>(Stage::kRecording);
}

}  // namespace

bool EnterGraphCall() { return t_state.busy++ == 0; }
void LeaveGraphCall() { --t_state.busy; }

std::mutex& GraphMutex() { return g_mu; }

void* LoadedLibcuda() { return dlopen("libcuda.so.1", RTLD_LAZY | RTLD_NOLOAD); }

int CudaDriverVersion() {
  void* h = LoadedLibcuda();
  if (h == nullptr) return 0;
  auto fn = reinterpret_cast<int (*)(int*)>(RealDlsym(h, "cuDriverGetVersion"));
  int v = 0;
  if (fn == nullptr || fn(&v) != 0) v = 0;
  dlclose(h);
  return v;
}

namespace {
// Set when graphs are to be watched but the process had no CUDA driver loaded yet.
std::atomic<bool> g_graphs_wanted{false};

bool ResolveCaptureQuery() {
  void* h = LoadedLibcuda();  // kept open: the process has it loaded anyway
  if (h == nullptr) return false;
  g_info_v3 = reinterpret_cast<CaptureInfoV3>(RealDlsym(h, "cuStreamGetCaptureInfo_v3"));
  if (g_info_v3 == nullptr)
    g_info_v2 = reinterpret_cast<CaptureInfoV2>(RealDlsym(h, "cuStreamGetCaptureInfo_v2"));
  if (g_info_v3 != nullptr || g_info_v2 != nullptr) g_graphs_active.store(true);
  return true;
}
}  // namespace

void InitCudaGraphs(const NcclLibrary& lib) {
  // The host NCCL's streams are not CUDA streams: the driver must not see them (unless a test
  // stands in for the driver, NCCLRR_GRAPHS=2).
  const int mode = GetConfig().graphs;
  if (mode == 0 || (lib.host_nccl && mode < 2)) return;
  // A program may make its first NCCL call (ncclGetUniqueId, ncclCommInitAll) before it touches
  // CUDA: then the driver is loaded by NCCL itself, and RetryCudaGraphs looks again.
  if (!ResolveCaptureQuery()) g_graphs_wanted.store(true);
}

void RetryCudaGraphs() {
  if (!g_graphs_wanted.load(std::memory_order_relaxed)) return;
  std::lock_guard<std::mutex> lock(g_mu);
  if (g_graphs_wanted.load() && ResolveCaptureQuery()) g_graphs_wanted.store(false);
}

CaptureInfo QueryCapture(const void* stream) {
  CaptureInfo out;
  int status = 0;
  unsigned long long id = 0;
  void* graph = nullptr;
  void* s = const_cast<void*>(stream);
  const int rc = g_info_v3 != nullptr
                     ? g_info_v3(s, &status, &id, &graph, nullptr, nullptr, nullptr)
                     : g_info_v2(s, &status, &id, &graph, nullptr, nullptr);
  if (rc != 0 || status == 0) return out;  // an invalid stream is NCCL's to report
  out.capture = status == 1 ? 1 : 2;
  out.graph = reinterpret_cast<uint64_t>(graph);
  return out;
}

uint64_t AddGraphTemplate(const CallRecord& rec, CommState* cs) {
  std::lock_guard<std::mutex> lock(g_mu);
  SetPtr& set = Graphs()[rec.graph_id];
  if (set == nullptr) {
    set = std::make_shared<TemplateSet>();
    set->graph = rec.graph_id;
    set->timing_id = g_next_timing_id++;
    AllSets().push_back(set);
  }
  if (GpuTimingOn()) GpuTimingAddTemplate(set->timing_id, rec);
  if (rec.uid > set->last_uid) set->last_uid = rec.uid;
  CommTemplates& t = set->comms[cs];
  if (IsCollective(static_cast<Api>(rec.api))) return t.collectives++;
  const int64_t key = int64_t{rec.root_peer} * 2 + (static_cast<Api>(rec.api) == Api::kRecv);
  return t.p2p[key]++;
}

void OnGraphInstantiated(uint64_t graph, uint64_t exec) {
  if (!IsRecording()) return;
  {
    std::lock_guard<std::mutex> lock(g_mu);
    auto g = Graphs().find(graph);
    if (g == Graphs().end()) return;  // no NCCL call in this graph
    Execs()[exec] = g->second;
  }
  EmitGraphEvent(GraphEventKind::kInstantiate, graph, exec, 0);
}

uint64_t TimedGraphOfExec(uint64_t exec) {
  std::lock_guard<std::mutex> lock(g_mu);
  auto e = Execs().find(exec);
  return e == Execs().end() ? 0 : e->second->timing_id;
}

void OnGraphLaunched(uint64_t exec, uint64_t stream) {
  if (!IsRecording()) return;
  uint64_t graph;
  {
    std::lock_guard<std::mutex> lock(g_mu);
    auto e = Execs().find(exec);
    if (e == Execs().end()) return;
    TemplateSet& set = *e->second;
    graph = set.graph;
    ++set.launches;
    // The launch runs every template once, in capture order: live numbers move past them.
    for (auto& [cs, t] : set.comms) {
      cs->coll_seq.fetch_add(t.collectives);
      std::atomic<uint64_t>* peers = cs->p2p_seq.load();
      const int64_t n = cs->nranks.load();
      for (const auto& [key, calls] : t.p2p)
        if (peers != nullptr && key >= 0 && key < 2 * n) peers[key].fetch_add(calls);
    }
  }
  EmitGraphEvent(GraphEventKind::kLaunch, graph, exec, stream);
}

void OnGraphExecDestroyed(uint64_t exec) {
  if (!IsRecording()) return;
  uint64_t graph;
  GoneSet gone;
  {
    std::lock_guard<std::mutex> lock(g_mu);
    auto e = Execs().find(exec);
    if (e == Execs().end()) return;
    graph = e->second->graph;
    const SetPtr set = std::move(e->second);
    Execs().erase(e);
    gone = ForgetIfUnused(set);
  }
  gone.Tell();
  EmitGraphEvent(GraphEventKind::kDestroy, graph, exec, 0);
}

void OnGraphDestroyed(uint64_t graph) {
  if (!IsRecording()) return;
  GoneSet gone;
  {
    std::lock_guard<std::mutex> lock(g_mu);
    auto g = Graphs().find(graph);
    if (g == Graphs().end()) return;
    const SetPtr set = std::move(g->second);
    Graphs().erase(g);  // the handle may now be reused by a new graph
    gone = ForgetIfUnused(set);
  }
  gone.Tell();
  EmitGraphEvent(GraphEventKind::kDestroy, graph, 0, 0);
}

void NoteGraphsAtExit() {
  int unlaunched = 0, total = 0;
  {
    std::lock_guard<std::mutex> lock(g_mu);
    for (const SetPtr& set : AllSets()) {
      ++total;
      if (set->launches == 0) ++unlaunched;
    }
  }
  if (unlaunched == 0) return;
  char text[400];
  std::snprintf(text, sizeof text,
                "%d of %d CUDA graph(s) holding NCCL calls were never seen launched: either they "
                "were not launched, or launched through an entry point ncclrr does not see (a "
                "statically linked CUDA runtime); the live sequence numbers of their "
                "communicators then lag behind NCCL's",
                unlaunched, total);
  Note(NoteLevel::kWarning, text);
}

}  // namespace ncclrr::interpose
