// AlignSequences explains disagreements by the smallest edit: reorder, skip, extra, mismatch.
#include "model/sequence_align.h"

#include <gtest/gtest.h>

#include <string>

namespace ncclrr::analysis {
namespace {

// Letters stand for signatures: "abcd" -> {'a','b','c','d'}; '?' is unknown (a dropped record).
std::vector<uint64_t> Seq(const std::string& s) {
  std::vector<uint64_t> v;
  for (char c : s) v.push_back(c == '?' ? kUnknownSignature : static_cast<uint64_t>(c));
  return v;
}

std::string Ops(const std::string& ref, const std::string& seq, bool ends_in_hang = false) {
  AlignParams params;
  params.ends_in_hang = ends_in_hang;
  std::string out;
  for (const AlignOp& op : AlignSequences(Seq(ref), Seq(seq), params)) {
    const char* names[] = {"reorder", "skip", "extra", "mismatch"};
    out += std::string(names[op.type]) + "@" + std::to_string(op.pos) + "/" +
           std::to_string(op.ref_pos) + "x" + std::to_string(op.len) + "," +
           std::to_string(op.ref_len) + " ";
  }
  return out;
}

// A hang cuts each rank where it blocked: the rank that skipped a call may still have issued more
// (it ran ahead asynchronously, as a Flight Recorder dump of such a job shows), so the lengths
// do not rule the skip out; a skip still needs a call after it on both sides.
TEST(SequenceAlign, InAHangASkipNeedsNoShorterSide) {
  // Without the hang the longer side cannot have skipped: explained otherwise.
  EXPECT_EQ(Ops("abxcdefghijab", "abcdefghijabcd"), "mismatch@2/2x1,1 reorder@3/3x10,10 ");
  EXPECT_EQ(Ops("abxcdefghijab", "abcdefghijabcd", true), "skip@2/2x0,1 ");
  EXPECT_EQ(Ops("abx", "aby", true), "mismatch@2/2x1,1 ");
  EXPECT_EQ(Ops("ax", "ayz", true), "mismatch@1/1x1,1 ");
}

TEST(SequenceAlign, EqualSequencesNeedNoEdit) { EXPECT_EQ(Ops("abcdabcd", "abcdabcd"), ""); }

TEST(SequenceAlign, UnknownMatchesAnything) { EXPECT_EQ(Ops("abcdabcd", "ab?dabcd"), ""); }

TEST(SequenceAlign, SwapIsOneReorderPerOccurrence) {
  EXPECT_EQ(Ops("abcdabcdabcd", "acbdabcdacbd"), "reorder@1/1x2,2 reorder@9/9x2,2 ");
}

TEST(SequenceAlign, RotationOfThreeIsOneReorder) {
  EXPECT_EQ(Ops("abcdeabcde", "acdbeabcde"), "reorder@1/1x3,3 ");
}

TEST(SequenceAlign, SkippedCallInPeriodicSequenceIsASkipNotARotation) {
  // Rank skipped 'c' once; everything after is shifted by one.
  EXPECT_EQ(Ops("abcabcabcabcabc", "abcababcabcabc"), "skip@5/5x0,1 ");
}

TEST(SequenceAlign, ExtraCallIsAnExtra) {
  EXPECT_EQ(Ops("abcabcabcabc", "abcabXcabcabc"), "extra@5/5x1,0 ");
}

TEST(SequenceAlign, DifferentCallIsAMismatch) {
  EXPECT_EQ(Ops("abcabcabc", "abcaXcabc"), "mismatch@4/4x1,1 ");
}

TEST(SequenceAlign, EqualLengthsNeverExplainAMismatchAsSkipAndExtra) {
  // Same number of calls on both sides: a differing call is a mismatch even when the sequence
  // is periodic enough for a skip plus an extra to look plausible.
  EXPECT_EQ(Ops("ababababab", "abababbbab"), "mismatch@6/6x1,1 ");
}

TEST(SequenceAlign, ShorterRankAtTheEndIsLeftToMissingCall) {
  EXPECT_EQ(Ops("abcabcabc", "abcab"), "");
}

TEST(SequenceAlign, WindowBoundsTheReorder) {
  AlignParams p;
  p.reorder_window = 2;
  const auto ops = AlignSequences(Seq("abcdeabcde"), Seq("acdbeabcde"), p);
  ASSERT_FALSE(ops.empty());
  EXPECT_NE(ops[0].type, AlignOp::kReorder);
}

}  // namespace
}  // namespace ncclrr::analysis
