-- _copies_untimed: _copies_timed where the database has no GPU times to
-- join: every call without one, as a capture recorded without --gpu-time.
SELECT *, toUInt8(0) AS g_has, toInt64(0) AS g_d FROM (SELECT * FROM copies WHERE {{_where}})
