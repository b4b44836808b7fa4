-- _segment_starts: each segment's start (the ledger's start_ns), for times
-- "after capture start": joined USING (host_id, segment) as s_start.
(SELECT host_id, segment, min(start_ns) AS s_start FROM segments GROUP BY host_id, segment)
