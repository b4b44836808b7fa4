-- _nccl_collective: an NCCL call that moves data (a collective or a
-- point-to-point call), not a communicator's or a group's bookkeeping.
op NOT IN ('comm_init', 'comm_init_all', 'comm_split', 'comm_destroy', 'comm_abort', 'comm_device', 'comm_rank',
           'comm_count', 'group_start', 'group_end')
