-- _time: rows whose ts_ns is in the filter's window (--since/--until as
-- Unix ns; -9e18 and 9e18 when not given).
ts_ns >= (SELECT since_ns FROM filter) AND ts_ns <= (SELECT until_ns FROM filter)
