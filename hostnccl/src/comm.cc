#include "comm.h"

#include <sys/random.h>
#include <time.h>
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <cstring>

#include "env.h"

namespace ncclrr::host {
namespace {

constexpr char kIdMagic[8] = {'N', 'C', 'C', 'L', 'R', 'R', 'H', '1'};

struct IdPayload {
  char magic[8];
  uint64_t nonce;
};
static_assert(sizeof(IdPayload) <= NCCL_UNIQUE_ID_BYTES);

std::string MissingRanks(const Segment& seg) {
  std::string s;
  for (int q = 0; q < seg.nranks(); ++q) {
    if (!seg.Joined(q)) s += (s.empty() ? "" : ",") + std::to_string(q);
  }
  return s;
}

// Rendezvous step shared by root and child ranks: done when every rank has attached.
std::function<ncclResult_t()> MakeJoinStep(CommRank* c) {
  return [c]() -> ncclResult_t {
    if (c->seg.Ready()) {
      c->seg.Unlink();  // everyone has it mapped; the name is no longer needed
      return ncclSuccess;
    }
    if (c->aborted.load()) return ncclInvalidUsage;
    if (NowNs() - c->init_started_ns > TimeoutNs()) {
      c->seg.Unlink();
      c->SetAsyncError(ncclRemoteError, c->Label() + ": init did not complete within " +
                                            std::to_string(TimeoutNs() / 1000000) + " ms: ranks [" +
                                            MissingRanks(c->seg) + "] never joined");
      return ncclRemoteError;
    }
    return ncclInProgress;
  };
}

void ApplyConfig(CommRank* c, const ncclConfig_t* cfg) {
  if (cfg == nullptr) return;
  if (cfg->blocking == 0) c->blocking = false;
  if (cfg->commName != nullptr) c->name = cfg->commName;
}

}  // namespace

int64_t NowNs() {
  timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return int64_t(ts.tv_sec) * 1000000000 + ts.tv_nsec;
}

uint64_t NcclHash(const char* bytes, int n) {
  // NCCL's getHash (DJB2a), so a root communicator's hash equals the one real NCCL would report.
  uint64_t h = 5381;
  for (int i = 0; i < n; ++i) h = ((h << 5) + h) ^ uint64_t(int64_t(bytes[i]));
  return h;
}

int& ThreadDevice() {
  thread_local int device = -1;
  return device;
}

void CommRank::SetAsyncError(ncclResult_t r, const std::string& message) {
  int expected = ncclSuccess;
  if (async_error_.compare_exchange_strong(expected, r) && !message.empty()) {
    std::fprintf(stderr, "ncclrr-host: %s\n", message.c_str());
  }
}

ncclResult_t CommRank::StepInit() {
  std::lock_guard<std::mutex> lock(init_mu);
  if (!init_step) return ncclSuccess;
  ncclResult_t r = init_step();
  if (r == ncclInProgress) return r;
  init_step = nullptr;
  if (r != ncclSuccess) SetAsyncError(r, "");
  return r;
}

std::string CommRank::Label() const {
  char buf[96];
  std::snprintf(buf, sizeof(buf), "comm 0x%016llx", static_cast<unsigned long long>(hash));
  std::string s = buf;
  if (!name.empty()) s += " \"" + name + "\"";
  return s + " rank " + std::to_string(rank) + "/" + std::to_string(nranks);
}

ncclResult_t MakeUniqueId(ncclUniqueId* id) {
  if (id == nullptr) return ncclInvalidArgument;
  std::memset(id, 0, sizeof(*id));
  IdPayload p{};
  std::memcpy(p.magic, kIdMagic, sizeof(kIdMagic));
  if (getrandom(&p.nonce, sizeof(p.nonce), 0) != sizeof(p.nonce)) {
    p.nonce = uint64_t(NowNs()) ^ (uint64_t(getpid()) << 32);
  }
  std::memcpy(id->internal, &p, sizeof(p));
  return ncclSuccess;
}

ncclResult_t StartChildRank(const std::string& seg_name, uint64_t hash, int nranks, int rank,
                            int device, const ncclConfig_t* cfg, std::shared_ptr<CommRank>* out) {
  auto c = std::make_shared<CommRank>();
  c->seg_name = seg_name;
  c->hash = hash;
  c->rank = rank;
  c->nranks = nranks;
  c->device = device;
  c->next_send.assign(nranks, 0);
  c->next_recv.assign(nranks, 0);
  ApplyConfig(c.get(), cfg);
  std::string err = c->seg.Attach(seg_name, nranks, rank);
  if (!err.empty()) {
    std::fprintf(stderr, "ncclrr-host: %s: %s\n", c->Label().c_str(), err.c_str());
    return ncclInvalidUsage;
  }
  c->init_started_ns = NowNs();
  c->init_step = MakeJoinStep(c.get());
  *out = std::move(c);
  return ncclSuccess;
}

ncclResult_t StartRootRank(const ncclUniqueId& id, int nranks, int rank, const ncclConfig_t* cfg,
                           std::shared_ptr<CommRank>* out) {
  IdPayload p;
  std::memcpy(&p, id.internal, sizeof(p));
  if (std::memcmp(p.magic, kIdMagic, sizeof(kIdMagic)) != 0) {
    std::fprintf(stderr,
                 "ncclrr-host: the unique id was not made by the host NCCL's "
                 "ncclGetUniqueId\n");
    return ncclInvalidArgument;
  }
  if (nranks < 1 || rank < 0 || rank >= nranks) return ncclInvalidArgument;
  const int dev = ThreadDevice() >= 0 ? ThreadDevice() : rank;
  return StartChildRank(SegmentNameFromNonce(p.nonce), NcclHash(id.internal, NCCL_UNIQUE_ID_BYTES),
                        nranks, rank, dev, cfg, out);
}

std::function<ncclResult_t()> MakeSplitStep(std::shared_ptr<CommRank> parent, int color, int key,
                                            const ncclConfig_t* cfg, ncclComm_t* newcomm) {
  struct State {
    int phase = 0;
    uint64_t round = 0;
    int64_t started = 0;
    std::shared_ptr<CommRank> child;
    ncclConfig_t cfg{};
    bool has_cfg = false;
  };
  auto st = std::make_shared<State>();
  st->round = parent->boot_round++;
  st->started = NowNs();
  if (cfg != nullptr) {
    st->cfg = *cfg;
    st->has_cfg = true;
  }
  return [parent, color, key, newcomm, st]() -> ncclResult_t {
    const Segment& seg = parent->seg;
    const int n = parent->nranks;
    auto all_reached = [&](bool posted, uint64_t v) {
      for (int q = 0; q < n; ++q) {
        const auto& w = posted ? seg.boot(q).posted : seg.boot(q).read;
        if (w.load(std::memory_order_acquire) < v) return false;
      }
      return true;
    };
    if (st->phase == 0) {  // previous round's values read by everyone: the cell may be reused
      if (all_reached(false, st->round)) {
        BootCell& mine = seg.boot(parent->rank);
        mine.color = color;
        mine.key = key;
        mine.posted.store(st->round + 1, std::memory_order_release);
        seg.Bump();
        st->phase = 1;
      }
    }
    if (st->phase == 1 && all_reached(true, st->round + 1)) {
      // New rank: order by (key, parent rank) among the ranks of my color, like NCCL.
      int new_rank = 0, new_n = 0;
      for (int q = 0; q < n; ++q) {
        const BootCell& b = seg.boot(q);
        if (b.color != color || color == NCCL_SPLIT_NOCOLOR) continue;
        ++new_n;
        if (b.key < key || (b.key == key && q < parent->rank)) ++new_rank;
      }
      seg.boot(parent->rank).read.store(st->round + 1, std::memory_order_release);
      seg.Bump();
      if (color == NCCL_SPLIT_NOCOLOR) {
        *newcomm = nullptr;
        return ncclSuccess;
      }
      char lineage[96];
      std::snprintf(lineage, sizeof(lineage), "%s/split%llu/color%d", parent->seg_name.c_str(),
                    static_cast<unsigned long long>(st->round), color);
      const uint64_t h = NcclHash(lineage, int(std::strlen(lineage)));
      ncclResult_t r = StartChildRank(SegmentNameFromNonce(h), h, new_n, new_rank, parent->device,
                                      st->has_cfg ? &st->cfg : nullptr, &st->child);
      if (r != ncclSuccess) return r;
      st->phase = 2;
    }
    if (st->phase == 2) {
      ncclResult_t r = st->child->StepInit();
      if (r == ncclInProgress) return r;
      if (r != ncclSuccess) return r;
      *newcomm = new ncclComm{kCommMagic, st->child};
      return ncclSuccess;
    }
    if (NowNs() - st->started > TimeoutNs()) {
      parent->SetAsyncError(ncclRemoteError, parent->Label() +
                                                 ": ncclCommSplit did not complete within " +
                                                 std::to_string(TimeoutNs() / 1000000) +
                                                 " ms: not every rank called it");
      return ncclRemoteError;
    }
    return ncclInProgress;
  };
}

}  // namespace ncclrr::host
