// SPDX-License-Identifier: GPL-2.0
// daqnet_mark: ECN marking at an emulated switch port, for `[network.ecn]` with
// `marking = "step"` in the testbed (the kernel here has no RED qdisc). Attached to the egress
// hook (clsact) of each switch port, it runs for every frame just before the port's root qdisc
// (tbf) takes it, and reads that qdisc's own byte count (`qstats.backlog`, which tbf keeps for
// everything it holds): the real backlog the frame is about to join, not an estimate. A frame
// that finds more than THRESHOLD_BYTES queued is marked Congestion Experienced if it is
// ECN-capable (bpf_skb_ecn_set_ce leaves other frames alone).
// Built by daqnet (crates/testbed/src/marking.rs) with clang, THRESHOLD_BYTES given with -D in
// the qdisc's measure (skb->len), and attached with tc.
#include "vmlinux.h"
#include <bpf/bpf_helpers.h>

char _license[] SEC("license") = "GPL";

#ifndef THRESHOLD_BYTES
#error "build with -DTHRESHOLD_BYTES=K"
#endif
#define TC_ACT_OK 0

extern void *bpf_cast_to_kern_ctx(void *obj) __ksym;

SEC("tc")
int daqnet_mark(struct __sk_buff *ctx)
{
	struct sk_buff *skb = bpf_cast_to_kern_ctx(ctx);
	struct net_device *dev = skb->dev;
	struct Qdisc *root;

	if (!dev)
		return TC_ACT_OK;
	root = dev->qdisc;
	if (root && root->qstats.backlog > THRESHOLD_BYTES)
		bpf_skb_ecn_set_ce(ctx);
	return TC_ACT_OK;
}
