-- _where: every filter: host, pid, process and the time window.
{{_who}} AND {{_time}}
