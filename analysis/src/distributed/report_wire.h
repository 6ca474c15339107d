#pragma once
// Findings and notes as the members of a check group send them to the one that prints.
#include "distributed/wire.h"
#include "ncclrr/analysis/finding.h"

namespace ncclrr::analysis::wire {

void PutFinding(Writer& w, const Finding& f);
Finding GetFinding(Reader& r);
void PutNote(Writer& w, const Note& n);
Note GetNote(Reader& r);

}  // namespace ncclrr::analysis::wire
