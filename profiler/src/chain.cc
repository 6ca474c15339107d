#include "chain.h"

#include <dlfcn.h>
#include <unistd.h>

#include <cstdio>
#include <cstring>
#include <mutex>
#include <tuple>
#include <type_traits>

#include "plugin_config.h"
#include "plugin_state.h"

extern "C" ncclrr::profiler::abi::ProfilerV5 ncclProfiler_v5;

namespace ncclrr::profiler {
namespace {

std::string SymbolName(int version) { return "ncclProfiler_v" + std::to_string(version); }

void* OpenPlugin(const std::string& name, std::string* why) {
  // As NCCL does: the name as given, then libnccl-profiler-<name>.so.
  std::vector<std::string> names = {name};
  if (name.find('/') == std::string::npos && name.find(".so") == std::string::npos)
    names.push_back("libnccl-profiler-" + name + ".so");
  for (const std::string& n : names) {
    dlerror();
    if (void* h = dlopen(n.c_str(), RTLD_NOW | RTLD_LOCAL)) return h;
    const char* e = dlerror();
    *why += std::string(why->empty() ? "" : "; ") + (e != nullptr ? e : n + ": not found");
  }
  return nullptr;
}

void Refuse(const std::string& text) {
  std::fprintf(stderr, "ncclrr profiler plugin: %s\n", text.c_str());
  PluginRecorder::Get().Note(NoteLevel::kWarning, text);
}

template <typename Fn>
struct FnArgs;
template <typename R, typename... A>
struct FnArgs<R (*)(A...)> {
  using type = std::tuple<A...>;
};

// The same entry point of whichever version's table the chained plugin has.
template <typename F>
void WithTable(int version, void* table, F&& f) {
  switch (version) {
    case 5:
      f(static_cast<abi::ProfilerV5*>(table));
      break;
    case 4:
      f(static_cast<abi::ProfilerV4*>(table));
      break;
    case 3:
      f(static_cast<abi::ProfilerV3*>(table));
      break;
    case 2:
      f(static_cast<abi::ProfilerV2*>(table));
      break;
    default:
      f(static_cast<abi::ProfilerV1*>(table));
      break;
  }
}

template <typename Descr>
void TranslateParent(Descr* d) {
  if ((d->type & 0xff) == abi::kProxyOp && d->proxyOp.pid != getpid()) return;  // not ours
  d->parentObj = ChainedParent(d->parentObj);
}

}  // namespace

void* ChainedParent(void* ours) {
  Handle* h = AsHandle(ours);
  return h != nullptr ? h->chained : nullptr;
}

ChainedPlugin* ChainedPlugin::Get(int nccl_version) {
  static std::once_flag once;
  static ChainedPlugin* chained = nullptr;
  std::call_once(once, [nccl_version] {
    const std::string& name = GetPluginConfig().chain;
    if (name.empty()) return;
    std::string why;
    void* lib = OpenPlugin(name, &why);
    if (lib == nullptr) {
      Refuse("the chained profiler plugin NCCLRR_CHAIN_PROFILER_PLUGIN=" + name +
             " cannot be loaded (" + why + "); the job runs without it");
      return;
    }
    if (dlsym(lib, "ncclProfiler_v5") == &ncclProfiler_v5) {
      Refuse("NCCLRR_CHAIN_PROFILER_PLUGIN names ncclrr's own plugin; nothing is chained");
      return;
    }
    int version = nccl_version;
    void* table = dlsym(lib, SymbolName(version).c_str());
    if (table == nullptr && nccl_version == 5) {
      version = 4;  // v5 descriptors translate to v4
      table = dlsym(lib, "ncclProfiler_v4");
    }
    if (table == nullptr) {
      std::string has;
      for (int v = 1; v <= 6; ++v)
        if (dlsym(lib, SymbolName(v).c_str()) != nullptr) has += " v" + std::to_string(v);
      Refuse("the chained profiler plugin " + name + " exports interface" +
             (has.empty() ? " none" : has) + " but NCCL talks to profiler plugins with v" +
             std::to_string(nccl_version) +
             " here (ncclrr translates only v5 to v4); rebuild it for this NCCL. The job runs "
             "without it");
      return;
    }
    chained = new ChainedPlugin();
    chained->version_ = version;
    chained->table_ = table;
    chained->path_ = name;
    PluginRecorder::Get().Note(NoteLevel::kInfo, "chained profiler plugin " + name + " (v" +
                                                     std::to_string(version) + ")");
  });
  return chained;
}

int ChainedPlugin::InitV5(void** ctx, uint64_t comm_id, const char* name, int nnodes, int nranks,
                          int rank, abi::Logger log) {
  int mask = 0;
  abi::Result r = 0;
  if (version_ == 5) {
    r = static_cast<abi::ProfilerV5*>(table_)->init(ctx, comm_id, &mask, name, nnodes, nranks, rank,
                                                    log);
  } else {
    r = static_cast<abi::ProfilerV4*>(table_)->init(ctx, &mask, name, comm_id, nnodes, nranks, rank,
                                                    log);
  }
  if (r != 0) *ctx = nullptr;
  mask_ |= r == 0 ? mask : 0;
  return r == 0 ? mask : 0;
}

int ChainedPlugin::InitV4(void** ctx, const char* name, uint64_t comm_hash, int nnodes, int nranks,
                          int rank, abi::Logger log) {
  int mask = 0;
  const abi::Result r = static_cast<abi::ProfilerV4*>(table_)->init(ctx, &mask, name, comm_hash,
                                                                    nnodes, nranks, rank, log);
  if (r != 0) *ctx = nullptr;
  mask_ |= r == 0 ? mask : 0;
  return r == 0 ? mask : 0;
}

int ChainedPlugin::InitV1to3(void** ctx) {
  int mask = 0;
  abi::Result r = 0;
  WithTable(version_, table_, [&](auto* t) {
    if constexpr (std::is_invocable_v<decltype(t->init), void**, int*>) r = t->init(ctx, &mask);
  });
  if (r != 0) *ctx = nullptr;
  mask_ |= r == 0 ? mask : 0;
  return r == 0 ? mask : 0;
}

void* ChainedPlugin::Start(void* ctx, const abi::DescrV5& d) {
  if (ctx == nullptr || !Wants(d.type)) return nullptr;
  void* handle = nullptr;
  const int type = static_cast<int>(d.type);
  if (version_ == 5) {
    abi::DescrV5 c = d;
    TranslateParent(&c);
    if (type == abi::kColl) c.coll.parentGroup = ChainedParent(c.coll.parentGroup);
    if (type == abi::kP2p) c.p2p.parentGroup = ChainedParent(c.p2p.parentGroup);
    static_cast<abi::ProfilerV5*>(table_)->startEvent(ctx, &handle, &c);
    return handle;
  }
  if (type > abi::kNetPlugin) return nullptr;  // API and launch events do not exist in v4
  abi::DescrV4 c{};
  c.type = static_cast<uint8_t>(type);
  c.rank = d.rank;
  c.parentObj = d.parentObj;
  if (type == abi::kColl) {
    // In v4 a task's parent is its group (v5 keeps that in parentGroup).
    c.parentObj = ChainedParent(d.coll.parentGroup);
    c.coll = {d.coll.seqNumber, d.coll.func, d.coll.sendBuff, d.coll.recvBuff,
              d.coll.count,     d.coll.root, d.coll.datatype, d.coll.nChannels,
              d.coll.nWarps,    d.coll.algo, d.coll.proto};
  } else if (type == abi::kP2p) {
    c.parentObj = ChainedParent(d.p2p.parentGroup);
    c.p2p = {d.p2p.func, d.p2p.buff, d.p2p.datatype, d.p2p.count, d.p2p.peer, d.p2p.nChannels};
  } else {
    // Proxy, kernel-channel and net-plugin members are laid out alike in v4 and v5.
    std::memcpy(&c.proxyOp, &d.proxyOp, sizeof(c) - offsetof(abi::DescrV4, proxyOp));
    TranslateParent(&c);
  }
  static_cast<abi::ProfilerV4*>(table_)->startEvent(ctx, &handle, &c);
  return handle;
}

#define NCCLRR_CHAIN_START_SAME_VERSION(Descr, Table)               \
  void* ChainedPlugin::Start(void* ctx, const abi::Descr& d) {      \
    if (ctx == nullptr || !Wants(d.type)) return nullptr;           \
    abi::Descr c = d;                                               \
    TranslateParent(&c);                                            \
    void* handle = nullptr;                                         \
    static_cast<abi::Table*>(table_)->startEvent(ctx, &handle, &c); \
    return handle;                                                  \
  }
NCCLRR_CHAIN_START_SAME_VERSION(DescrV4, ProfilerV4)
NCCLRR_CHAIN_START_SAME_VERSION(DescrV3, ProfilerV3)
NCCLRR_CHAIN_START_SAME_VERSION(DescrV2, ProfilerV2)
NCCLRR_CHAIN_START_SAME_VERSION(DescrV1, ProfilerV1)
#undef NCCLRR_CHAIN_START_SAME_VERSION

void ChainedPlugin::Stop(void* handle) {
  if (handle == nullptr) return;
  WithTable(version_, table_, [&](auto* t) { t->stopEvent(handle); });
}

// NCCL passes state arguments of its own version; v5 and v4 agree on their layout.
void ChainedPlugin::RecordState(void* handle, int state, void* args) {
  if (handle == nullptr) return;
  WithTable(version_, table_, [&](auto* t) {
    using Args = std::remove_pointer_t<
        std::tuple_element_t<2, typename FnArgs<decltype(t->recordEventState)>::type>>;
    t->recordEventState(handle, state, static_cast<Args*>(args));
  });
}

void ChainedPlugin::Finalize(void* ctx) {
  if (ctx == nullptr) return;
  WithTable(version_, table_, [&](auto* t) { t->finalize(ctx); });
}

}  // namespace ncclrr::profiler
