-- _comm: a communicator hash as 16 lower-case hex digits, as
-- printf('%016x') writes it locally.
concat(substring('0000000000000000', 1, 16 - length(lower(hex(comm_hash)))), lower(hex(comm_hash)))
