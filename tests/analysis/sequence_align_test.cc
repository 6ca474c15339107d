// AlignSequences explains disagreements by the smallest edit: reorder, skip, extra, mismatch.
#include "model/sequence_align.h"

#include <gtest/gtest.h>

#include <cctype>
#include <string>

namespace ncclrr::analysis {
namespace {

// Letters stand for signatures: "abcd" -> {'a','b','c','d'}; '?' is unknown (a dropped record).
std::vector<uint64_t> Seq(const std::string& s) {
  std::vector<uint64_t> v;
  for (char c : s) v.push_back(c == '?' ? kUnknownSignature : static_cast<uint64_t>(c));
  return v;
}

std::string Ops(const std::string& ref, const std::string& seq, const AlignParams& params) {
  std::string out;
  for (const AlignOp& op : AlignSequences(Seq(ref), Seq(seq), params)) {
    const char* names[] = {"reorder", "skip", "extra", "mismatch"};
    out += std::string(names[op.type]) + "@" + std::to_string(op.pos) + "/" +
           std::to_string(op.ref_pos) + "x" + std::to_string(op.len) + "," +
           std::to_string(op.ref_len) + " ";
  }
  return out;
}

std::string Ops(const std::string& ref, const std::string& seq, bool ends_in_hang = false) {
  AlignParams params;
  params.ends_in_hang = ends_in_hang;
  return Ops(ref, seq, params);
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

// Upper-case letters in `seq` are calls whose tensor is weakly known (fresh buffers): the shape
// of the lower-case letter, another signature.
std::string LooseOps(const std::string& ref, const std::string& seq, bool weak) {
  AlignParams params;
  std::vector<uint64_t> ref_shape, seq_shape;
  std::vector<uint8_t> seq_weak;
  for (char c : ref) ref_shape.push_back(static_cast<uint64_t>(std::tolower(c)));
  for (char c : seq) {
    seq_shape.push_back(static_cast<uint64_t>(std::tolower(c)));
    seq_weak.push_back(weak && std::isupper(c));
  }
  params.ref_shape = ref_shape;
  params.seq_shape = seq_shape;
  params.seq_weak = seq_weak;
  return Ops(ref, seq, params);
}

// A rank began its next step early (FSDP's forward all-gathers "mn") where the others went on
// with the step, whose gradients are fresh buffers on every step ("ZA"): the calls after the
// extra ones agree by shape only, and that is enough to see the extra calls.
TEST(SequenceAlign, WeaklyKnownCallsOfTheRightShapeResyncAnEdit) {
  // The weakly known calls stay mismatches of their own (the checker weighs their identity).
  EXPECT_EQ(LooseOps("xyzabxyzabxyzab", "xyzabxyzabmnxyZAb", true),
            "extra@10/10x2,0 mismatch@14/12x1,1 mismatch@15/13x1,1 ");
  EXPECT_EQ(LooseOps("xyzabxyzabxyzab", "xyzabxyzabmnxyZAb", false).rfind("extra@10", 0),
            std::string::npos);
}

// In a run of calls of one shape every shift agrees by shape: a weakly known call there is a
// mismatch at most, never the start of a skip.
TEST(SequenceAlign, WeaklyKnownCallsOfOneShapeProveNoShift) {
  EXPECT_EQ(LooseOps("aaaaaaaaaaaaaa", "aaaAaaaaaaaaaa", true), "mismatch@3/3x1,1 ");
  EXPECT_EQ(LooseOps("abababababababab", "abaBababababababa", true), "mismatch@3/3x1,1 ");
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
