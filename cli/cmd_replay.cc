// `ncclrr replay`: re-executes a trace. Not implemented yet; replaced when its component lands.
#include "pending_command.h"

namespace ncclrr::cli {
NCCLRR_PENDING_COMMAND(
    Replay, "replay",
    "DIR [--backend host|nccl] [--order recorded|canonical|permute[:N]|file:F] "
    "[--data synthetic|captured] [--seed S] [--timeout SEC] [--no-verify] [--mpi] [--json]",
    "re-executes a trace")
}  // namespace ncclrr::cli
