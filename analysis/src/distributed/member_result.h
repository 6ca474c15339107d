#pragma once
// What each member of a spread check found, sent to member 0, and put back there in the order
// one process produces findings and notes.
#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "ncclrr/analysis/finding.h"

namespace ncclrr::analysis {

// Findings and notes of one member, each with the index of the checker that made it.
struct MemberResult {
  std::vector<std::pair<uint32_t, Finding>> findings;
  std::vector<std::pair<uint32_t, Note>> notes;
  uint64_t occurrences = 0;
};

std::string EncodeResult(const MemberResult& r);
MemberResult DecodeResult(const std::string& blob);

// Every member's results (member 0 first) in one process's order: per checker, the notes about
// the whole trace (member 0's) and then the communicators' in comm order; the findings by
// checker and communicator (Check's grouping orders them by time after that).
void MergeResults(std::vector<MemberResult> all, std::vector<Note>* notes,
                  std::vector<Finding>* findings, uint64_t* occurrences);

}  // namespace ncclrr::analysis
