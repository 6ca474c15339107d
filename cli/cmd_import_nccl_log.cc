// `ncclrr import-nccl-log`: turns NCCL_DEBUG_SUBSYS=COLL logs into a trace. Not implemented yet;
// replaced when its component lands.
#include "pending_command.h"

namespace ncclrr::cli {
NCCLRR_PENDING_COMMAND(ImportNcclLog, "import-nccl-log", "LOG... -o DIR",
                       "turns NCCL_DEBUG_SUBSYS=COLL logs into a trace")
}  // namespace ncclrr::cli
