#include "tensor_ids.h"

#include <map>
#include <tuple>
#include <unordered_map>

namespace ncclrr::replay {
namespace {

using analysis::kNoLogicalId;

// What identifies a buffer of one rank without call sites, and its shape (what must agree for
// two ranks' buffers to be the same tensor).
struct BufferKey {
  uint64_t buffer, count;
  uint8_t dtype;
  uint16_t api;
  auto operator<=>(const BufferKey&) const = default;
};
struct ShapeKey {
  uint64_t count;
  uint8_t dtype;
  uint16_t api;
  auto operator<=>(const ShapeKey&) const = default;
};

BufferKey KeyOf(const CallRecord& c) {
  return {c.sendbuff ? c.sendbuff : c.recvbuff, c.count, c.dtype, c.api};
}

// One-to-one on every rank: each buffer maps to one id and no two buffers share one.
bool OneToOne(const analysis::TraceModel& m, const analysis::CommModel& c,
              const std::vector<std::vector<uint32_t>>& ids) {
  for (const analysis::RankView& r : c.ranks) {
    std::map<BufferKey, uint32_t> id_of_key;
    std::map<uint32_t, BufferKey> key_of_id;
    for (size_t k = 0; k < r.collectives.size(); ++k) {
      const uint32_t id = ids[r.rank][k];
      if (id == kNoLogicalId) continue;
      const BufferKey key = KeyOf(m.call(r.collectives[k].call));
      auto [a, a_new] = id_of_key.try_emplace(key, id);
      auto [b, b_new] = key_of_id.try_emplace(id, key);
      if (a->second != id || b->second != key) return false;
    }
  }
  return true;
}

// The first-step rule: number each rank's distinct buffers per shape in order of first use.
std::vector<std::vector<uint32_t>> FromFirstStep(const analysis::TraceModel& m,
                                                 const analysis::CommModel& c, int reference) {
  std::vector<std::vector<uint32_t>> ids(c.ranks.size());
  std::map<std::pair<ShapeKey, uint32_t>, uint32_t> ref_id;  // (shape, j) -> tensor
  auto number = [&](const analysis::RankView& r, bool is_ref) {
    std::map<BufferKey, uint32_t> id_of_key;
    std::map<ShapeKey, uint32_t> seen_of_shape;
    ids[r.rank].assign(r.collectives.size(), kNoLogicalId);
    for (size_t k = 0; k < r.collectives.size(); ++k) {
      const CallRecord& call = m.call(r.collectives[k].call);
      const BufferKey key = KeyOf(call);
      auto it = id_of_key.find(key);
      if (it == id_of_key.end()) {
        const ShapeKey shape{call.count, call.dtype, call.api};
        const uint32_t j = seen_of_shape[shape]++;
        uint32_t id = kNoLogicalId;
        if (is_ref) {
          id = static_cast<uint32_t>(ref_id.size());
          ref_id[{shape, j}] = id;
        } else if (auto r_it = ref_id.find({shape, j}); r_it != ref_id.end()) {
          id = r_it->second;
        }
        it = id_of_key.emplace(key, id).first;
      }
      ids[r.rank][k] = it->second;
    }
  };
  number(c.ranks[reference], true);
  for (const analysis::RankView& r : c.ranks)
    if (r.rank != reference) number(r, false);
  return ids;
}

}  // namespace

TensorIds ReplayTensorIds(const analysis::TraceModel& model,
                          const analysis::LogicalIdentity& identity, size_t comm_index) {
  const analysis::CommModel& c = model.comms()[comm_index];
  const analysis::CommIdentity& ci = identity.comm(comm_index);
  TensorIds out;
  out.of_slot.reserve(ci.ids.size());
  for (const analysis::NarrowUints& ids : ci.ids) out.of_slot.push_back(ids.ToVector());
  out.reference_rank =
      ci.reference_rank >= 0 && ci.reference_rank < static_cast<int>(c.ranks.size())
          ? ci.reference_rank
          : 0;
  out.of_slot.resize(c.ranks.size());
  for (const analysis::RankView& r : c.ranks)
    out.of_slot[r.rank].resize(r.collectives.size(), kNoLogicalId);
  if (ci.source == analysis::IdentitySource::kCallSites || OneToOne(model, c, out.of_slot))
    return out;
  out.of_slot = FromFirstStep(model, c, out.reference_rank);
  out.from_first_step = true;
  return out;
}

}  // namespace ncclrr::replay
