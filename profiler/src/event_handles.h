// The handles the plugin gives NCCL for events other than API calls (those are ApiSlots).
#pragma once
#include "plugin_state.h"

namespace ncclrr::profiler {

// Without a chained plugin, events other than API calls need no state: they share one handle per
// kind. With one, each event needs its own (to hold the chained handle); they are recycled only
// after many later events, because NCCL may name a stopped event as a parent a little later.
Handle* NewHandle(HandleKind kind, bool chaining);
// At the event's stop. Shared and API-call handles are left alone.
void RetireHandle(Handle* h);

}  // namespace ncclrr::profiler
