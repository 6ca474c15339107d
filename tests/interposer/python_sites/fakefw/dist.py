"""A stand-in for torch.distributed: the frames a Python call site passes over (the test sets
NCCLRR_PY_SKIP=fakefw/). NCCL is called through ctypes.CDLL, which releases the GIL, as
PyTorch's bindings do."""
import ctypes
import functools

_nccl = ctypes.CDLL("libnccl.so.2")
FLOAT32, SUM = 7, 0


def _logged(fn):
    @functools.wraps(fn)
    def wrapper(*args, **kwargs):
        return fn(*args, **kwargs)
    return wrapper


def init(nranks):
    comms = (ctypes.c_void_p * nranks)()
    if _nccl.ncclCommInitAll(comms, nranks, None) != 0:
        raise RuntimeError("ncclCommInitAll failed")
    return list(comms)


@_logged
def all_reduce(buf, comm):
    if _nccl.ncclAllReduce(buf, buf, len(buf), FLOAT32, SUM, ctypes.c_void_p(comm), None) != 0:
        raise RuntimeError("ncclAllReduce failed")


def synchronize():
    """Waits for the work queued on the default stream, as torch.cuda.synchronize() does: the
    host NCCL runs a call whenever some caller drives the streams, so a buffer must outlive it."""
    _nccl.ncclrrHostStreamSynchronize(None)


def destroy(comm):
    _nccl.ncclCommDestroy(ctypes.c_void_p(comm))
