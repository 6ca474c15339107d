// Python call sites (python_site.h). Per call: the frame chain read in place, a per-thread
// cache that says which code objects are frameworks' internals, a hash of the kept frames, and
// a per-thread cache from that hash to the interned id. Text is made once per distinct site.
#include "python_site.h"

#include <mutex>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "env_config.h"
#include "ncclrr/trace/describe.h"
#include "python_frames.h"
#include "runtime.h"

namespace ncclrr::interpose {
namespace {

// A comma-separated list's items (empty ones left out), made once; never destroyed (calls
// during exit).
const std::vector<std::string>* Fragments(std::string_view list) {
  auto* v = new std::vector<std::string>();
  while (!list.empty()) {
    const size_t comma = list.find(',');
    if (comma != 0) v->emplace_back(list.substr(0, comma));
    if (comma == std::string_view::npos) break;
    list.remove_prefix(comma + 1);
  }
  return v;
}

const std::vector<std::string>& SkipFragments() {
  static const auto* fragments = Fragments(GetConfig().py_skip);
  return *fragments;
}

const std::vector<std::string>& ApiFragments() {
  static const auto* fragments = Fragments(GetConfig().py_api);
  return *fragments;
}

// A frame's kind: the job's own code, a framework's internals, or the framework's collective
// API itself (the function that called NCCL and its logging wrapper).
enum class FrameKind : uint8_t { kUser, kInternal, kCollectiveApi };

FrameKind KindOf(const void* code) {
  const std::string file = PyCodeFile(code);
  bool internal = false;
  for (const std::string& f : SkipFragments()) internal |= file.find(f) != std::string::npos;
  if (!internal) return FrameKind::kUser;
  for (const std::string& api : ApiFragments())
    if (file.find(api) != std::string::npos) return FrameKind::kCollectiveApi;
  return FrameKind::kInternal;
}

// Direct-mapped per-thread caches: no locks on the per-call path. A code object is known by
// its address and its file name object, so a freed code whose address is reused by another is
// told apart in all but the rarest case.
struct CodeClass {
  const void* code = nullptr;
  const void* file = nullptr;
  FrameKind kind = FrameKind::kUser;
};
struct SiteSlot {
  uint64_t key = 0;
  uint32_t id = 0;
};
// Two-way sets of code objects, and sites by key: a training step touches a few dozen of each,
// so a miss (a file name read char by char, or the global map under its lock) stays rare.
struct SiteCache {
  static constexpr int kCodeSets = 256, kSites = 256;
  CodeClass classes[kCodeSets][2];
  uint8_t next_way[kCodeSets] = {};
  SiteSlot sites[kSites];
};
thread_local SiteCache t_cache;

size_t CodeSet(const void* code) {
  return static_cast<size_t>((reinterpret_cast<uintptr_t>(code) * 0x9E3779B97F4A7C15ull) >> 56);
}

FrameKind Kind(SiteCache& cache, const void* code) {
  const size_t set = CodeSet(code);
  const void* file = PyCodeFileObject(code);
  for (CodeClass& c : cache.classes[set])
    if (c.code == code && c.file == file) return c.kind;
  CodeClass& c = cache.classes[set][cache.next_way[set]];
  cache.next_way[set] ^= 1;
  c = {code, file, KindOf(code)};
  return c.kind;
}

std::mutex g_mu;
std::unordered_map<uint64_t, uint32_t>& Ids() {  // never destroyed (calls during exit)
  static auto* ids = new std::unordered_map<uint64_t, uint32_t>();
  return *ids;
}

}  // namespace

bool PythonSitesWanted() { return GetConfig().py_sites; }

namespace {
bool ReadSite(SiteCache& cache, PythonSite* out) {
  out->depth = 0;
  if (!PythonFramesReadable()) return false;
  const int depth = GetConfig().py_depth;
  uint64_t key = 0xcbf29ce484222325ull;
  auto keep = [&](PyFrameRef f) {
    f.lasti = PyFrameCursor::Lasti(f);
    out->frame[out->depth] = f.frame;
    out->code[out->depth] = f.code;
    out->lasti[out->depth] = f.lasti;
    ++out->depth;
    key = (key ^ reinterpret_cast<uintptr_t>(f.code)) * 0x100000001b3ull;
    key = (key ^ reinterpret_cast<uintptr_t>(PyCodeFileObject(f.code))) * 0x100000001b3ull;
    key = (key ^ static_cast<uint32_t>(f.lasti)) * 0x100000001b3ull;
  };
  PyFrameRef f, innermost, caller;
  bool any = false, have_caller = false;
  for (PyFrameCursor cursor; out->depth < depth && cursor.Next(&f);) {
    if (!any) innermost = f;
    any = true;
    const FrameKind kind = Kind(cache, f.code);
    if (kind == FrameKind::kUser) keep(f);
    if (kind == FrameKind::kInternal && !have_caller) {
      caller = f;
      have_caller = true;
    }
  }
  if (!any) return false;
  // Only frameworks' frames (a call from inside torch itself, such as a DDP communication hook):
  // the innermost one that called the collective API, which tells such calls apart; else the
  // innermost.
  if (out->depth == 0) keep(have_caller ? caller : innermost);
  out->key = key | 1;  // never 0: 0 marks an empty cache slot
  return true;
}
}  // namespace

bool ReadPythonSite(PythonSite* out) { return ReadSite(t_cache, out); }

std::string PythonSiteText(const PythonSite& site) {
  std::string text;
  for (int i = 0; i < site.depth; ++i) {
    if (i > 0) text += '<';
    PyFrameRef f;
    f.frame = site.frame[i];
    f.code = site.code[i];
    f.lasti = site.lasti[i];
    text += SiteFrame(PyCodeFile(f.code), PyFrameLine(f), PyCodeName(f.code));
  }
  return text;
}

uint32_t PythonSiteId() {
  SiteCache& cache = t_cache;
  PythonSite site;
  if (!ReadSite(cache, &site)) return 0;
  SiteSlot& slot = cache.sites[(site.key >> 16) % SiteCache::kSites];
  if (slot.key == site.key) return slot.id;
  uint32_t id;
  {
    std::lock_guard<std::mutex> lock(g_mu);
    auto it = Ids().find(site.key);
    if (it != Ids().end()) {
      id = it->second;
    } else {
      id = g_runtime.writer->Intern(PythonSiteText(site));
      Ids().emplace(site.key, id);
    }
  }
  slot = {site.key, id};
  return id;
}

}  // namespace ncclrr::interpose
