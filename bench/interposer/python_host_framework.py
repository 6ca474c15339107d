"""Stands in for torch.distributed in bench-interposer --python: two frames of a framework
(a logging wrapper and the collective) between the user's code and NCCL. The bench passes
this file over with NCCLRR_PY_SKIP, as ncclrr passes over torch's own frames."""
import ctypes
import functools

_nccl = ctypes.CDLL("libnccl.so.2")  # the host NCCL in no-op mode; the GIL is released
_NCCL_FLOAT32, _NCCL_SUM = 7, 0


def _logged(fn):
    @functools.wraps(fn)
    def wrapper(*args, **kwargs):
        return fn(*args, **kwargs)
    return wrapper


def init():
    comm = ctypes.c_void_p()
    if _nccl.ncclCommInitAll(ctypes.byref(comm), 1, None) != 0:
        raise RuntimeError("ncclCommInitAll failed")
    return comm


@_logged
def all_reduce(buf, comm):
    return _nccl.ncclAllReduce(buf, buf, len(buf), _NCCL_FLOAT32, _NCCL_SUM, comm,
                               ctypes.c_void_p(0x1000))


def destroy(comm):
    _nccl.ncclCommDestroy(comm)
