-- _stack_head: the innermost four frames of a shipped stack line, as
-- stack_heads gives them locally: the main-thread marker is not a frame.
-- (Python frames keep their " (file:line)", which stack_heads does not
-- have.) No stack, or one without frames: NULL, as stack_heads gives.
if(stack = '', CAST(NULL AS Nullable(String)), toNullable(arrayStringConcat(arraySlice(arrayFilter(
  x -> x != '[main thread]', splitByString(' <- ', stack)), 1, 4), ' <- ')))
