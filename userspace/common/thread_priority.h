// The capture's own threads (the ring consumer and the writer) run at a
// higher priority than ordinary work. Their work per event is bounded, but a
// host busy with other processes starved them: gpuobs record killed with -9
// under a load of two busy loops on a 2-core machine lost launches issued up
// to 641 ms before the kill (the documented bound is 400 ms); at nice -10
// the same runs lost 39-135 ms (docs/operations.md, "kill -9").
#pragma once

namespace gpuobs {

inline constexpr int kCaptureNice = -10;

// Sets the calling thread's nice value (Linux: per thread) to kCaptureNice
// unless it is already that or lower. False when not permitted (no
// CAP_SYS_NICE: gpuobsd's unit sets Nice= instead); nothing else changes.
bool raise_capture_thread_priority();

}  // namespace gpuobs
