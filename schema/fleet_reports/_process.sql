-- _process: the filter's process name (--process), or every process when it
-- is empty.
((SELECT process FROM filter) = '' OR process = (SELECT process FROM filter))
