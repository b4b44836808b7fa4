-- probes: the attach report: every (library, symbol) the plan asked for.
-- Columns: library, dev, inode, symbol, program, status, error.
SELECT library, dev, inode, symbol, program, status, coalesce(error, '') AS error
FROM probes ORDER BY library, symbol;
