#include "ncclrr/analysis/logical_identity.h"

#include <algorithm>
#include <bit>
#include <cmath>
#include <map>
#include <string_view>
#include <tuple>
#include <unordered_map>
#include <unordered_set>

#include "model/flat_map.h"
#include "model/sequence_align.h"
#include "model/signature.h"
#include "ncclrr/base/parallel_for.h"

namespace ncclrr::analysis {
namespace {

// What ShapeSignature and BufferKey read of a call: only these columns are decoded.
constexpr uint32_t kShapeWords = CallTable::WordsOf(
    offsetof(CallRecord, api), offsetof(CallRecord, dtype), offsetof(CallRecord, op),
    offsetof(CallRecord, flags), offsetof(CallRecord, root_peer), offsetof(CallRecord, count));
constexpr uint32_t kBufferWords = CallTable::WordsOf(
    offsetof(CallRecord, sendbuff), offsetof(CallRecord, recvbuff), offsetof(CallRecord, count),
    offsetof(CallRecord, dtype), offsetof(CallRecord, api));

// Per-rank key of a call: its buffer, count and dtype (what "the same tensor" means without
// call sites).
uint64_t BufferKey(const CallRecord& c) {
  const uint64_t buf = c.sendbuff ? c.sendbuff : c.recvbuff;
  return Mix64(buf ^ (c.count * 0x9e3779b97f4a7c15ull), (uint64_t{c.dtype} << 16) | c.api);
}

// The reference rank: the lowest rank of the largest group of ranks with identical shape
// sequences (ties: the group holding the lowest rank). `sequence[rank]` hashes the rank's
// first seq and shapes (RankShapes).
int ReferenceRank(const CommModel& c, const std::vector<uint64_t>& sequence) {
  std::map<uint64_t, std::pair<int, int>> groups;  // hash -> (members, lowest rank)
  for (const RankView& r : c.ranks) {
    if (!r.has_file() || r.collectives.empty()) continue;
    auto [it, added] = groups.try_emplace(sequence[r.rank], 0, r.rank);
    it->second.first++;
  }
  int best = -1, members = 0;
  for (const auto& [h, g] : groups)
    if (g.first > members || (g.first == members && g.second < best)) {
      members = g.first;
      best = g.second;
    }
  return best < 0 ? 0 : best;
}

// One rank's shapes, numbered on its own thread in the order it first issues them (its slots
// hold those numbers until NumberShapes makes them the communicator's), so that no 8-byte hash
// per call is ever held for a whole communicator: that was the check's peak.
struct RankShapes {
  std::vector<uint64_t> distinct;  // shape hash of each rank-local number - 1
  uint64_t sequence = 0;           // the rank's first seq and shapes, hashed
};

RankShapes ReadShapes(const TraceModel& m, const RankView& r, NarrowUints* local) {
  RankShapes out;
  local->assign(r.collectives.size(), 0);
  if (!r.has_file()) return out;
  out.sequence = r.first_seq();
  FlatMap64 seen(64);
  CallTable::Reader calls(m.file(static_cast<uint32_t>(r.file)).calls, kShapeWords);
  for (size_t k = 0; k < r.collectives.size(); ++k) {
    const uint64_t h = ShapeSignature(calls[r.collectives[k].call.index]) | 1;
    out.sequence = Mix64(out.sequence, h);
    bool added = false;
    const uint32_t n = seen.FindOrInsert(h, static_cast<uint32_t>(out.distinct.size() + 1), &added);
    if (added) out.distinct.push_back(h);
    local->set(k, n);
  }
  return out;
}

// The ranks' local numbers made the communicator's: equal shapes, equal numbers, from 1 in the
// order the ranks (in rank order) first issue them.
void NumberShapes(const CommModel& c, const std::vector<RankShapes>& ranks,
                  std::vector<NarrowUints>* shapes) {
  FlatMap64 numbers(64);
  for (const RankView& r : c.ranks) {
    const RankShapes& rs = ranks[r.rank];
    std::vector<uint32_t> number(rs.distinct.size() + 1, 0);
    for (size_t i = 0; i < rs.distinct.size(); ++i)
      number[i + 1] =
          numbers.FindOrInsert(rs.distinct[i], static_cast<uint32_t>(numbers.size() + 1));
    NarrowUints& sh = (*shapes)[r.rank];
    for (size_t k = 0; k < sh.size(); ++k) sh.set(k, number[sh[k]]);
  }
}

// The common case of ForEachShapeAlignedPair: same seqs without gaps, same shapes, so slot k
// of `r` pairs with slot k of `ref`.
bool PairedByIndex(const RankView& r, const RankView& ref, const CommIdentity& id) {
  return id.shapes[r.rank] == id.shapes[ref.rank] && r.first_seq() == ref.first_seq() &&
         r.issued() == ref.issued() && r.collectives.size() == r.issued() - r.first_seq();
}

// Calls f(i, j) for slots of `r` and `ref` that hold the same position once the shape
// sequences are aligned (a call one rank skipped shifts every later position; a reordering of
// calls of different shapes says nothing about which tensor is which), and have the same shape.
template <typename F>
void ForEachShapeAlignedPair(const RankView& r, const RankView& ref, const CommIdentity& id,
                             F&& f) {
  if (PairedByIndex(r, ref, id)) {
    for (size_t k = 0; k < r.collectives.size(); ++k) f(k, k);
    return;
  }
  const uint64_t lo = std::max(r.first_seq(), ref.first_seq());
  auto dense = [&](const RankView& v, SpillVector<uint64_t>* sig, SpillVector<uint32_t>* slot) {
    const uint64_t hi = v.issued();
    if (hi <= lo) return;
    sig->assign(hi - lo, kUnknownSignature);
    slot->assign(hi - lo, ~uint32_t{0});
    for (size_t k = 0; k < v.collectives.size(); ++k) {
      if (v.collectives[k].seq < lo) continue;
      (*sig)[v.collectives[k].seq - lo] = id.shapes[v.rank][k];
      (*slot)[v.collectives[k].seq - lo] = static_cast<uint32_t>(k);
    }
  };
  // A rank's positions, 12 bytes each: spilled with the calls where a check holds more than fit.
  SpillVector<uint64_t> a, b;
  SpillVector<uint32_t> sa, sb;
  dense(ref, &a, &sa);
  dense(r, &b, &sb);
  auto pair = [&](size_t p, size_t q) {
    if (p < b.size() && q < a.size() && b[p] == a[q] && b[p] != kUnknownSignature) f(sb[p], sa[q]);
  };
  size_t p = 0, q = 0;
  for (const AlignOp& op : AlignSequences(a, b, AlignParams{})) {
    for (; p < op.pos && q < op.ref_pos; ++p, ++q) pair(p, q);
    p = op.pos + op.len;
    q = op.ref_pos + op.ref_len;
  }
  for (; p < b.size() && q < a.size(); ++p, ++q) pair(p, q);
}

bool AllHaveCallSites(const TraceModel& m, const CommModel& c) {
  bool any = false;
  for (const RankView& r : c.ranks)
    for (const CollectiveSlot& s : r.collectives) {
      if (m.call(s.call).callsite == 0) return false;
      any = true;
    }
  return any;
}

// One rank's weights (CommIdentity::Weight) while its calls are mapped, kept as they are
// stored: an index per slot into the rank's distinct weights. A key's occurrences share one, so
// a slot costs a byte or two here too, where a weight per slot (8 bytes) alive for every rank
// mapped at once was the check's peak with few, long ranks on many threads.
class RankWeights {
 public:
  explicit RankWeights(size_t slots) : index_(slots, 0) { seen_.FindOrInsert(Key({}), 0); }
  // The weights `out` holds for `rank`, to change some.
  static RankWeights Of(CommIdentity* out, int rank) {
    RankWeights w(0);
    w.index_ = std::move(out->weight[rank]);
    w.distinct_ = std::move(out->weights[rank]);
    for (uint32_t i = 0; i < w.distinct_.size(); ++i) w.seen_.FindOrInsert(Key(w.distinct_[i]), i);
    return w;
  }
  void Set(size_t slot, float confidence, uint32_t support) {
    const CommIdentity::Weight w{confidence, support};
    const uint64_t key = Key(w);
    if (key != last_key_) {  // neighbours mostly share a weight: skip the lookup then
      bool added = false;
      last_ = seen_.FindOrInsert(key, static_cast<uint32_t>(distinct_.size()), &added);
      if (added) distinct_.push_back(w);
      last_key_ = key;
    }
    index_.set(slot, last_);
  }
  CommIdentity::Weight Get(size_t slot) const { return distinct_[index_[slot]]; }
  void StoreInto(CommIdentity* out, int rank) {
    out->weight[rank] = std::move(index_);
    out->weights[rank] = std::move(distinct_);
  }

