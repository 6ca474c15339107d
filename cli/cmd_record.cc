// `ncclrr record`: records every NCCL call of CMD. Not implemented yet; replaced when its component
// lands.
#include "pending_command.h"

namespace ncclrr::cli {
NCCLRR_PENDING_COMMAND(Record, "record",
                       "[-o DIR] [--ring N] [--sketch] [--capture BYTES] [--capture-filter F] "
                       "[--gpu-timing] [--stacks] -- CMD [ARGS...]",
                       "records every NCCL call of CMD")
}  // namespace ncclrr::cli
