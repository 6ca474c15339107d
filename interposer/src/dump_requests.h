#pragma once
// Dump on demand across processes, in flight-recorder mode (record --ring): a request file in the
// trace directory (ncclrr-dump-request, written whole by `ncclrr status --dump` or by any
// recording process whose watchdog fires) that every recording process's housekeeping thread
// looks at each tick; each new request makes every process write its ring once. Works across
// hosts on a shared filesystem; SIGUSR1 stays the way to ask one process.
#include <string>

namespace ncclrr::interpose {

// On the housekeeping thread, each tick: true, with the request's text, when a request appeared
// since the last look (not one this process wrote). The first look only learns what is there.
bool NewDumpRequest(const std::string& trace_dir, std::string* text);

// Asks every process recording into `trace_dir` to dump (this one already has).
void WriteDumpRequest(const std::string& trace_dir, const std::string& why);

}  // namespace ncclrr::interpose
