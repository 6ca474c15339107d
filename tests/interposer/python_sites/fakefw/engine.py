"""A stand-in for a framework's worker thread (autograd's engine): runs a function on a thread
of its own, so that no frame of the job is above the function's."""
import threading


def run_on_worker(fn, *args):
    worker = threading.Thread(target=fn, args=args)
    worker.start()
    worker.join()
