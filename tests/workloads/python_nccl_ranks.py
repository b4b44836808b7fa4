"""One rank of a Python NCCL job against the fake libnccl (issue 24's
straggler, with its Python call site). As DDP does, the all-reduce runs on a
thread that runs no Python (tests/workloads/native_thread_launcher.c) while
the main thread waits for it at a known line ("# site:NAME"); the last rank
sleeps SLEEP_MS before each step, so it enters every all-reduce last.
Usage: python3 python_nccl_ranks.py LIBNCCL LAUNCHER_LIB RANK NRANKS ID_FILE STEPS SLEEP_MS
Rank 0 writes the communicator's unique id to ID_FILE (which must not exist
yet); the others wait for it. Prints {"pid", "rank", "steps"} at the end.
"""
import ctypes
import json
import os
import sys
import time

nccl = ctypes.CDLL(sys.argv[1])
launcher = ctypes.CDLL(sys.argv[2])
rank, nranks, id_file = int(sys.argv[3]), int(sys.argv[4]), sys.argv[5]
steps, sleep_ms = int(sys.argv[6]), float(sys.argv[7])


class UniqueId(ctypes.Structure):
    _fields_ = [("internal", ctypes.c_char * 128)]


nccl.ncclCommInitRank.argtypes = [ctypes.POINTER(ctypes.c_void_p), ctypes.c_int, UniqueId, ctypes.c_int]
launcher.allreduce_on_plain_thread.argtypes = [ctypes.c_void_p] * 3 + [ctypes.c_size_t]
allreduce = ctypes.cast(nccl.ncclAllReduce, ctypes.c_void_p)
stream = ctypes.c_void_p(0x5000 + rank)


def unique_id():
    uid = UniqueId()
    if rank == 0:
        assert nccl.ncclGetUniqueId(ctypes.byref(uid)) == 0
        with open(id_file + ".tmp", "wb") as f:
            f.write(bytes(uid))
        os.rename(id_file + ".tmp", id_file)
        return uid
    deadline = time.time() + 10
    while not os.path.exists(id_file):
        assert time.time() < deadline, "no id"
        time.sleep(0.01)
    ctypes.memmove(ctypes.byref(uid), open(id_file, "rb").read(), 128)
    return uid


def reduce_grads(comm):
    return launcher.allreduce_on_plain_thread(allreduce, comm, stream, 1024)  # site:reduce_grads


def train_step(comm):
    if rank == nranks - 1:
        time.sleep(sleep_ms / 1000)
    assert reduce_grads(comm) == 0  # site:train_step


def main():
    comm = ctypes.c_void_p()
    assert nccl.ncclCommInitRank(ctypes.byref(comm), nranks, unique_id(), rank) == 0
    for _ in range(steps):
        train_step(comm)
    assert nccl.ncclCommDestroy(comm) == 0
    print(json.dumps({"pid": os.getpid(), "rank": rank, "steps": steps}), flush=True)


if __name__ == "__main__":
    main()
