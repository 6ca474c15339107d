// Communicator identity: NCCL's own commHash, per NCCL version, so that ids in a trace match
// NCCL's logs, its profiler plugin and every other process of the job. Read from NVIDIA/nccl
// src/init.cc and src/include/bitops.h of each release (docs/recording.md has the table):
//
//   version        root comm (InitRank*, InitAll)   split child                  shrink child
//   2.18 - 2.23    djb2a(uniqueId[0])               djb2a("%016lx-%d", P, color)  -
//   2.24 - 2.25    djb2a(uniqueId[0])               djb2a("%016lx-%d-%d", P, n, color)  -
//   2.26 - 2.30    mix(uniqueId[0])                 mix(P, n, color)             mix(P, 0, 0)
//
// P = parent commHash; n = the parent's split ordinal (1-based, every ncclCommSplit of the parent
// counts, NCCL_SPLIT_NOCOLOR included; 2.29+ also counts grows, which 2.28's API does not have);
// djb2a hashes the 128 id bytes (as `char`, so the platform's char signedness matters, as in
// NCCL); mix is NCCL's two-word accumulator fed field by field. A shrink with an exclude list
// does not advance n, so every such shrink of one parent gets the same hash in NCCL; before 2.24
// two splits of one parent with the same color collide too. Where NCCL collides, ncclrr uses a
// stand-in id (see StandInId) and records NCCL's hash as not known.
#pragma once
#include <cstddef>
#include <cstdint>

namespace ncclrr::interpose {

inline constexpr size_t kUniqueIdBytes = 128;

// NCCL's version code (ncclGetVersion): 2.28.9 -> 22809.
constexpr int NcclVersionCode(int major, int minor, int patch) {
  return major * 10000 + minor * 100 + patch;
}

// Whether the formulas above were read from this version's sources.
bool HashFormulasKnown(int version);

// NCCL's commHash of a communicator created from `id` (the first id for InitRankScalable).
uint64_t RootCommHash(int version, const void* id);
// NCCL's commHash of a split child: `split_ordinal` is the parent's 1-based split counter.
uint64_t SplitCommHash(int version, uint64_t parent, int split_ordinal, int color);
// NCCL's commHash of a shrink child made with an exclude list.
uint64_t ShrinkCommHash(int version, uint64_t parent);
// True when NCCL's split hash ignores the split ordinal (two splits can collide).
bool SplitHashIgnoresOrdinal(int version);

// ncclrr's id for a communicator whose NCCL hash collides by construction: a mix of NCCL's hash
// and a salt that every member rank computes alike (the exclude list and its occurrence, or the
// split ordinal). Never 0 and never equal to `nccl_hash`.
uint64_t StandInId(uint64_t nccl_hash, uint64_t salt);

// The two hash functions NCCL uses (exposed for tests).
uint64_t Djb2a(const void* bytes, size_t size);
struct HashAccumulator {
  uint64_t a = 1, b = 1;
  void Eat(const void* bytes, size_t size);
  uint64_t Digest() const;
};

}  // namespace ncclrr::interpose
