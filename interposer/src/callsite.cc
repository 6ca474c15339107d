// Call-site ids. In a Python process, the Python site (python_site.h) by default. With
// --stacks, the chain of return addresses (the wrapper's caller and up to NCCLRR_STACK_DEPTH - 1
// frames above it) too, interned once as text "[py sites<]object+0xoffset<object+0xoffset<..."
// and symbolized offline. Unwinding costs microseconds, so it only runs when asked for.
#include <unwind.h>

#include <cinttypes>
#include <cstdio>
#include <mutex>
#include <string>
#include <unordered_map>

#include "call_path.h"
#include "env_config.h"
#include "python_site.h"
#include "symbols.h"

namespace ncclrr::interpose {
namespace {

constexpr int kMaxFrames = 32;
struct Frames {
  const void* pc[kMaxFrames];
  int n = 0;
  int skip = 0;
};

_Unwind_Reason_Code Collect(_Unwind_Context* ctx, void* arg) {
  auto* f = static_cast<Frames*>(arg);
  const void* pc = reinterpret_cast<const void*>(_Unwind_GetIP(ctx));
  if (pc == nullptr || f->n == kMaxFrames) return _URC_END_OF_STACK;
  if (f->skip > 0) {
    --f->skip;
    return _URC_NO_REASON;
  }
  f->pc[f->n++] = pc;
  return _URC_NO_REASON;
}

std::string Describe(const void* pc) {
  LoadedObject o;
  char buf[64];
  if (!ObjectContaining(pc, &o)) {
    std::snprintf(buf, sizeof buf, "0x%" PRIxPTR, reinterpret_cast<uintptr_t>(pc));
    return buf;
  }
  std::snprintf(buf, sizeof buf, "+0x%" PRIxPTR, reinterpret_cast<uintptr_t>(pc) - o.base);
  const size_t slash = o.path.rfind('/');
  return (slash == std::string::npos ? o.path : o.path.substr(slash + 1)) + buf;
}

std::mutex g_mu;
std::unordered_map<uint64_t, uint32_t>& Ids() {  // never destroyed (calls during exit)
  static auto* ids = new std::unordered_map<uint64_t, uint32_t>();
  return *ids;
}

}  // namespace

uint32_t CallSiteId(const void* caller) {
  const bool python = PythonSitesWanted();
  if (!g_runtime.stacks) return python ? PythonSiteId() : 0;
  // Both: the Python frames, then the native ones.
  PythonSite py;
  const bool with_py = python && ReadPythonSite(&py);
  Frames f;
  const int depth = GetConfig().stack_depth;
  _Unwind_Backtrace(Collect, &f);
  // Start at the wrapper's caller: frames below it are ncclrr's own.
  int first = 0;
  while (first < f.n && f.pc[first] != caller) ++first;
  if (first == f.n) {  // unwinding failed: the immediate caller alone
    f.pc[0] = caller;
    f.n = 1;
    first = 0;
  }
  const int last = std::min(f.n, first + depth);
  uint64_t key = with_py ? py.key : 0xcbf29ce484222325ull;
  for (int i = first; i < last; ++i)
    key = (key ^ reinterpret_cast<uintptr_t>(f.pc[i])) * 0x100000001b3ull;
  std::lock_guard<std::mutex> lock(g_mu);
  auto it = Ids().find(key);
  if (it != Ids().end()) return it->second;
  std::string text = with_py ? PythonSiteText(py) : "";
  for (int i = first; i < last; ++i) {
    if (!text.empty()) text += '<';
    text += Describe(f.pc[i]);
  }
  const uint32_t id = g_runtime.writer->Intern(text);
  Ids().emplace(key, id);
  return id;
}

}  // namespace ncclrr::interpose
