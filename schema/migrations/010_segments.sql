-- gpuobsd segments (issue 8): the daemon writes a series of self-contained
-- capture files; each one's capture row says where it is in the series.
-- (009 is reserved for the library-attach tables.)
ALTER TABLE capture ADD COLUMN segment INTEGER;  -- gpuobsd: sequence number (capture-...-<seq>.gpuobs); NULL otherwise
