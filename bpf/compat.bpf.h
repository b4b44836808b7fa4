/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/* Helpers missing from Debian 12's libbpf 1.1 headers, in one place. */
#ifndef GPUOBS_COMPAT_BPF_H
#define GPUOBS_COMPAT_BPF_H

#include <bpf/bpf_tracing.h>

/* libbpf >= 1.2 has BPF_UPROBE/BPF_URETPROBE; on x86-64 they are the kprobe
 * macros (same pt_regs argument registers). */
#ifndef BPF_UPROBE
#define BPF_UPROBE(name, args...) BPF_KPROBE(name, ##args)
#endif
#ifndef BPF_URETPROBE
#define BPF_URETPROBE(name, args...) BPF_KRETPROBE(name, ##args)
#endif

/* libbpf 1.1 stops at PT_REGS_PARM5; x86-64 passes argument 6 in r9. */
#ifndef PT_REGS_PARM6
#define PT_REGS_PARM6(x) (((const struct pt_regs *)(x))->r9)
#endif

/* Kernel dev_t encoding (include/linux/kdev_t.h): 12-bit major, 20-bit minor. */
#define GPUOBS_MINORBITS  20
#define GPUOBS_MAJOR(dev) ((__u32)((dev) >> GPUOBS_MINORBITS))
#define GPUOBS_MINOR(dev) ((__u32)((dev) & ((1U << GPUOBS_MINORBITS) - 1)))

#define GPUOBS_S_IFMT  00170000
#define GPUOBS_S_IFCHR 0020000

#endif
