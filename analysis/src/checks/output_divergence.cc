#include "checks/output_divergence.h"

#include <algorithm>

namespace ncclrr::analysis {
namespace {

using Blocks = std::vector<const SketchData*>;

Blocks RecvBlocks(const CallSketches& s) {
  Blocks b = s.recv;
  std::sort(b.begin(), b.end(),
            [](const SketchData* x, const SketchData* y) { return x->first < y->first; });
  return b;
}

bool SameBlocks(const Blocks& a, const Blocks& b) {
  if (a.size() != b.size()) return false;
  for (size_t i = 0; i < a.size(); ++i)
    if (a[i]->first != b[i]->first || a[i]->count != b[i]->count || a[i]->dtype != b[i]->dtype)
      return false;
  return true;
}

bool SameOutput(const Blocks& a, const Blocks& b) {
  for (size_t i = 0; i < a.size(); ++i)
    if (!sketch::CompareSketches(*a[i], *b[i]).same()) return false;
  return true;
}

// The output every rank outside it should have held: the one the identity check proves right
// when it proves every other output wrong, else the unique largest group. -1: an open tie.
int Reference(const std::vector<std::vector<size_t>>& groups, const std::vector<OutputProof>& proof,
              bool* by_identity) {
  int proven = -1;
  for (size_t g = 0; g < groups.size(); ++g) {
    const bool right = std::all_of(groups[g].begin(), groups[g].end(),
                                   [&](size_t i) { return proof[i] == OutputProof::kRight; });
    if (!right) continue;
    if (proven >= 0) {
      proven = -1;  // two outputs both right by the identity: it cannot tell
      break;
    }
    proven = int(g);
  }
  int largest = -1;
  bool unique = false;
  for (size_t g = 0; g < groups.size(); ++g) {
    if (largest < 0 || groups[g].size() > groups[size_t(largest)].size()) {
      largest = int(g);
      unique = true;
    } else if (groups[g].size() == groups[size_t(largest)].size()) {
      unique = false;
    }
  }
  if (proven >= 0) {
    bool others_wrong = true;
    for (size_t g = 0; g < groups.size(); ++g)
      if (int(g) != proven)
        for (size_t i : groups[g]) others_wrong = others_wrong && proof[i] == OutputProof::kWrong;
    if (others_wrong) {
      *by_identity = !(unique && largest == proven);
      return proven;
    }
  }
  return unique ? largest : -1;
}

// Where `a` and `b` first differ.
void Describe(const Blocks& a, const Blocks& b, OutputDivergence* d) {
  for (size_t i = 0; i < a.size(); ++i) {
    const sketch::SketchDifference diff = sketch::CompareSketches(*a[i], *b[i]);
    if (diff.same()) continue;
    d->first = a[i]->first;
    d->count = a[i]->count;
    d->dtype = a[i]->dtype;
    d->diff = diff;
    const int k = diff.first_sample;
    if (k >= 0 && size_t(k) < a[i]->sample_idx.size()) {
      d->element = a[i]->first + a[i]->sample_idx[size_t(k)];
      d->value = a[i]->samples[size_t(k)];
      d->other_value = b[i]->samples[size_t(k)];
    }
    return;
  }
}

}  // namespace

bool OutputsIdentical(Api api) {
  switch (CanonicalApi(api)) {
    case Api::kAllReduce:
    case Api::kBroadcast:
    case Api::kAllGather:
      return true;
    default:
      return false;
  }
}

std::optional<OutputDivergence> CompareOutputs(Api api, const std::vector<CallSketches>& sketches,
                                               const std::vector<int>& ranks,
                                               const std::vector<OutputProof>& proof) {
  if (!OutputsIdentical(api) || sketches.size() < 2 || sketches.size() != ranks.size() ||
      proof.size() != ranks.size())
    return std::nullopt;
  std::vector<Blocks> out;
  for (const CallSketches& s : sketches) {
    out.push_back(RecvBlocks(s));
    if (out.back().empty() || !SameBlocks(out.front(), out.back())) return std::nullopt;
  }
  std::vector<std::vector<size_t>> groups;  // indices of ranks holding the same output
  for (size_t i = 0; i < out.size(); ++i) {
    auto g = std::find_if(groups.begin(), groups.end(),
                          [&](const auto& grp) { return SameOutput(out[grp.front()], out[i]); });
    if (g == groups.end())
      groups.push_back({i});
    else
      g->push_back(i);
  }
  if (groups.size() == 1) return std::nullopt;
  OutputDivergence d;
  d.outputs = int(groups.size());
  const int ref = Reference(groups, proof, &d.by_identity);
  size_t a = 0, b = 0;  // the ranks whose outputs are described
  if (ref >= 0) {
    for (size_t i : groups[size_t(ref)]) d.reference.push_back(ranks[i]);
    b = groups[size_t(ref)].front();
    for (size_t g = 0; g < groups.size(); ++g)
      if (int(g) != ref)
        for (size_t i : groups[g]) d.ranks.push_back(ranks[i]);
    for (size_t i = 0; i < ranks.size(); ++i)
      if (ranks[i] == *std::min_element(d.ranks.begin(), d.ranks.end())) a = i;
  } else {
    d.ranks = ranks;
    a = groups[0].front();
    b = groups[1].front();
  }
  std::sort(d.ranks.begin(), d.ranks.end());
  std::sort(d.reference.begin(), d.reference.end());
  d.rank = ranks[a];
  d.other = ranks[b];
  Describe(out[a], out[b], &d);
  return d;
}

}  // namespace ncclrr::analysis
