// SPDX-License-Identifier: GPL-2.0
// daqnet_static: a TCP congestion control with a fixed window, for `congestion_control =
// "static"` in the testbed (seed 002's remedy; seed 000 ran its senders without congestion
// control). The window is the route's initcwnd, which the testbed sets to static_cwnd_segments.
// `cong_control` replaces Linux's growth and proportional rate reduction, so every ACK puts the
// window back — after a fast retransmit and after a timeout alike.
// Built and registered by daqnet (crates/testbed/src/bpf_cc.rs) with clang and bpftool.
#include "vmlinux.h"
#include <bpf/bpf_helpers.h>
#include <bpf/bpf_tracing.h>

char _license[] SEC("license") = "GPL";

struct dqs {
	__u32 window;
};

static __always_inline struct tcp_sock *tp_of(struct sock *sk)
{
	return (struct tcp_sock *)sk;
}

static __always_inline struct dqs *ca_of(struct sock *sk)
{
	return (struct dqs *)((struct inet_connection_sock *)sk)->icsk_ca_priv;
}

SEC("struct_ops")
void BPF_PROG(dqs_init, struct sock *sk)
{
	struct tcp_sock *tp = tp_of(sk);
	struct dqs *ca = ca_of(sk);

	ca->window = tp->snd_cwnd ? tp->snd_cwnd : 10;
	tp->snd_ssthresh = ca->window;
}

SEC("struct_ops")
__u32 BPF_PROG(dqs_ssthresh, struct sock *sk)
{
	return ca_of(sk)->window;
}

SEC("struct_ops")
__u32 BPF_PROG(dqs_undo_cwnd, struct sock *sk)
{
	return ca_of(sk)->window;
}

SEC("struct_ops")
void BPF_PROG(dqs_cong_avoid, struct sock *sk, __u32 ack, __u32 acked)
{
}

SEC("struct_ops")
void BPF_PROG(dqs_cong_control, struct sock *sk, __u32 ack, int flag, const struct rate_sample *rs)
{
	tp_of(sk)->snd_cwnd = ca_of(sk)->window;
}

SEC(".struct_ops")
struct tcp_congestion_ops dqs = {
	.init = (void *)dqs_init,
	.ssthresh = (void *)dqs_ssthresh,
	.undo_cwnd = (void *)dqs_undo_cwnd,
	.cong_avoid = (void *)dqs_cong_avoid,
	.cong_control = (void *)dqs_cong_control,
	.name = "daqnet_static",
};
