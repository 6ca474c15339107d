// `ncclrr export`: exports a trace for ui.perfetto.dev. Not implemented yet; replaced when its
// component lands.
#include "pending_command.h"

namespace ncclrr::cli {
NCCLRR_PENDING_COMMAND(Export, "export", "DIR --format perfetto -o FILE.json",
                       "exports a trace for ui.perfetto.dev")
}  // namespace ncclrr::cli
