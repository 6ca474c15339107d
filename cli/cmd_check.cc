// `ncclrr check`: cross-rank analysis of a trace. Not implemented yet; replaced when its component
// lands.
#include "pending_command.h"

namespace ncclrr::cli {
NCCLRR_PENDING_COMMAND(Check, "check", "DIR [--json] [--strict] [--stable]",
                       "cross-rank analysis of a trace")
}  // namespace ncclrr::cli
