// Queries are counted, not recorded one by one: QueryCount records carry, per communicator and
// API, the number of calls so far (cumulative; the last record of a pair is its total). Calls
// without a communicator (ncclGetVersion, ncclGetErrorString) count under comm id 0.
#pragma once
#include <nccl.h>

#include <mutex>

#include "comm_registry.h"

namespace ncclrr::interpose {

void CountProcessQuery(CommState* cs, Api api);
// The asynchronous error of `cs` differs from the last value the application saw: recorded as
// an AsyncErrorChange call (result = new value, aux = old value).
void AsyncErrorChanged(CommState* cs, ncclResult_t value, const void* caller);
// Writes QueryCount records for every count that changed since the last time (housekeeping,
// exit).
void EmitQueryCounts();
// The final counts of a communicator about to be forgotten.
void EmitQueryCountsOf(CommState* cs);
// Guards the emitted counts; taken around fork() (triggers.cc).
std::mutex& QueryMutex();

}  // namespace ncclrr::interpose
