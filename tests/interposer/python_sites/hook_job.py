"""A job whose collective is issued by a framework's hook on a thread the framework starts (as
autograd runs DDP's communication hooks): the only frames above the call are the framework's."""
import ctypes

from fakefw import dist, hooks, engine


def main():
    comm = dist.init(1)[0]
    engine.run_on_worker(hooks.bucket_hook, (ctypes.c_float * 16)(), comm)
    dist.synchronize()
    dist.destroy(comm)
    print("done")


main()
