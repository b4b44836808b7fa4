-- Schema version 22: whose Python frames a stack holds. A thread that runs
-- no Python of its own (PyTorch's autograd worker, a C++ thread pool, a
-- thread whose interpreter state has no frame) takes the Python frames of
-- its process's main thread, where the line that waits on it runs
-- (loss.backward(), a blocking call into C++): `gpuobs record
-- --python-main-thread on`, the default. Taken only while the main thread
-- is off the CPU (waiting) and has a frame. They follow the thread's own
-- native frames; python_end says how their walk ended, as for the caller's.
-- NULL: no Python walk (python_end NULL); 'calling' the calling thread's
-- own frames (or none: python_end 'no_thread'); 'main' the main thread's.
ALTER TABLE stacks ADD COLUMN python_thread TEXT;

-- --python-main-thread: 1 on, 0 off; NULL without Python frames
-- (--python-stacks off) or in a capture older than version 22.
ALTER TABLE capture ADD COLUMN python_main_thread INTEGER;

-- Stacks of an older capture (upgraded by `gpuobs upgrade`) hold their own
-- thread's frames.
UPDATE stacks SET python_thread = 'calling' WHERE python_end IS NOT NULL;
