-- _stream_label: a stream handle's label, given l_stream (the handle) and
-- l_label from _stream_labels (empty where the join found none).
multiIf(l_stream IN (0, 1), 'legacy', l_stream = 2, 'per-thread', l_label)
