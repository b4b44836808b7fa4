-- _who: the filter's host, pid and process, not its time window.
{{_host}} AND {{_pid}} AND {{_process}}
