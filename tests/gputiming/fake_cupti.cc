// A stand-in libcupti for tests on machines without a GPU: the activity API entry points ncclrr
// uses, producing records with CUPTI's real layouts (from the installed cupti_activity.h) so that
// ncclrr's own declarations are checked against them. Tests steer it through fakeCupti* functions.
//
// A "launch" (fakeCuptiLaunch) plays the driver's cuLaunchKernelEx: it takes a correlation id;
// calls the subscriber's callback (enter, then exit) when that callback is enabled; if the launch
// API records are enabled and the calling thread has a CUSTOM2 id pushed, it writes the external
// correlation record; then it writes the kernel record. cuptiActivityFlushAll hands the records to
// the client's buffer callbacks.
//
// FAKE_CUPTI_NARROW_IGNORED=1 (or fakeCuptiSetNarrowIgnored) plays a CUDA context made before
// CUPTI started: per-API record settings have no effect there; callbacks still come.
#include <cupti_activity.h>
#include <cupti_callbacks.h>
#include <cupti_driver_cbid.h>

#include <cstdlib>

#include <time.h>

#include <cstring>
#include <deque>
#include <mutex>
#include <set>
#include <string>
#include <vector>

namespace {

struct State {
  std::mutex mu;
  CUpti_BuffersCallbackRequestFunc request = nullptr;
  CUpti_BuffersCallbackCompleteFunc complete = nullptr;
  std::set<int> kinds;
  std::set<uint32_t> driver_cbids;
  std::set<uint32_t> runtime_cbids;
  std::vector<std::vector<uint8_t>> kernel_records, other_records;
  uint32_t next_correlation = 1;
  bool other_subscriber = false, no_gpu = false, split_buffers = false;
  bool narrow_ignored = std::getenv("FAKE_CUPTI_NARROW_IGNORED") != nullptr;
  bool subscribed = false;
  CUpti_CallbackFunc callback = nullptr;  // the subscriber's
  void* userdata = nullptr;
  std::set<std::pair<int, uint32_t>> callbacks;  // (domain, cbid) enabled
  bool callbacks_refused = false;                // every cuptiEnableCallback fails
  std::set<uint32_t> refused_cbids;              // these ids fail (an older CUPTI's unknown ids)
  bool callbacks_silent = false;                 // enabled, but never delivered
  int bad_handle_calls = 0;                      // calls with a handle that is not subscribed
  int flushes = 0;
  int forced_flushes = 0;
  std::deque<std::string> names;  // keeps kernel names alive (and in place), as CUPTI does
};
State& S() {
  static State* s = new State();
  return *s;
}
thread_local std::vector<uint64_t> t_custom2;

uint64_t Realtime() {
  timespec ts;
  clock_gettime(CLOCK_REALTIME, &ts);
  return static_cast<uint64_t>(ts.tv_sec) * 1'000'000'000u + static_cast<uint64_t>(ts.tv_nsec);
}

template <typename T>
std::vector<uint8_t> Bytes(const T& r) {
  std::vector<uint8_t> b(sizeof(T));
  std::memcpy(b.data(), &r, sizeof(T));
  return b;
}

// Buffer format of this fake: records back to back, each preceded by its 8-byte size.
void Deliver(std::vector<std::vector<uint8_t>>& records) {
  State& s = S();
  if (records.empty() || s.request == nullptr) return;
  uint8_t* buf = nullptr;
  size_t size = 0, max_records = 0;
  s.request(&buf, &size, &max_records);
  size_t used = 0;
  for (const auto& r : records) {
    const uint64_t n = r.size();
    if (used + 8 + n > size) break;
    std::memcpy(buf + used, &n, 8);
    std::memcpy(buf + used + 8, r.data(), n);
    used += 8 + n;
  }
  records.clear();
  s.complete(nullptr, 0, buf, size, used);
}

// cuptiActivityEnableDriverApi / RuntimeApi: one set of enabled callback ids each.
CUptiResult EnableApi(std::set<uint32_t> State::*cbids, CUpti_CallbackId cbid, uint8_t enable) {
  std::lock_guard<std::mutex> lock(S().mu);
  if (enable && S().refused_cbids.count(cbid) != 0) return CUPTI_ERROR_INVALID_PARAMETER;
  if (enable) {
    (S().*cbids).insert(cbid);
  } else {
    (S().*cbids).erase(cbid);
  }
  return CUPTI_SUCCESS;
}

}  // namespace

