#include "comm_hash.h"

#include <cstdio>
#include <cstring>

namespace ncclrr::interpose {
namespace {

constexpr int k2_18 = NcclVersionCode(2, 18, 0);
constexpr int k2_24 = NcclVersionCode(2, 24, 0);
constexpr int k2_26 = NcclVersionCode(2, 26, 0);
constexpr int k2_31 = NcclVersionCode(2, 31, 0);

// Versions newer than the last one read use the newest formulas (the likeliest guess).
bool UsesMix(int version) { return version >= k2_26 || version < k2_18; }

uint64_t Djb2aOfText(const char* text) {
  char buf[kUniqueIdBytes] = {};  // NCCL formats into a zeroed ncclUniqueId and hashes all of it
  std::snprintf(buf, sizeof buf, "%s", text);
  return Djb2a(buf, sizeof buf);
}

uint64_t SplitMix64(uint64_t x) {
  x += 0x9e3779b97f4a7c15ull;
  x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ull;
  x = (x ^ (x >> 27)) * 0x94d049bb133111ebull;
  return x ^ (x >> 31);
}

}  // namespace

uint64_t Djb2a(const void* bytes, size_t size) {
  // `char`, not `unsigned char`: NCCL sign-extends bytes >= 0x80 where char is signed.
  const char* p = static_cast<const char*>(bytes);
  uint64_t h = 5381;
  for (size_t i = 0; i < size; ++i) h = ((h << 5) + h) ^ static_cast<uint64_t>(p[i]);
  return h;
}

void HashAccumulator::Eat(const void* bytes, size_t size) {
  const unsigned char* p = static_cast<const unsigned char*>(bytes);
  a ^= size;
  while (size != 0) {
    a += b;
    b ^= a;
    a ^= a >> 31;
    a *= 0x9de62bbc8cef3ce3ull;
    b ^= b >> 32;
    b *= 0x485cd6311b599e79ull;
    const size_t n = size < 8 ? size : 8;
    uint64_t word = 0;
    std::memcpy(&word, p, n);
    p += n;
    size -= n;
    a += word;
  }
}

uint64_t HashAccumulator::Digest() const {
  uint64_t h = a;
  h ^= h >> 31;
  h *= 0xbac3bd562846de6bull;
  h += b;
  h ^= h >> 32;
  h *= 0x995a187a14e7b445ull;
  return h;
}

bool HashFormulasKnown(int version) { return version >= k2_18 && version < k2_31; }

uint64_t RootCommHash(int version, const void* id) {
  if (!UsesMix(version)) return Djb2a(id, kUniqueIdBytes);
  HashAccumulator acc;
  acc.Eat(id, kUniqueIdBytes);
  return acc.Digest();
}

uint64_t SplitCommHash(int version, uint64_t parent, int split_ordinal, int color) {
  char text[64];
  if (version >= k2_18 && version < k2_24) {
    std::snprintf(text, sizeof text, "%016lx-%d", static_cast<unsigned long>(parent), color);
    return Djb2aOfText(text);
  }
  if (version >= k2_24 && version < k2_26) {
    std::snprintf(text, sizeof text, "%016lx-%d-%d", static_cast<unsigned long>(parent),
                  split_ordinal, color);
    return Djb2aOfText(text);
  }
  HashAccumulator acc;  // fields fed one by one: the split points are part of the hash
  acc.Eat(&parent, sizeof parent);
  acc.Eat(&split_ordinal, sizeof split_ordinal);
  acc.Eat(&color, sizeof color);
  return acc.Digest();
}

uint64_t ShrinkCommHash(int version, uint64_t parent) {
  return SplitCommHash(version, parent, /*split_ordinal=*/0, /*color=*/0);
}

bool SplitHashIgnoresOrdinal(int version) { return version >= k2_18 && version < k2_24; }

uint64_t StandInId(uint64_t nccl_hash, uint64_t salt) {
  uint64_t id = SplitMix64(nccl_hash ^ SplitMix64(salt ^ 0x6e63636c72724964ull));
  if (id == 0 || id == nccl_hash) id = SplitMix64(id + 1);
  return id;
}

}  // namespace ncclrr::interpose
