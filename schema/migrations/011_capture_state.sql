-- How a capture ended (issue 15): written when the capture starts and with
-- every batch the writer commits, so a capture cut short (writer killed, disk
-- full, daemon killed) says so. The counters table is rewritten in the same
-- transactions: it holds the losses counted up to the last commit.
ALTER TABLE capture ADD COLUMN state TEXT;               -- 'complete', or 'incomplete (reason)'; NULL: before version 11
ALTER TABLE capture ADD COLUMN committed_mono_ns INTEGER; -- when the writer last committed a batch
