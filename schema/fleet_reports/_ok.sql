-- _ok: a call that succeeded (a NULL result is a call seen at entry only:
-- counted as successful, as the local reports do).
(ifNull(result, 0) = 0)
