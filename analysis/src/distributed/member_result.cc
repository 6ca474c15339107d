#include "distributed/member_result.h"

#include <algorithm>
#include <tuple>

#include "distributed/report_wire.h"

namespace ncclrr::analysis {

std::string EncodeResult(const MemberResult& r) {
  std::string out;
  wire::Writer w(&out);
  w.Put(r.occurrences);
  w.Put<uint64_t>(r.findings.size());
  for (const auto& [k, f] : r.findings) {
    w.Put(k);
    wire::PutFinding(w, f);
  }
  w.Put<uint64_t>(r.notes.size());
  for (const auto& [k, n] : r.notes) {
    w.Put(k);
    wire::PutNote(w, n);
  }
  return out;
}

MemberResult DecodeResult(const std::string& blob) {
  MemberResult r;
  wire::Reader rd(blob);
  r.occurrences = rd.Get<uint64_t>();
  for (auto n = rd.Get<uint64_t>(); n > 0 && !rd.bad(); --n) {
    const auto k = rd.Get<uint32_t>();
    r.findings.emplace_back(k, wire::GetFinding(rd));
  }
  for (auto n = rd.Get<uint64_t>(); n > 0 && !rd.bad(); --n) {
    const auto k = rd.Get<uint32_t>();
    r.notes.emplace_back(k, wire::GetNote(rd));
  }
  return r;
}

void MergeResults(std::vector<MemberResult> all, std::vector<Note>* notes,
                  std::vector<Finding>* findings, uint64_t* occurrences) {
  std::vector<std::pair<uint32_t, Note>> tagged_notes;
  for (MemberResult& r : all)
    for (auto& kn : r.notes)
      if (kn.second.comm_index >= 0 || &r == &all.front()) tagged_notes.push_back(std::move(kn));
  auto by_checker_and_comm = [](const auto& a, const auto& b) {
    return std::tie(a.first, a.second.comm_index) < std::tie(b.first, b.second.comm_index);
  };
  std::stable_sort(tagged_notes.begin(), tagged_notes.end(), by_checker_and_comm);
  for (auto& [k, n] : tagged_notes) notes->push_back(std::move(n));
  std::vector<std::pair<uint32_t, Finding>> tagged;
  *occurrences = 0;
  for (MemberResult& r : all) {
    *occurrences += r.occurrences;
    for (auto& kf : r.findings) tagged.push_back(std::move(kf));
  }
  std::stable_sort(tagged.begin(), tagged.end(), by_checker_and_comm);
  for (auto& [k, f] : tagged) findings->push_back(std::move(f));
}

}  // namespace ncclrr::analysis
