// SPDX-License-Identifier: GPL-2.0
// daqnet_dctcp: DCTCP (RFC 8257) as a BPF struct_ops congestion control, for
// `congestion_control = "dctcp"` in the testbed: this kernel has no tcp_dctcp module and loads
// none. It follows Linux's tcp_dctcp.c, which the simulator's model mirrors as well:
// - the receiver echoes every change of CE state at once, first sending a delayed ACK with
//   the old state (dctcp_ece_ack_update);
// - the sender keeps alpha, the share of its data delivered with an ECN echo, updated once per
//   window of data with gain 1/16 (dctcp_update_alpha), starting at 1;
// - an echo cuts the window to cwnd * (1 - alpha/2) (dctcp_ssthresh, through the kernel's CWR
//   state), a loss halves it (dctcp_react_to_loss), growth is Reno's;
// - TCP_CONG_NEEDS_ECN: every segment ECN-capable, ECN negotiated whatever tcp_ecn says.
// Built and registered by daqnet (crates/testbed/src/bpf_cc.rs) with clang and bpftool.
#include "vmlinux.h"
#include <bpf/bpf_helpers.h>
#include <bpf/bpf_tracing.h>

char _license[] SEC("license") = "GPL";

/* Macros of the kernel's headers, which BTF does not carry. */
#define TCP_CONG_NEEDS_ECN 0x2
#define TCP_ECN_DEMAND_CWR 0x4
#define MAX_ALPHA 1024U
#define SHIFT_G 4

extern void tcp_reno_cong_avoid(struct sock *sk, __u32 ack, __u32 acked) __ksym;

/* One connection's state, in icsk_ca_priv. */
struct dqd {
	__u32 old_delivered;
	__u32 old_delivered_ce;
	__u32 prior_rcv_nxt;
	__u32 alpha;
	__u32 next_seq;
	__u32 ce_state;
	__u32 loss_cwnd;
};

static __always_inline struct tcp_sock *tp_of(struct sock *sk)
{
	return (struct tcp_sock *)sk;
}

static __always_inline struct dqd *ca_of(struct sock *sk)
{
	return (struct dqd *)((struct inet_connection_sock *)sk)->icsk_ca_priv;
}

static __always_inline void start_window(struct tcp_sock *tp, struct dqd *ca)
{
	ca->next_seq = tp->snd_nxt;
	ca->old_delivered = tp->delivered;
	ca->old_delivered_ce = tp->delivered_ce;
}

SEC("struct_ops")
void BPF_PROG(dqd_init, struct sock *sk)
{
	struct tcp_sock *tp = tp_of(sk);
	struct dqd *ca = ca_of(sk);

	ca->prior_rcv_nxt = tp->rcv_nxt;
	ca->alpha = MAX_ALPHA;
	ca->loss_cwnd = 0;
	ca->ce_state = 0;
	start_window(tp, ca);
}

SEC("struct_ops")
__u32 BPF_PROG(dqd_ssthresh, struct sock *sk)
{
	struct tcp_sock *tp = tp_of(sk);
	struct dqd *ca = ca_of(sk);
	__u32 cwnd = tp->snd_cwnd;
	__u32 cut = (__u32)(((__u64)cwnd * ca->alpha) >> 11);

	ca->loss_cwnd = cwnd;
	return cwnd - cut > 2 ? cwnd - cut : 2;
}

/* Once snd_una passes the end of the observed window: alpha = alpha - alpha/16 + F/16. */
SEC("struct_ops")
void BPF_PROG(dqd_in_ack_event, struct sock *sk, __u32 flags)
{
	struct tcp_sock *tp = tp_of(sk);
	struct dqd *ca = ca_of(sk);
	__u32 alpha = ca->alpha, decay, ce, total;

	if ((__s32)(tp->snd_una - ca->next_seq) < 0)
		return;
	ce = tp->delivered_ce - ca->old_delivered_ce;
	decay = alpha >> SHIFT_G;
	alpha -= decay ? decay : alpha;
	if (ce) {
		total = tp->delivered - ca->old_delivered;
		alpha += (ce << (10 - SHIFT_G)) / (total ? total : 1);
		if (alpha > MAX_ALPHA)
			alpha = MAX_ALPHA;
	}
	ca->alpha = alpha;
	start_window(tp, ca);
}

static __always_inline void react_to_loss(struct sock *sk)
{
	struct tcp_sock *tp = tp_of(sk);
	__u32 half = tp->snd_cwnd >> 1;

	ca_of(sk)->loss_cwnd = tp->snd_cwnd;
	tp->snd_ssthresh = half > 2 ? half : 2;
}

SEC("struct_ops")
void BPF_PROG(dqd_set_state, struct sock *sk, __u8 new_state)
{
	if (new_state == TCP_CA_Recovery &&
	    new_state != ((struct inet_connection_sock *)sk)->icsk_ca_state)
		react_to_loss(sk);
}

static __always_inline void echo_state(struct tcp_sock *tp, __u32 ce_state)
{
	if (ce_state)
		tp->ecn_flags |= TCP_ECN_DEMAND_CWR;
	else
		tp->ecn_flags &= ~TCP_ECN_DEMAND_CWR;
}

/* The receiver's echo: a change of CE state is ACKed at once; a delayed ACK goes first, for
 * what arrived before, with the old state. */
static __always_inline void ce_state_update(struct sock *sk, __u32 ce)
{
	struct tcp_sock *tp = tp_of(sk);
	struct dqd *ca = ca_of(sk);

	if (ca->ce_state != ce) {
		if (tp->inet_conn.icsk_ack.pending & ICSK_ACK_TIMER) {
			echo_state(tp, ca->ce_state);
			bpf_tcp_send_ack(tp, ca->prior_rcv_nxt);
		}
		tp->inet_conn.icsk_ack.pending |= ICSK_ACK_NOW;
	}
	ca->prior_rcv_nxt = tp->rcv_nxt;
	ca->ce_state = ce;
	echo_state(tp, ce);
}

SEC("struct_ops")
void BPF_PROG(dqd_cwnd_event, struct sock *sk, enum tcp_ca_event ev)
{
	switch (ev) {
	case CA_EVENT_ECN_IS_CE:
		ce_state_update(sk, 1);
		break;
	case CA_EVENT_ECN_NO_CE:
		ce_state_update(sk, 0);
		break;
	case CA_EVENT_LOSS:
		react_to_loss(sk);
		break;
	default:
		break;
	}
}

SEC("struct_ops")
__u32 BPF_PROG(dqd_undo_cwnd, struct sock *sk)
{
	__u32 cwnd = tp_of(sk)->snd_cwnd, loss = ca_of(sk)->loss_cwnd;

	return cwnd > loss ? cwnd : loss;
}

SEC("struct_ops")
void BPF_PROG(dqd_cong_avoid, struct sock *sk, __u32 ack, __u32 acked)
{
	tcp_reno_cong_avoid(sk, ack, acked);
}

SEC(".struct_ops")
struct tcp_congestion_ops dqd = {
	.init = (void *)dqd_init,
	.in_ack_event = (void *)dqd_in_ack_event,
	.cwnd_event = (void *)dqd_cwnd_event,
	.ssthresh = (void *)dqd_ssthresh,
	.cong_avoid = (void *)dqd_cong_avoid,
	.undo_cwnd = (void *)dqd_undo_cwnd,
	.set_state = (void *)dqd_set_state,
	.flags = TCP_CONG_NEEDS_ECN,
	.name = "daqnet_dctcp",
};
