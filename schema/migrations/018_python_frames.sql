-- CPython frames in stacks (issue 18). In a Python process every stack also
-- carries the thread's interpreter frames, merged in place of the native
-- _PyEval_EvalFrameDefault frames that ran them. A Python frame is a row of
-- `frames` like a native one: its module is the source file (modules.path =
-- the code object's co_filename, symbols 'python'), its symbol the function's
-- qualified name, file and line the source line; its offset is a key, not an
-- address ((line << 32) | a hash of the name).
ALTER TABLE frames ADD COLUMN kind TEXT NOT NULL DEFAULT 'native';  -- 'native' or 'python'

-- How a stack's Python walk ended: NULL no walk (not a Python process, or
-- --python-stacks off); 'root' the thread's first frame was reached (or the
-- thread ran no Python); 'depth' 64 frames (or --stack-depth) were kept;
-- 'fault' a frame could not be read; 'torn' a frame did not hold a code
-- object; 'gone' the process exited before a code object of the walk was
-- read (user space reads each once, at the first record that names it);
-- 'no_thread' the calling thread has no interpreter state (a C++
-- thread). In every case but 'root' the frames kept are the innermost ones.
ALTER TABLE stacks ADD COLUMN python_end TEXT;

-- --python-stacks: 1 on, 0 off (NULL: a capture from before version 18).
ALTER TABLE capture ADD COLUMN python_stacks INTEGER;

-- stack_symbols again, with each frame's kind.
DROP VIEW stack_symbols;
CREATE VIEW stack_symbols AS
  SELECT sf.stack_id, sf.position, f.id AS frame_id, m.path AS module, s.name AS symbol,
         f.symbol_offset, f.file, f.line, f.offset, f.kind
  FROM stack_frames sf
  JOIN frames f ON f.id = sf.frame_id
  JOIN modules m ON m.id = f.module_id
  LEFT JOIN symbols s ON s.id = f.symbol_id;
