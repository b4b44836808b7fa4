-- _failed: a failed API call. A query's CUDA_ERROR_NOT_READY /
-- hipErrorNotReady is its ordinary answer while work is pending, not a
-- failure (as the local reports say). (ifNull: 18.16 carries a Nullable
-- result's NULL through AND, and countIf of NULLs is NULL.)
ifNull(isNotNull(result) AND result != 0 AND NOT (result = 600 AND api IN ('cuStreamQuery', 'cuStreamQuery_ptsz',
  'cuEventQuery', 'hipStreamQuery', 'hipStreamQuery_spt', 'hipEventQuery')), 0)
