// NCCL's commHash formulas per version (comm_hash.h). The GPU acceptance script checks root
// hashes against NCCL's own INFO log ("commId 0x...") on real NCCL.
#include "comm_hash.h"

#include <gtest/gtest.h>

#include <cstring>

namespace ncclrr::interpose {
namespace {

TEST(CommHash, Djb2aIsTheClassicFunctionWithSignExtendedChars) {
  EXPECT_EQ(Djb2a("", 0), 5381u);
  EXPECT_EQ(Djb2a("a", 1), (5381u * 33) ^ 'a');
  const char high = static_cast<char>(0x80);
  const uint64_t expect_high =
      std::is_signed_v<char> ? (5381ull * 33) ^ 0xffffffffffffff80ull : (5381ull * 33) ^ 0x80ull;
  EXPECT_EQ(Djb2a(&high, 1), expect_high);
}

TEST(CommHash, RootHashFamilyFollowsTheVersion) {
  unsigned char id[kUniqueIdBytes];
  for (size_t i = 0; i < sizeof id; ++i) id[i] = static_cast<unsigned char>(i * 37 + 11);
  EXPECT_EQ(RootCommHash(NcclVersionCode(2, 25, 1), id), Djb2a(id, sizeof id));
  HashAccumulator acc;
  acc.Eat(id, sizeof id);
  EXPECT_EQ(RootCommHash(NcclVersionCode(2, 28, 9), id), acc.Digest());
  EXPECT_NE(RootCommHash(NcclVersionCode(2, 26, 2), id), Djb2a(id, sizeof id));
}

TEST(CommHash, AccumulatorDependsOnHowBytesAreSplit) {
  const uint64_t parent = 0x0123456789abcdefull;
  const int n = 3, color = 7;
  HashAccumulator fields;
  fields.Eat(&parent, 8);
  fields.Eat(&n, 4);
  fields.Eat(&color, 4);
  unsigned char packed[16];
  std::memcpy(packed, &parent, 8);
  std::memcpy(packed + 8, &n, 4);
  std::memcpy(packed + 12, &color, 4);
  HashAccumulator whole;
  whole.Eat(packed, 16);
  EXPECT_NE(fields.Digest(), whole.Digest());
  EXPECT_EQ(SplitCommHash(NcclVersionCode(2, 28, 3), parent, n, color), fields.Digest());
}

TEST(CommHash, SplitFormatsOfOlderVersions) {
  char text[kUniqueIdBytes] = {};
  std::snprintf(text, sizeof text, "%016lx-%d", 0xabcul, 5);
  EXPECT_EQ(SplitCommHash(NcclVersionCode(2, 23, 4), 0xabc, 9, 5), Djb2a(text, sizeof text));
  std::memset(text, 0, sizeof text);
  std::snprintf(text, sizeof text, "%016lx-%d-%d", 0xabcul, 9, 5);
  EXPECT_EQ(SplitCommHash(NcclVersionCode(2, 24, 3), 0xabc, 9, 5), Djb2a(text, sizeof text));
  EXPECT_TRUE(SplitHashIgnoresOrdinal(NcclVersionCode(2, 23, 4)));
  EXPECT_FALSE(SplitHashIgnoresOrdinal(NcclVersionCode(2, 24, 3)));
}

TEST(CommHash, ShrinksOfOneParentCollideInNccl) {
  const int v = NcclVersionCode(2, 28, 9);
  EXPECT_EQ(ShrinkCommHash(v, 42), ShrinkCommHash(v, 42));
  EXPECT_EQ(ShrinkCommHash(v, 42), SplitCommHash(v, 42, 0, 0));
  EXPECT_NE(SplitCommHash(v, 42, 1, 0), SplitCommHash(v, 42, 2, 0));
  const uint64_t a = StandInId(ShrinkCommHash(v, 42), 1), b = StandInId(ShrinkCommHash(v, 42), 2);
  EXPECT_NE(a, b);
  EXPECT_NE(a, 0u);
  EXPECT_NE(a, ShrinkCommHash(v, 42));
}

TEST(CommHash, KnownVersionRange) {
  EXPECT_FALSE(HashFormulasKnown(NcclVersionCode(2, 17, 1)));
  EXPECT_TRUE(HashFormulasKnown(NcclVersionCode(2, 18, 3)));
  EXPECT_TRUE(HashFormulasKnown(NcclVersionCode(2, 28, 9)));
  EXPECT_TRUE(HashFormulasKnown(NcclVersionCode(2, 30, 7)));
  EXPECT_FALSE(HashFormulasKnown(NcclVersionCode(2, 31, 0)));
}

}  // namespace
}  // namespace ncclrr::interpose
