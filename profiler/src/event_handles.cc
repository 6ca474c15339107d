#include "event_handles.h"

#include <deque>
#include <mutex>

namespace ncclrr::profiler {
namespace {

Handle g_group_api{kHandleMagic, HandleKind::kGroupApi, nullptr};
Handle g_task{kHandleMagic, HandleKind::kTask, nullptr};
Handle g_other{kHandleMagic, HandleKind::kOther, nullptr};

struct PooledHandle {
  Handle h;
};
std::mutex g_pool_mu;
std::deque<PooledHandle*> g_retired;
constexpr size_t kRetiredBeforeReuse = 1 << 16;

}  // namespace

Handle* NewHandle(HandleKind kind, bool chaining) {
  if (!chaining) {
    return kind == HandleKind::kGroupApi ? &g_group_api
           : kind == HandleKind::kTask   ? &g_task
                                         : &g_other;
  }
  PooledHandle* p = nullptr;
  {
    std::lock_guard<std::mutex> lock(g_pool_mu);
    if (g_retired.size() > kRetiredBeforeReuse) {
      p = g_retired.front();
      g_retired.pop_front();
    }
  }
  if (p == nullptr) p = new PooledHandle();
  p->h.kind = kind;
  p->h.chained = nullptr;
  return &p->h;
}

void RetireHandle(Handle* h) {
  if (h == &g_group_api || h == &g_task || h == &g_other || h->kind == HandleKind::kApiCall) return;
  std::lock_guard<std::mutex> lock(g_pool_mu);
  g_retired.push_back(reinterpret_cast<PooledHandle*>(h));  // h is PooledHandle's first member
}

}  // namespace ncclrr::profiler