extern "C" {

CUptiResult cuptiGetResultString(CUptiResult result, const char** str) {
  *str = result == CUPTI_SUCCESS ? "CUPTI_SUCCESS" : "CUPTI_ERROR_FAKE";
  return CUPTI_SUCCESS;
}
CUptiResult cuptiGetVersion(uint32_t* version) {
  *version = 130000;
  return CUPTI_SUCCESS;
}
CUptiResult cuptiSubscribe(CUpti_SubscriberHandle* subscriber, CUpti_CallbackFunc callback,
                           void* userdata) {
  State& s = S();
  std::lock_guard<std::mutex> lock(s.mu);
  if (s.no_gpu) return CUPTI_ERROR_UNKNOWN;
  if (s.other_subscriber || s.subscribed) return CUPTI_ERROR_MULTIPLE_SUBSCRIBERS_NOT_SUPPORTED;
  s.subscribed = true;
  s.callback = callback;
  s.userdata = userdata;
  *subscriber = reinterpret_cast<CUpti_SubscriberHandle>(&s);
  return CUPTI_SUCCESS;
}
CUptiResult cuptiUnsubscribe(CUpti_SubscriberHandle subscriber) {
  State& s = S();
  std::lock_guard<std::mutex> lock(s.mu);
  if (!s.subscribed || subscriber != reinterpret_cast<CUpti_SubscriberHandle>(&s)) {
    ++s.bad_handle_calls;
    return CUPTI_ERROR_INVALID_PARAMETER;
  }
  s.subscribed = false;
  s.callback = nullptr;
  s.callbacks.clear();
  return CUPTI_SUCCESS;
}
CUptiResult cuptiEnableCallback(uint32_t enable, CUpti_SubscriberHandle subscriber,
                                CUpti_CallbackDomain domain, CUpti_CallbackId cbid) {
  State& s = S();
  std::lock_guard<std::mutex> lock(s.mu);
  if (!s.subscribed || subscriber != reinterpret_cast<CUpti_SubscriberHandle>(&s)) {
    ++s.bad_handle_calls;
    return CUPTI_ERROR_INVALID_PARAMETER;
  }
  if (enable && (s.callbacks_refused || s.refused_cbids.count(cbid) != 0))
    return CUPTI_ERROR_INVALID_PARAMETER;
  if (enable) {
    s.callbacks.insert({domain, cbid});
  } else {
    s.callbacks.erase({domain, cbid});
  }
  return CUPTI_SUCCESS;
}
CUptiResult cuptiActivityRegisterCallbacks(CUpti_BuffersCallbackRequestFunc request,
                                           CUpti_BuffersCallbackCompleteFunc complete) {
  S().request = request;
  S().complete = complete;
  return CUPTI_SUCCESS;
}
CUptiResult cuptiActivityEnable(CUpti_ActivityKind kind) {
  State& s = S();
  std::lock_guard<std::mutex> lock(s.mu);
  if (s.no_gpu) return CUPTI_ERROR_NOT_INITIALIZED;
  s.kinds.insert(kind);
  return CUPTI_SUCCESS;
}
CUptiResult cuptiActivityDisable(CUpti_ActivityKind kind) {
  std::lock_guard<std::mutex> lock(S().mu);
  S().kinds.erase(kind);
  return CUPTI_SUCCESS;
}
CUptiResult cuptiActivityEnableDriverApi(CUpti_CallbackId cbid, uint8_t enable) {
  return EnableApi(&State::driver_cbids, cbid, enable);
}
CUptiResult cuptiActivityEnableRuntimeApi(CUpti_CallbackId cbid, uint8_t enable) {
  return EnableApi(&State::runtime_cbids, cbid, enable);
}
CUptiResult cuptiActivityPushExternalCorrelationId(CUpti_ExternalCorrelationKind kind,
                                                   uint64_t id) {
  if (kind == CUPTI_EXTERNAL_CORRELATION_KIND_CUSTOM2) t_custom2.push_back(id);
  return CUPTI_SUCCESS;
}
CUptiResult cuptiActivityPopExternalCorrelationId(CUpti_ExternalCorrelationKind kind,
                                                  uint64_t* last) {
  if (kind != CUPTI_EXTERNAL_CORRELATION_KIND_CUSTOM2 || t_custom2.empty())
    return CUPTI_ERROR_QUEUE_EMPTY;
  if (last != nullptr) *last = t_custom2.back();
  t_custom2.pop_back();
  return CUPTI_SUCCESS;
}
CUptiResult cuptiActivityFlushAll(uint32_t flag) {
  State& s = S();
  std::vector<std::vector<uint8_t>> kernels, others;
  {
    std::lock_guard<std::mutex> lock(s.mu);
    ++s.flushes;
    s.forced_flushes += (flag & CUPTI_ACTIVITY_FLAG_FLUSH_FORCED) != 0;
    kernels.swap(s.kernel_records);
    // With split buffers the API records' buffer comes one flush after the kernels' buffer.
    if (!s.split_buffers || s.flushes % 2 == 0) others.swap(s.other_records);
  }
  Deliver(kernels);
  Deliver(others);
  return CUPTI_SUCCESS;
}
CUptiResult cuptiActivityGetNextRecord(uint8_t* buffer, size_t valid, CUpti_Activity** record) {
  size_t offset = 0;
  if (*record != nullptr) {
    const auto* at = reinterpret_cast<uint8_t*>(*record);
    uint64_t n = 0;
    std::memcpy(&n, at - 8, 8);
    offset = static_cast<size_t>(at - buffer) + n;
  }
  if (offset + 8 > valid) return CUPTI_ERROR_MAX_LIMIT_REACHED;
  *record = reinterpret_cast<CUpti_Activity*>(buffer + offset + 8);
  return CUPTI_SUCCESS;
}
CUptiResult cuptiActivityGetNumDroppedRecords(CUcontext, uint32_t, size_t* dropped) {
  *dropped = 0;
  return CUPTI_SUCCESS;
}
CUptiResult cuptiGetTimestamp(uint64_t* timestamp) {
  *timestamp = Realtime();
  return CUPTI_SUCCESS;
}

// ---- Test controls ----
int fakeCuptiForcedFlushes() {
  std::lock_guard<std::mutex> lock(S().mu);
  return S().forced_flushes;
}
void fakeCuptiReset() {
  State& s = S();
  std::lock_guard<std::mutex> lock(s.mu);
  s.forced_flushes = 0;
  s.kinds.clear();
  s.driver_cbids.clear();
  s.runtime_cbids.clear();
  s.kernel_records.clear();
  s.other_records.clear();
  s.other_subscriber = s.no_gpu = s.split_buffers = s.subscribed = s.narrow_ignored = false;
  s.callbacks_refused = s.callbacks_silent = false;
  s.refused_cbids.clear();
  s.bad_handle_calls = 0;
  s.callback = nullptr;
  s.callbacks.clear();
  s.flushes = 0;
  t_custom2.clear();
}
void fakeCuptiSetOtherSubscriber(int on) { S().other_subscriber = on != 0; }
void fakeCuptiSetNoGpu(int on) { S().no_gpu = on != 0; }
void fakeCuptiSetNarrowIgnored(int on) { S().narrow_ignored = on != 0; }
void fakeCuptiSetSplitBuffers(int on) { S().split_buffers = on != 0; }
void fakeCuptiSetCallbacksRefused(int on) { S().callbacks_refused = on != 0; }
void fakeCuptiRefuseCallbackId(uint32_t cbid) { S().refused_cbids.insert(cbid); }
void fakeCuptiSetCallbacksSilent(int on) { S().callbacks_silent = on != 0; }
int fakeCuptiBadHandleCalls() { return S().bad_handle_calls; }
int fakeCuptiCallbacksEnabled() {
  std::lock_guard<std::mutex> lock(S().mu);
  return static_cast<int>(S().callbacks.size());
}
int fakeCuptiEnabled(int kind) {
  std::lock_guard<std::mutex> lock(S().mu);
  return S().kinds.count(kind) != 0 ? 1 : 0;
}
int fakeCuptiDriverApiEnabled(uint32_t cbid) {
  std::lock_guard<std::mutex> lock(S().mu);
  return S().driver_cbids.count(cbid) != 0 ? 1 : 0;
}
int fakeCuptiRuntimeApiEnabled(uint32_t cbid) {
  std::lock_guard<std::mutex> lock(S().mu);
  return S().runtime_cbids.count(cbid) != 0 ? 1 : 0;
}
int fakeCuptiPushedDepth() { return static_cast<int>(t_custom2.size()); }

// The driver launches `name` on `device`; the kernel runs [now+delay, now+delay+duration] on
// CUPTI's clock. Returns the launch's correlation id.
uint32_t fakeCuptiLaunch(int device, const char* name, int64_t delay_ns, int64_t duration_ns) {
  State& s = S();
  uint32_t corr = 0;
  CUpti_CallbackFunc callback = nullptr;
  void* userdata = nullptr;
  {
    std::lock_guard<std::mutex> lock(s.mu);
    corr = s.next_correlation++;
    if (!s.callbacks_silent &&
        s.callbacks.count({CUPTI_CB_DOMAIN_DRIVER_API, CUPTI_DRIVER_TRACE_CBID_cuLaunchKernelEx})) {
      callback = s.callback;
      userdata = s.userdata;
    }
  }
  if (callback != nullptr) {  // on the launching thread, outside CUPTI's locks, as CUPTI does
    CUpti_CallbackData d{};
    d.functionName = "cuLaunchKernelEx";
    d.correlationId = corr;
    for (CUpti_ApiCallbackSite site : {CUPTI_API_ENTER, CUPTI_API_EXIT}) {
      d.callbackSite = site;
      callback(userdata, CUPTI_CB_DOMAIN_DRIVER_API, CUPTI_DRIVER_TRACE_CBID_cuLaunchKernelEx, &d);
    }
  }
  std::lock_guard<std::mutex> lock(s.mu);
  const bool api_records =
      s.kinds.count(CUPTI_ACTIVITY_KIND_DRIVER) != 0 ||
      (!s.narrow_ignored && s.driver_cbids.count(CUPTI_DRIVER_TRACE_CBID_cuLaunchKernelEx) != 0);
  if (api_records && !t_custom2.empty() &&
      s.kinds.count(CUPTI_ACTIVITY_KIND_EXTERNAL_CORRELATION) != 0) {
    CUpti_ActivityExternalCorrelation e{};
    e.kind = CUPTI_ACTIVITY_KIND_EXTERNAL_CORRELATION;
    e.externalKind = CUPTI_EXTERNAL_CORRELATION_KIND_CUSTOM2;
    e.externalId = t_custom2.back();
    e.correlationId = corr;
    s.other_records.push_back(Bytes(e));
  }
  if (s.kinds.count(CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL) != 0) {
    s.names.emplace_back(name);
    CUpti_ActivityKernel10 k{};
    k.kind = CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL;
    const uint64_t now = Realtime();
    k.start = now + static_cast<uint64_t>(delay_ns);
    k.end = k.start + static_cast<uint64_t>(duration_ns);
    k.deviceId = static_cast<uint32_t>(device);
    k.correlationId = corr;
    k.name = s.names.back().c_str();
    s.kernel_records.push_back(Bytes(k));
  }
  return corr;
}

}  // extern "C"
