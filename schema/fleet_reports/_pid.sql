-- _pid: the filter's pid (--pid, with --host), or every pid when has_pid is 0.
((SELECT has_pid FROM filter) = 0 OR pid = (SELECT pid FROM filter))
