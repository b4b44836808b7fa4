-- _gpu_samples: the filter's host's GPU metric samples, each with dur, the
-- time it held its value (ts_ns to until_ns) cut to the filter's window; a
-- sample that held no time weighs 1 ns if it lies in the window. Samples
-- with no time in the window are dropped. (dur is computed a level above
-- the read of gpu_metrics: over a Distributed table, 18.16 names a selected
-- expression with a scalar subquery differently on the shards and on the
-- query node, and loses the column.)
(SELECT * FROM (SELECT *, greatest(least(until_ns, (SELECT until_ns FROM filter)) - greatest(ts_ns, (SELECT since_ns FROM filter)),
                                   if(ts_ns = until_ns AND ts_ns >= (SELECT since_ns FROM filter)
                                        AND ts_ns <= (SELECT until_ns FROM filter), 1, 0)) AS dur
                FROM (SELECT * FROM gpu_metrics WHERE {{_host}}))
 WHERE dur > 0)
