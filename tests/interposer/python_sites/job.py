"""A training-loop-shaped job for the Python call-site tests: gradients all-reduced from a
method, the loss from another line, and a second communicator driven by a Python thread.
A trailing site comment marks each line the test expects a site to name."""
import ctypes
import threading

from fakefw import dist


class Trainer:
    def __init__(self, comm):
        self.comm = comm
        self.grads = [(ctypes.c_float * 64)() for _ in range(2)]
        self.loss = (ctypes.c_float * 1)()

    def reduce_gradients(self):
        for g in self.grads:
            dist.all_reduce(g, self.comm)  # site:grad

    def step(self):
        self.reduce_gradients()  # site:step
        dist.all_reduce(self.loss, self.comm)  # site:loss


def side_worker(comm):
    buf = (ctypes.c_float * 8)()
    for _ in range(3):
        dist.all_reduce(buf, comm)  # site:thread
    dist.synchronize()  # buf is freed on return; the other thread may not have run the call yet


def main():
    comms = dist.init(1) + dist.init(1)  # site:init
    side = threading.Thread(target=side_worker, args=(comms[1],))
    side.start()
    trainer = Trainer(comms[0])
    for _ in range(3):
        trainer.step()  # site:main
    side.join()
    dist.synchronize()
    for c in comms:
        dist.destroy(c)
    print("done")


main()  # site:module
