// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/* The one gpuobs BPF object (one skeleton: gpuobs.skel.h). Each program family
 * lives in its own header so this file stays an index. */
#include "vmlinux.h"
#include <bpf/bpf_helpers.h>
#include <bpf/bpf_core_read.h>
#include "compat.bpf.h"

#include "maps.bpf.h"
#include "launch.bpf.h"
#include "ioctl.bpf.h"
#include "api.bpf.h"
#include "level_zero.bpf.h"
#include "library.bpf.h"
#include "gpu_sched.bpf.h"
#include "process.bpf.h" /* last: cleans up the other families' per-thread maps */

char LICENSE[] SEC("license") = "Dual BSD/GPL";
