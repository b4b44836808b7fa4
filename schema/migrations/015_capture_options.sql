-- The options a capture was made with (issue 20): how deep its stacks could
-- go, how they were unwound and how much stack each event copied, so whoever
-- reads a capture can tell "no stacks" or a cut stack from what was asked.
ALTER TABLE capture ADD COLUMN stack_depth INTEGER;      -- --stack-depth: frames per event (0: no stacks); NULL: before version 15
ALTER TABLE capture ADD COLUMN unwind TEXT;              -- --unwind: 'fp', 'dwarf' or 'bpf'
ALTER TABLE capture ADD COLUMN stack_copy_bytes INTEGER; -- --unwind dwarf: bytes of stack copied per event (0 otherwise)
