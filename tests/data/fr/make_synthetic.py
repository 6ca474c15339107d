"""Writes the hand-made Flight Recorder dumps of tests/data/fr/synthetic/ (python3, no torch):
the field sets of older dump versions and encodings the real 2.10 dumps do not show.

  old-2.0/nccl_trace_rank_R    version 2.0 (pickle protocol 4): 'seq_id' instead of
                               'collective_seq_id', no pg_config, no dtypes, no is_p2p
  json-2.10/nccl_trace_rank_R  the JSON variant (dump_json): pg_status values as strings, 0 for
                               undiscovered times, no frames; rank 1 stuck in a reduce_scatter
  proto5-p2p/nccl_trace_rank_R protocol 5: a send/recv pair, an all_gather and an all_to_all on
                               a 2-rank subgroup of a 3-rank job, complex and bf16 tensors
"""
import json
import os
import pickle

HERE = os.path.join(os.path.dirname(os.path.abspath(__file__)), "synthetic")
FRAMES = [{"filename": "/venv/lib/python3.12/site-packages/torch/distributed/distributed_c10d.py",
           "line": 3068, "name": "all_reduce"},
          {"filename": "/home/user/train.py", "line": 214, "name": "worker"},
          {"filename": "/home/user/train.py", "line": 300, "name": "main"}]


def write(sub, rank, data, protocol=None):
    d = os.path.join(HERE, sub)
    os.makedirs(d, exist_ok=True)
    with open(os.path.join(d, f"nccl_trace_rank_{rank}"), "wb") as f:
        if protocol is None:
            f.write(json.dumps(data).encode())
        else:
            f.write(pickle.dumps(data, protocol=protocol))


def old(rank):
    entries = []
    for k in range(4):
        entries.append({"record_id": k, "pg_id": 0, "seq_id": k + 1, "op_id": k + 1,
                        "profiling_name": "nccl:all_reduce", "time_created_ns": 1000 + k,
                        "input_sizes": [[16]], "output_sizes": [[16]], "state": "completed",
                        "time_discovered_started_ns": None,
                        "time_discovered_completed_ns": 1100 + k, "retired": True,
                        "frames": FRAMES})
    return {"version": "2.0", "entries": entries}


def json_dump(rank):
    stuck = rank == 1
    entries = [{"record_id": 0, "pg_id": 0, "process_group": ["0", "default_pg"],
                "collective_seq_id": 1, "p2p_seq_id": 0, "op_id": 1,
                "profiling_name": "nccl:reduce_scatter", "time_created_ns": 5000,
                "input_sizes": [[8, 4]], "input_dtypes": ["Half"], "output_sizes": [[4, 4]],
                "output_dtypes": ["Half"], "state": "completed",
                "time_discovered_started_ns": 0, "time_discovered_completed_ns": 5100,
                "retired": True, "timeout_ms": 600000, "is_p2p": False,
                "thread_id": "140", "thread_name": "pt_main_thread"}]
    if stuck:
        e = dict(entries[0], record_id=1, collective_seq_id=2, op_id=2, time_created_ns=6000,
                 state="scheduled", time_discovered_completed_ns=0, retired=False)
        entries.append(e)
    return {"version": "2.10", "comm_lib_version": "2.28.9",
            "pg_config": {"0": {"name": "0", "desc": "default_pg", "ranks": "[0, 1]"}},
            "pg_status": {"0": {"last_enqueued_collective": str(len(entries)),
                                "last_started_collective": "-1",
                                "last_completed_collective": "1"}},
            "entries": entries}


def p2p(rank):
    base = {"pg_id": 1, "process_group": ("sub", "undefined"), "p2p_seq_id": 0,
            "state": "completed", "time_discovered_started_ns": None, "retired": True,
            "timeout_ms": 600000, "thread_id": "7", "thread_name": "main", "frames": FRAMES}
    me = rank  # global ranks 0 and 2 form the subgroup ["sub"]: group ranks 0 and 1
    peer = 1 - (0 if rank == 0 else 1)
    gr = 0 if rank == 0 else 1
    op = f"nccl:send {gr}->{peer}" if rank == 0 else f"nccl:recv {gr}<-{peer}"
    entries = [
        dict(base, record_id=0, collective_seq_id=0, p2p_seq_id=1, op_id=1, profiling_name=op,
             time_created_ns=100, input_sizes=[[32]], input_dtypes=["ComplexFloat"],
             output_sizes=[[32]], output_dtypes=["ComplexFloat"], is_p2p=True,
             time_discovered_completed_ns=150),
        dict(base, record_id=1, collective_seq_id=1, op_id=2,
             profiling_name="nccl:_allgather_base" if False else "nccl:_all_gather_base",
             time_created_ns=200, input_sizes=[[10]], input_dtypes=["BFloat16"],
             output_sizes=[[20]], output_dtypes=["BFloat16"], is_p2p=False,
             time_discovered_completed_ns=250),
        dict(base, record_id=2, collective_seq_id=2, op_id=3,
             profiling_name="nccl:all_to_all", time_created_ns=300, input_sizes=[[6, 2]],
             input_dtypes=["Long"], output_sizes=[[6, 2]], output_dtypes=["Long"],
             is_p2p=False, time_discovered_completed_ns=350),
    ]
    return {"version": "2.4", "pg_config": {"sub": {"name": "sub", "desc": "undefined",
                                                    "ranks": "[0, 2]"}},
            "pg_status": {}, "entries": entries}


for r in (0, 1):
    write("old-2.0", r, old(r), protocol=4)
    write("json-2.10", r, json_dump(r))
for r in (0, 2):
    write("proto5-p2p", r, p2p(r), protocol=5)
