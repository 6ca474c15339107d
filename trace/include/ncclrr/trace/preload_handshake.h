/* How the preload interposer (libncclrr-interpose.so) and the profiler plugin
 * (libnccl-profiler-ncclrr.so) agree that every NCCL call is recorded once.
 *
 * `ncclrr record` sets up both: the preload sees calls into a dynamically linked NCCL; the plugin,
 * loaded by NCCL itself through NCCL_PROFILER_PLUGIN, sees calls into any NCCL >= 2.23, including
 * one linked statically into the application (TensorFlow). Where both see a call, the preload's
 * record wins (it has the reduction op, the exact call times and the data sketches) and the plugin
 * stays silent. The plugin asks the preload through two functions the preload exports with C
 * linkage, looked up with dlsym(RTLD_DEFAULT, ...); their names start with "nccl" so that the
 * preload's version script (which exports nccl*) exports them as they are:
 *
 *   ncclrrPreloadInRecordedCall()  -> 1 when the calling thread is inside a preload wrapper that
 *       is recording the current NCCL call (the application's call), else 0. The plugin asks it
 *       from NCCL's API events (plugin v5, NCCL 2.28+), which NCCL raises synchronously inside
 *       the application's call, and at communicator init.
 *   ncclrrPreloadRecordsComm(hash) -> 1 when the preload records the communicator whose NCCL
 *       commHash is `hash` (it created or looked it up through its wrappers), else 0. The plugin
 *       asks it for task events (plugin v1-v4), which NCCL raises at kernel launch, possibly on
 *       another thread.
 *
 * Both must be cheap, lock-free, async-signal-safe and callable before the preload has started
 * recording (they return 0 then). When the preload lacks them (an older build) but is loaded, the
 * plugin records everything it sees into its own file, `<host>-<pid>-plugin.ncclrr`, and says so
 * in a note: calls may then appear twice, once per route, never lost.
 *
 * The plugin's file is `<host>-<pid>.ncclrr` when no preload is loaded in the process, and
 * `<host>-<pid>-plugin.ncclrr` when one is (both routes may write into one trace directory).
 */
#ifndef NCCLRR_TRACE_PRELOAD_HANDSHAKE_H_
#define NCCLRR_TRACE_PRELOAD_HANDSHAKE_H_

#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

#define NCCLRR_PRELOAD_IN_RECORDED_CALL "ncclrrPreloadInRecordedCall"
#define NCCLRR_PRELOAD_RECORDS_COMM "ncclrrPreloadRecordsComm"

typedef int (*ncclrrPreloadInRecordedCall_t)(void);
typedef int (*ncclrrPreloadRecordsComm_t)(uint64_t comm_hash);

/* Defined by the preload (interposer/src/handshake.cc), which includes this header so that the
 * compiler checks its definitions against these declarations. */
int ncclrrPreloadInRecordedCall(void);
int ncclrrPreloadRecordsComm(uint64_t comm_hash);

#ifdef __cplusplus
}
#endif

#endif /* NCCLRR_TRACE_PRELOAD_HANDSHAKE_H_ */
