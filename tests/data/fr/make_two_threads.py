"""Writes two synthetic Flight Recorder dumps (JSON, version 2.10) of a DDP-like job whose
gradient buckets come from one thread (autograd's) and its loss all-reduce from another (the
main thread), for tests/analysis/fr_import_check_test.cc: FR's end times are when the watchdog
saw the GPU finish, so the two threads' entries overlap in time without the threads having used
the communicator at once.

  two-threads-hang/: 3 steps completed, then both ranks' next calls stay scheduled (a GPU hang)
  two-threads-skip/: 4 steps completed; at step 4 rank 1 skips the loss all-reduce (a
                     rank-dependent branch), the rest stays scheduled

  python3 make_two_threads.py   (from this folder)
"""
import json
import os


def frames(tid):
    line, name = (50, "main") if tid == "1" else (70, "hook")
    return [{"filename": "/home/user/train.py", "line": line, "name": name}]


def entry(rid, seq, size, tid, created, completed):
    state = "completed" if completed else "scheduled"
    return {"record_id": rid, "pg_id": 0, "process_group": ["0", "default_pg"],
            "collective_seq_id": seq, "p2p_seq_id": 0, "op_id": seq,
            "profiling_name": "nccl:all_reduce", "time_created_ns": created,
            "input_sizes": [[size]], "input_dtypes": ["Float"], "output_sizes": [[size]],
            "output_dtypes": ["Float"], "state": state, "time_discovered_started_ns": 0,
            "time_discovered_completed_ns": created + 500000 if completed else 0,
            "retired": completed, "timeout_ms": 600000, "is_p2p": False, "thread_id": tid,
            "thread_name": "t" + tid, "frames": frames(tid)}


def dump(rank, variant):
    ents, t, seq = [], 1000000, 1
    steps, done = (4, 3) if variant == "hang" else (6, 4)
    for step in range(steps):
        ents.append(entry(len(ents), seq, 1000, "2", t, step < done))  # bucket: autograd thread
        seq += 1
        t += 10000
        if variant == "hang" and step == done and rank == 1:
            continue  # rank 1 hung in its bucket
        if variant == "skip" and step == 4 and rank == 1:
            continue  # rank 1 skips the loss all-reduce
        ents.append(entry(len(ents), seq, 1, "1", t, step < done))  # loss: main thread
        seq += 1
        t += 1000000
    return {"version": "2.10", "comm_lib_version": "2.28.9",
            "pg_config": {"0": {"name": "0", "desc": "default_pg", "ranks": "[0, 1]"}},
            "pg_status": {"0": {"last_enqueued_collective": str(seq - 1),
                                "last_started_collective": "-1",
                                "last_completed_collective": str(2 * done)}},
            "entries": ents}


for variant in ("hang", "skip"):
    d = f"two-threads-{variant}"
    os.makedirs(d, exist_ok=True)
    for r in (0, 1):
        with open(f"{d}/nccl_trace_rank_{r}", "w") as out:
            out.write(json.dumps(dump(r, variant)))
