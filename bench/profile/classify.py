#!/usr/bin/env python3
"""Where gpuobsd's CPU goes, per stage: reads `perf script -F tid,ip,sym`
output (cpu-clock samples with --call-graph dwarf) on stdin and charges each
sample to one stage (docs/performance.md, issue 17). Samples whose unwinding
stops in libc (mutexes, malloc) are charged by their leaf.
usage: perf script -i perf.data -F tid,ip,sym | bench/profile/classify.py [EVENTS [PERIOD_NS]]
  EVENTS: events stored while perf ran: prints ns per event for each stage
  (PERIOD_NS: the sampling period, 500000 for -F 2000)."""
import collections
import sys

# (stage, substrings of a frame): a sample goes to the first stage any of
# whose substrings is in any frame of its chain.
STAGES = [
    ("writer: launch_agg", ["LaunchAggregator"]),
    ("writer: symbolization (libdw)", ["Symbolizer", "dwfl_", "dwarf_", "inflate"]),
    ("writer: insert the launch row (bind/step/reset)", ["ApiRowWriter"]),
    ("writer: other rows (threads, processes, stacks, counters)",
     ["write_progress", "StackRowWriter", "on_proc", "insert_process", "note_thread", "write_counters_only"]),
    ("writer: commit, WAL, checkpoint", ["Db::exec", "sqlite3_exec", "sqlite3PagerCommit", "sqlite3WalFrames",
                                         "walCheckpoint", "pwrite", "fsync"]),
    ("consumer: decode", ["Decoder::decode", "read_stack"]),
    ("consumer: stack resolution", ["StackResolver"]),
    ("consumer: hand to writer (push, queue)", ["CaptureWriter::push", "push_many", "hand_over"]),
    ("consumer: per-event bookkeeping (origin, watch, variant)", ["note_origin", "note_for_library_watch", "on_record"]),
    ("consumer: ring (epoll, ring_buffer__poll)", ["epoll_wait", "ringbuf_process_ring", "ring_buffer__", "Engine::poll"]),
    ("writer: queue, per-event dispatch", ["write_transaction", "process_for", "CaptureWriter::run"]),
    ("consumer: poll loop (counters, status)", ["Session::poll", "set_counters", "Session::counters", "main"]),
    ("mutex, caller not unwound (SQLite's)", ["pthread_mutex_lock", "pthread_mutex_unlock", "lll_mutex"]),
    ("malloc/free, page faults, caller not unwound", ["malloc", "free", "sysmalloc", "exc_page_fault"]),
    ("sqlite, caller not unwound", ["sqlite3", "vdbe", "btree", "Btree", "pcache"]),
]


def classify(frames):
    for stage, keys in STAGES:
        if any(k in f for f in frames for k in keys):
            return stage
    return "other (kernel without a user chain, libc)"


def main():
    counts = collections.Counter()
    for block in sys.stdin.read().split("\n\n"):
        lines = [l.strip() for l in block.strip().splitlines()]
        if not lines:
            continue
        frames = [" ".join(l.split()[1:]) for l in lines[1:]]
        counts[classify(frames)] += 1
    total = sum(counts.values())
    events = int(sys.argv[1]) if len(sys.argv) > 1 else 0
    period = int(sys.argv[2]) if len(sys.argv) > 2 else 500000
    for stage, n in counts.most_common():
        per = f"{n * period / events:7.0f} ns/event  " if events else ""
        print(f"{100.0 * n / total:5.1f}%  {per}{stage}")
    print(f"{total} samples" + (f" = {total * period / events:.0f} ns per event" if events else ""))


main()
