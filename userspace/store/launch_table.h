// kernel_launches_between(lo_ns, hi_ns): the launches with lo_ns <=
// ts_mono_ns <= hi_ns (NULL: unbounded), with every column of kernel_launches,
// as a table-valued function registered on every connection gpuobs opens.
// Since schema 16 the kernel_launches view unpacks launch runs in SQL (about
// 6 us per launch); this reads only the runs of the window and decodes them
// in C++ (store/launch_runs.h), so a time-filtered report, the replay and the
// exports read launches as fast as the one-row-per-launch table allowed.
// Captures older than schema 16 are read through their kernel_launches.
#pragma once

#include <sqlite3.h>

namespace gpuobs {

// SQLITE_OK, or SQLite's code when the module cannot be registered.
int register_launch_table(sqlite3* db);

}  // namespace gpuobs
