#pragma once
// Findings and notes as the members of a check group send them to the one that prints.
#include "ncclrr/analysis/finding.h"
#include "ncclrr/base/wire.h"

namespace ncclrr::analysis::wire {

using ncclrr::wire::Reader;
using ncclrr::wire::Writer;

void PutFinding(Writer& w, const Finding& f);
Finding GetFinding(Reader& r);
void PutNote(Writer& w, const Note& n);
Note GetNote(Reader& r);

}  // namespace ncclrr::analysis::wire