 private:
  static uint64_t Key(const CommIdentity::Weight& w) {
    return (uint64_t{std::bit_cast<uint32_t>(w.confidence)} << 32) | w.support;
  }
  NarrowUints index_;
  std::vector<CommIdentity::Weight> distinct_{CommIdentity::Weight{}};  // [0]: {0, 0}
  FlatMap64 seen_{16};
  uint64_t last_key_ = 0;  // Key({0, 0}), index 0
  uint32_t last_ = 0;
};

// How sure the buffer votes must be (95% lower bound) that a call is the reference's tensor for
// a call site that differs only in its callers to be left undecided without a note.
constexpr float kBuffersName = 0.75f;

// Call sites refine the buffer identity: two calls are the same tensor only when both their
// buffers and their sites say so. A loop issues every tensor from one line, so a site shared by
// all calls changes nothing; different lines tell tensors apart even where buffers could not.
// A site is a stack, innermost frame first ('<' between frames). A rank that reaches the
// reference's statement by a path the reference never took (the function that issues it called
// from another line, on this rank only) proves nothing by its site: the same tensors or others
// may come that way, so the buffers decide, as without sites (CommIdentity::other_paths keeps
// where they could not). A path the reference took too, elsewhere, still tells tensors apart (a
// helper all-reducing the loss from one line and the accuracy from another, in the other order
// on this rank).
void RefineWithCallSites(const TraceModel& m, const CommModel& c, CommIdentity* out) {
  std::map<std::pair<std::string, uint32_t>, uint32_t> ids;
  const RankView& ref = c.ranks[out->reference_rank];
  std::unordered_set<std::string> ref_sites;  // every site the reference issued from
  if (ref.has_file()) {
    std::unordered_set<uint32_t> seen;
    for (const CollectiveSlot& slot : ref.collectives)
      if (seen.insert(m.call(slot.call).callsite).second)
        ref_sites.insert(m.file(slot.call.file).String(m.call(slot.call).callsite));
  }
  auto site = [&](const RankView& r, size_t k) {
    const CallRef call = r.collectives[k].call;
    return m.file(call.file).String(m.call(call).callsite);
  };
  auto innermost = [](const std::string& s) { return std::string_view(s).substr(0, s.find('<')); };
  for (const RankView& r : c.ranks) {
    if (!r.has_file()) continue;
    RankWeights weights = RankWeights::Of(out, r.rank);
    CommIdentity::OtherPath other{r.rank, 0, 0, 0, 0};
    for (size_t k = 0; k < r.collectives.size(); ++k) {
      std::string s = site(r, k);
      const CollectiveSlot* at = r.rank == ref.rank ? nullptr : ref.AtSeq(r.collectives[k].seq);
      if (at != nullptr) {
        const size_t j = static_cast<size_t>(at - ref.collectives.data());
        std::string ref_site = site(ref, j);
        if (ref_site != s && innermost(ref_site) == innermost(s) && ref_sites.count(s) == 0) {
          if (weights.Get(k).LowerBound() < kBuffersName) {
            if (other.calls++ == 0) {
              other.slot = k;
              other.ref_slot = j;
            }
            other.max_count = std::max(other.max_count, m.call(r.collectives[k].call).count);
          }
          s = std::move(ref_site);
        } else if (ref_site != s && out->evidence[r.rank][k] == IdentityEvidence::kVotes) {
          // Evidence of a difference: the reference issued another site at this position.
          out->evidence[r.rank][k] = IdentityEvidence::kCallSite;
          weights.Set(k, 1.0f, kCertainSupport);
        }
      }
      auto [it, added] =
          ids.try_emplace({s, out->ids[r.rank][k]}, static_cast<uint32_t>(ids.size()));
      out->ids[r.rank].set(k, it->second);
    }
    weights.StoreInto(out, r.rank);
    if (other.calls) out->other_paths.push_back(other);
  }
  out->tensors = static_cast<uint32_t>(ids.size());
}

// Crossed buffers (see the header): rank `r`'s slots whose buffer is not the reference's at the
// same position but one the reference used at a nearby position, in closed cycles, take the
// reference's tensor of that position. Processes map device memory at different virtual
// addresses, so "the same buffer" is the same address up to one of the few offsets that relate
// most of the two ranks' aligned calls (one per allocator segment). Believed only where the rank
// otherwise agrees with the reference buffer for buffer.
void CorrectCrossedBuffers(const SpillVector<uint64_t>& addrs,
                           const SpillVector<uint64_t>& ref_addrs, const RankView& r,
                           const RankView& ref, CommIdentity* out, RankWeights* weights) {
  // (slot of r, slot of ref), in order; not stored when paired by index (8 bytes a call).
  struct Pairs {
    size_t by_index = 0;
    SpillVector<std::pair<uint32_t, uint32_t>> list;
    size_t size() const { return by_index ? by_index : list.size(); }
    std::pair<uint32_t, uint32_t> operator[](size_t k) const {
      return by_index ? std::pair{static_cast<uint32_t>(k), static_cast<uint32_t>(k)} : list[k];
    }
  } pairs;
  if (PairedByIndex(r, ref, *out))
    pairs.by_index = r.collectives.size();
  else
    ForEachShapeAlignedPair(r, ref, *out, [&](size_t i, size_t j) {
      pairs.list.push_back({static_cast<uint32_t>(i), static_cast<uint32_t>(j)});
    });
  constexpr size_t kMinPairs = 8;
  if (pairs.size() < kMinPairs) return;
  std::unordered_map<uint64_t, uint32_t> delta_count;
  for (size_t k = 0; k < pairs.size(); ++k) {
    const auto [i, j] = pairs[k];
    delta_count[addrs[i] - ref_addrs[j]]++;
  }
  // The most common offset, and others only as common as a segment of the allocator is: the
  // offsets between two crossed buffers recur at every swapped step, and must not pass for one.
  std::vector<std::pair<uint32_t, uint64_t>> frequent;  // (count, delta)
  for (const auto& [d, n] : delta_count) frequent.push_back({n, d});
  std::sort(frequent.rbegin(), frequent.rend());
  const uint32_t min_count = std::max<uint32_t>(4, static_cast<uint32_t>(pairs.size() / 5));
  size_t keep = 1;
  while (keep < frequent.size() && keep < 8 && frequent[keep].first >= min_count) ++keep;
  frequent.resize(keep);
  const auto& shapes = out->shapes[r.rank];
  const auto& ref_shapes = out->shapes[ref.rank];
  auto same = [&](uint32_t i, uint32_t j) {
    if (shapes[i] != ref_shapes[j]) return false;
    const uint64_t d = addrs[i] - ref_addrs[j];
    for (const auto& [n, f] : frequent)
      if (f == d) return true;
    return false;
  };
  size_t equal = 0;
  for (size_t k = 0; k < pairs.size(); ++k) equal += same(pairs[k].first, pairs[k].second);
  const float agreement = static_cast<float>(equal) / pairs.size();
  out->buffer_agreement[r.rank] = agreement;
  out->aligned_calls[r.rank] = static_cast<uint32_t>(pairs.size());
  constexpr float kMinAgreement = 0.8f;  // SPMD ranks allocate alike; others prove nothing here
  if (agreement < kMinAgreement || equal == pairs.size()) return;
  constexpr size_t kWindow = 64;  // how far a crossed buffer may sit
  constexpr size_t kMaxCycle = 8;
  const size_t n = pairs.size();
  auto differs = [&](size_t k) { return !same(pairs[k].first, pairs[k].second); };
  // partner[k]: the nearest pair position whose reference buffer is rank r's buffer at k.
  SpillVector<uint32_t> partner(n, ~uint32_t{0});
  for (size_t k = 0; k < n; ++k) {
    if (!differs(k)) continue;
    for (size_t d = 1; d <= kWindow && partner[k] == ~uint32_t{0}; ++d) {
      const size_t cand[2] = {k >= d ? k - d : n, k + d};
      for (size_t q : cand)
        if (q < n && differs(q) && same(pairs[k].first, pairs[q].second)) {
          partner[k] = static_cast<uint32_t>(q);
          break;
        }
    }
  }
  SpillVector<uint8_t> done(n, 0);
  for (size_t k = 0; k < n; ++k) {
    if (partner[k] == ~uint32_t{0} || done[k]) continue;
    std::vector<size_t> cycle = {k};
    size_t at = partner[k];
    while (at != k && cycle.size() <= kMaxCycle && partner[at] != ~uint32_t{0} && !done[at]) {
      cycle.push_back(at);
      at = partner[at];
    }
    if (at != k) continue;  // not closed: an allocator's coincidence, not a reordering
    for (size_t c : cycle) {
      done[c] = 1;
      const uint32_t slot = pairs[c].first;
      out->ids[r.rank].set(slot, out->ids[ref.rank][pairs[partner[c]].second]);
      weights->Set(slot, agreement, static_cast<uint32_t>(n));
      out->evidence[r.rank][slot] = IdentityEvidence::kCrossed;
    }
  }
}

// Calls the buffers could not place (a buffer used once, at a position the shape alignment left
// out because calls of different shapes were reordered there) are the reference's call of the
// same shape that the alignment also left out, nearest in seq: a reordering of calls of
// different shapes then reads as one, rather than as mismatched counts.
void PlaceUnknownByShape(const RankView& r, const RankView& ref, CommIdentity* out,
                         RankWeights* weights) {
  SpillVector<uint8_t> ref_paired(ref.collectives.size(), 0), paired(r.collectives.size(), 0);
  ForEachShapeAlignedPair(r, ref, *out, [&](size_t i, size_t j) {
    paired[i] = 1;
    ref_paired[j] = 1;
  });
  constexpr uint64_t kWindow = 64;
  SpillVector<uint8_t> taken(ref.collectives.size(), 0);
  for (size_t i = 0; i < r.collectives.size(); ++i) {
    if (paired[i] || out->ids[r.rank][i] != kNoLogicalId) continue;
    const uint64_t seq = r.collectives[i].seq;
    size_t best = ~size_t{0};
    uint64_t best_dist = kWindow + 1;
    // Reference slots are sorted by seq: scan those within the window.
    auto lo = std::lower_bound(ref.collectives.begin(), ref.collectives.end(),
                               seq > kWindow ? seq - kWindow : 0,
                               [](const CollectiveSlot& s, uint64_t v) { return s.seq < v; });
    for (auto it = lo; it != ref.collectives.end() && it->seq <= seq + kWindow; ++it) {
      const size_t j = static_cast<size_t>(it - ref.collectives.begin());
      if (ref_paired[j] || taken[j] || out->shapes[ref.rank][j] != out->shapes[r.rank][i]) continue;
      const uint64_t dist = it->seq > seq ? it->seq - seq : seq - it->seq;
      if (dist < best_dist) {
        best_dist = dist;
        best = j;
      }
    }
    if (best == ~size_t{0}) continue;
    taken[best] = 1;
    out->ids[r.rank].set(i, out->ids[ref.rank][best]);
    weights->Set(i, 0.5f, 1);
  }
}

// A rank's buffer keys, numbered in the order the rank first uses them, and its buffer
// addresses, slot by slot. They are computed for one rank at a time (the reference's, and one
// per thread) rather than held for the whole communicator, and keys are numbered as they are
// read (4 bytes a slot, not a 64-bit hash): this is most of what a mapped rank holds, and is
// spilled with the calls where a check holds more than fit.
struct RankBuffers {
  SpillVector<uint32_t> key_of_slot;  // index into keys
  SpillVector<uint64_t> keys;         // BufferKey, distinct
  SpillVector<uint64_t> addrs;        // send buffer, else receive buffer
};

void ReadBuffers(const TraceModel& m, const RankView& r, RankBuffers* out) {
  out->key_of_slot.resize(r.collectives.size());
  out->addrs.resize(r.collectives.size());
  FlatMap64 key_index(r.collectives.size() / 4 + 16);
  CallTable::Reader calls(m.file(static_cast<uint32_t>(r.file)).calls, kBufferWords);
  for (size_t k = 0; k < r.collectives.size(); ++k) {
    const CallRecord& call = calls[r.collectives[k].call.index];
    bool added = false;
    out->key_of_slot[k] =
        key_index.FindOrInsert(BufferKey(call), static_cast<uint32_t>(out->keys.size()), &added);
    if (added) out->keys.push_back(BufferKey(call));
    out->addrs[k] = call.sendbuff ? call.sendbuff : call.recvbuff;
  }
}

// Maps rank `r`'s buffer keys onto the reference's tensors (writes only r's ids/confidence).
void MapRank(const RankBuffers& buffers, const RankView& r, const RankView& ref,
             const FlatMap64& tensor_of_key, const SpillVector<uint32_t>& ref_tensor,
             CommIdentity* out, RankWeights* weights) {
  // Count which reference tensor sits at each key's positions.
  const SpillVector<uint32_t>& key_of_slot = buffers.key_of_slot;
  const SpillVector<uint64_t>& keys = buffers.keys;
  // (key index, tensor) -> co-occurrences: a dense matrix when small (training loops reuse a
  // few buffers), a hash map when every call has its own buffer.
  const uint64_t cells = uint64_t{keys.size()} * out->tensors;
  const bool dense = cells <= std::max<uint64_t>(4096, r.collectives.size());
  SpillVector<uint32_t> dense_votes(dense ? cells : 0);
  FlatMap64 votes(dense ? 16 : keys.size() * 2 + 16);
  SpillVector<uint32_t> occurrences(keys.size());
  ForEachShapeAlignedPair(r, ref, *out, [&](size_t i, size_t j) {
    const uint32_t k = key_of_slot[i];
    if (dense)
      dense_votes[uint64_t{k} * out->tensors + ref_tensor[j]]++;
    else
      votes.FindOrInsert((uint64_t{k} << 32) | ref_tensor[j], 0)++;
    occurrences[k]++;
  });
  if (dense)
    for (uint64_t cell = 0; cell < cells; ++cell)
      if (dense_votes[cell])
        votes.FindOrInsert(((cell / out->tensors) << 32) | (cell % out->tensors), 0) =
            dense_votes[cell];
  // One-to-one where possible: the strongest (key, tensor) pairs first, so that two buffers of
  // a rank that swaps in half of its steps do not both land on the same tensor. Ties go to the
  // tensor with the same address on both ranks, then to the key seen first and the lowest
  // tensor id, so the result does not depend on hash order.
  struct Candidate {
    uint32_t votes, key, tensor;
    bool same_address;
  };
  SpillVector<Candidate> cand;
  votes.ForEach([&](uint64_t kv, uint32_t n) {
    const uint32_t k = static_cast<uint32_t>(kv >> 32), t = static_cast<uint32_t>(kv);
    const uint32_t* same = tensor_of_key.Find(keys[k]);
    cand.push_back({n, k, t, same && *same == t});
  });
  std::sort(cand.begin(), cand.end(), [](const Candidate& a, const Candidate& b) {
    return std::make_tuple(-static_cast<int64_t>(a.votes), !a.same_address, a.key, a.tensor) <
           std::make_tuple(-static_cast<int64_t>(b.votes), !b.same_address, b.key, b.tensor);
  });
  SpillVector<uint32_t> best(keys.size(), kNoLogicalId), best_votes(keys.size(), 0);
  SpillVector<uint8_t> taken(out->tensors, 0);
  for (const Candidate& c : cand)
    if (best[c.key] == kNoLogicalId && !taken[c.tensor]) {
      best[c.key] = c.tensor;
      best_votes[c.key] = c.votes;
      taken[c.tensor] = 1;
    }
  for (const Candidate& c : cand)  // more keys than tensors: the rest take their strongest
    if (best[c.key] == kNoLogicalId) {
      best[c.key] = c.tensor;
      best_votes[c.key] = c.votes;
    }
  for (size_t k = 0; k < r.collectives.size(); ++k) {
    const uint32_t key = key_of_slot[k];
    uint32_t id = best[key];
    float conf = occurrences[key] ? static_cast<float>(best_votes[key]) / occurrences[key] : 0;
    if (id == kNoLogicalId) {  // never beside the reference: same buffer key, or unknown
      const uint32_t* same = tensor_of_key.Find(keys[key]);
      id = same ? *same : kNoLogicalId;
      conf = same ? 0.5f : 0.0f;
    }
    out->ids[r.rank].set(k, id);
    weights->Set(k, conf, occurrences[key]);
  }
}

void FromBuffers(const TraceModel& m, const CommModel& c, CommIdentity* out, int threads) {
  const RankView& ref = c.ranks[out->reference_rank];
  RankBuffers ref_buffers;
  if (ref.has_file())
    ReadBuffers(m, ref, &ref_buffers);
  else
    ref_buffers.key_of_slot.assign(ref.collectives.size(), 0);
  FlatMap64 tensor_of_key(ref.collectives.size() / 4 + 16);  // reference key -> tensor id
  // The reference's keys are its tensors, numbered as it first uses them.
  const SpillVector<uint32_t>& ref_tensor = ref_buffers.key_of_slot;
  for (size_t t = 0; t < ref_buffers.keys.size(); ++t)
    tensor_of_key.FindOrInsert(ref_buffers.keys[t], static_cast<uint32_t>(t));
  RankWeights ref_weights(ref.collectives.size());
  for (size_t k = 0; k < ref_buffers.addrs.size(); ++k) {
    out->ids[ref.rank].set(k, ref_tensor[k]);
    ref_weights.Set(k, 1.0f, kCertainSupport);
  }
  ref_weights.StoreInto(out, ref.rank);
  out->tensors = static_cast<uint32_t>(tensor_of_key.size());
  ParallelFor(c.ranks.size(), threads, [&](size_t i) {
    const RankView& r = c.ranks[i];
    if (r.rank == ref.rank || !r.has_file()) return;
    RankBuffers buffers;
    ReadBuffers(m, r, &buffers);
    RankWeights weights(r.collectives.size());
    MapRank(buffers, r, ref, tensor_of_key, ref_tensor, out, &weights);
    SpillVector<uint32_t>().swap(buffers.key_of_slot);
    SpillVector<uint64_t>().swap(buffers.keys);
    CorrectCrossedBuffers(buffers.addrs, ref_buffers.addrs, r, ref, out, &weights);
    PlaceUnknownByShape(r, ref, out, &weights);
    weights.StoreInto(out, r.rank);
  });
}

// The per-call results, reset, then mapped from the buffers against out->reference_rank.
void MapBuffers(const TraceModel& m, const CommModel& c, CommIdentity* out, int threads) {
  out->ids.assign(c.ranks.size(), {});
  out->weight.assign(c.ranks.size(), {});
  out->weights.assign(c.ranks.size(), {CommIdentity::Weight{}});
  out->evidence.assign(c.ranks.size(), {});
  out->buffer_agreement.assign(c.ranks.size(), 1.0f);
  out->aligned_calls.assign(c.ranks.size(), 0);
  for (const RankView& r : c.ranks) {
    out->ids[r.rank].assign(r.collectives.size(), kNoLogicalId);
    out->weight[r.rank].assign(r.collectives.size(), 0);
    out->evidence[r.rank].assign(r.collectives.size(), IdentityEvidence::kVotes);
  }
  FromBuffers(m, c, out, threads);
}

// Ranks other than the reference whose buffers mostly equal the reference's at the same
// positions (see CommIdentity::buffer_agreement).
size_t AgreeingRanks(const CommIdentity& id) {
  size_t n = 0;
  for (size_t r = 0; r < id.buffer_agreement.size(); ++r)
    if (static_cast<int>(r) != id.reference_rank && id.aligned_calls[r] > 0 &&
        id.buffer_agreement[r] >= 0.5f)
      ++n;
  return n;
}

// Ranks other than the reference whose calls were aligned with it.
size_t AlignedRanks(const CommIdentity& id) {
  size_t n = 0;
  for (size_t r = 0; r < id.aligned_calls.size(); ++r)
    n += static_cast<int>(r) != id.reference_rank && id.aligned_calls[r] > 0;
  return n;
}

// The lowest rank other than `ref` with the same shape sequence, or -1.
int NextLikeRank(const CommModel& c, const std::vector<uint64_t>& sequence, int ref) {
  for (const RankView& r : c.ranks)
    if (r.rank != ref && r.has_file() && !r.collectives.empty() &&
        sequence[r.rank] == sequence[ref])
      return r.rank;
  return -1;
}

}  // namespace

LogicalIdentity LogicalIdentity::Compute(const TraceModel& m, int threads,
                                         const std::vector<bool>* only) {
  LogicalIdentity li;
  li.comms_.resize(m.comms().size());
  for (size_t ci = 0; ci < m.comms().size(); ++ci) {
    if (only && !(*only)[ci]) continue;
    const CommModel& c = m.comms()[ci];
    CommIdentity& out = li.comms_[ci];
    // Threads pay off only for big communicators.
    size_t calls_in_comm = 0;
    for (const RankView& r : c.ranks) calls_in_comm += r.collectives.size();
    const int t = calls_in_comm >= 200'000 ? threads : 1;
    // Shapes: numbered per rank on threads, then per communicator (RankShapes), before the
    // per-call results below are allocated.
    out.shapes.resize(c.ranks.size());
    std::vector<RankShapes> rank_shapes(c.ranks.size());
    ParallelFor(c.ranks.size(), t, [&](size_t i) {
      const RankView& r = c.ranks[i];
      rank_shapes[r.rank] = ReadShapes(m, r, &out.shapes[r.rank]);
    });
    std::vector<uint64_t> sequence(c.ranks.size());
    for (size_t i = 0; i < c.ranks.size(); ++i) sequence[i] = rank_shapes[i].sequence;
    out.reference_rank = ReferenceRank(c, sequence);
    NumberShapes(c, rank_shapes, &out.shapes);
    std::vector<RankShapes>().swap(rank_shapes);
    if (c.ranks.empty()) continue;
    out.source = IdentitySource::kBuffers;
    MapBuffers(m, c, &out, t);
    // A reference rank that allocates unlike the others (rank 0 alone logging, checkpointing or
    // keeping diagnostics on the GPU) leaves buffers telling nothing; another rank of the same
    // shapes may allocate as most do, so that buffers tell tensors apart again.
    if (c.ranks.size() >= 3 && AgreeingRanks(out) * 2 < AlignedRanks(out)) {
      const int other = NextLikeRank(c, sequence, out.reference_rank);
      if (other >= 0) {
        const size_t agreeing = AgreeingRanks(out);
        CommIdentity alt;
        alt.source = IdentitySource::kBuffers;
        alt.reference_rank = other;
        alt.shapes = std::move(out.shapes);  // moved, not copied: the per-call arrays are big
        out.ids.clear();  // and the first mapping's per-call results go before the second's
        out.weight.clear();
        out.evidence.clear();
        MapBuffers(m, c, &alt, t);
        if (AgreeingRanks(alt) > agreeing) {
          out = std::move(alt);
        } else {
          out.shapes = std::move(alt.shapes);
          MapBuffers(m, c, &out, t);
        }
      }
    }
    if (AllHaveCallSites(m, c)) {
      out.source = IdentitySource::kCallSites;
      RefineWithCallSites(m, c, &out);
    }
  }
  return li;
}

uint32_t LogicalIdentity::Of(size_t comm_index, int rank, size_t slot) const {
  const auto& ids = comms_[comm_index].ids;
  if (rank < 0 || static_cast<size_t>(rank) >= ids.size() || slot >= ids[rank].size())
    return kNoLogicalId;
  return ids[rank][slot];
}

IdentityEvidence LogicalIdentity::Evidence(size_t comm_index, int rank, size_t slot) const {
  const auto& e = comms_[comm_index].evidence;
  if (rank < 0 || static_cast<size_t>(rank) >= e.size() || slot >= e[rank].size())
    return IdentityEvidence::kVotes;
  return e[rank][slot];
}

namespace {

const CommIdentity::Weight* WeightOf(const CommIdentity& c, int rank, size_t slot) {
  if (rank < 0 || static_cast<size_t>(rank) >= c.weight.size() || slot >= c.weight[rank].size())
    return nullptr;
  return &c.weights[rank][c.weight[rank][slot]];
}

}  // namespace

float LogicalIdentity::Confidence(size_t comm_index, int rank, size_t slot) const {
  const CommIdentity::Weight* w = WeightOf(comms_[comm_index], rank, slot);
  return w ? w->confidence : 0;
}

float LogicalIdentity::ConfidenceLowerBound(size_t comm_index, int rank, size_t slot) const {
  const CommIdentity::Weight* w = WeightOf(comms_[comm_index], rank, slot);
  return w ? w->LowerBound() : 0;
}

float CommIdentity::Weight::LowerBound() const {
  const float p = confidence;
  const uint32_t n = support;
  if (n == kCertainSupport) return p;
  if (n == 0) return 0;
  constexpr double kZ = 1.645;  // one-sided 95%
  const double z2n = kZ * kZ / n;
  const double center = p + z2n / 2;
  const double margin = kZ * std::sqrt(p * (1 - p) / n + z2n / (4 * n));
  return static_cast<float>(std::max(0.0, (center - margin) / (1 + z2n)));
}

}  // namespace ncclrr::analysis
