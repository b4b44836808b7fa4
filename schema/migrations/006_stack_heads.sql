-- The innermost four frames of each stack as one line ("f0 <- f1 <- f2 <- f3",
-- '?' for a frame without a symbol): the short form reports print next to
-- an event (errors, leaks, top_stacks). The whole stack: stack_symbols.
CREATE VIEW stack_heads AS
  SELECT s.id AS stack_id,
         (SELECT group_concat(f, ' <- ') FROM (SELECT coalesce(ss.symbol, '?') AS f FROM stack_symbols ss
            WHERE ss.stack_id = s.id ORDER BY ss.position LIMIT 4)) AS stack
  FROM stacks s;
