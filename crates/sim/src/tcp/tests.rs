//! The sender, state by state (Linux's `tcp_ca_state`), on a virtual clock and without the
//! simulator: each test writes data, feeds hand-made acknowledgements at chosen times, and
//! checks what goes out next and the counters Linux keeps. Segments are 1000 bytes; segment
//! `k` is `[1000k, 1000(k+1))`.

use super::{CaState, Sender, TcpParams};
use daqnet_core::scenario::{CongestionControl, TcpConfig};
use daqnet_core::Nanos;

const US: Nanos = 1_000;
const MS: Nanos = 1_000_000;
const SEG: u64 = 1000;
const RTT: Nanos = 100 * US;

fn config() -> TcpConfig {
    TcpConfig { timer_hz: 0, congestion_control: CongestionControl::Newreno, ..Default::default() }
}

fn sender_with(c: TcpConfig) -> Sender {
    let mut s = Sender::new(&TcpParams::from_config(&c, SEG as u32));
    s.seed_rtt(RTT);
    s
}

/// A sender with RACK and tail-loss probes off: losses found by the duplicate-ACK rule.
fn classic() -> Sender {
    sender_with(TcpConfig { rack: false, tail_loss_probe: false, ..config() })
}

/// What goes out now: (segment number, retransmission?).
fn send(s: &mut Sender, now: Nanos) -> Vec<(u64, bool)> {
    let mut out = Vec::new();
    s.transmit(now, SEG as u32, &mut out);
    out.iter().map(|t| (t.start / SEG, t.retransmit)).collect()
}

/// Writes `segments` segments at `now` and sends what the window allows.
fn write(s: &mut Sender, now: Nanos, segments: u64) -> Vec<(u64, bool)> {
    s.write(now, segments * SEG);
    send(s, now)
}

/// A SACK block over segments `from..to`.
fn sack(from: u64, to: u64) -> (u64, u64) {
    (from * SEG, to * SEG)
}

fn check(s: &Sender) {
    assert_eq!(s.scoreboard().violation(), None);
}

mod open {
    use super::*;

    #[test]
    fn slow_start_grows_the_window_by_every_segment_acknowledged() {
        let mut s = classic();
        assert_eq!(write(&mut s, 0, 40).len(), 10, "the initial window");
        s.on_ack(RTT, 10 * SEG, &[], false, None);
        assert_eq!((s.cwnd(), s.state()), (20, CaState::Open));
        assert_eq!(send(&mut s, RTT).len(), 20, "a window twice as large");
        check(&s);
    }

    #[test]
    fn without_sack_duplicate_acks_count_as_delivered_and_the_cumulative_ack_grows_by_the_rest() {
        // Linux `tcp_add_reno_sack` counts each duplicate ACK as one segment delivered, and
        // `tcp_remove_reno_sacks` the cumulative ACK as the rest: slow start grows by 8, not 10.
        let mut s = sender_with(TcpConfig { sack: false, rack: false, tail_loss_probe: false, ..config() });
        write(&mut s, 0, 40);
        s.on_ack(RTT, 0, &[], false, None);
        s.on_ack(RTT + US, 0, &[], false, None);
        assert_eq!((s.cwnd(), s.state()), (10, CaState::Disorder), "below the threshold");
        s.on_ack(RTT + 2 * US, 10 * SEG, &[], false, None);
        assert_eq!((s.cwnd(), s.state()), (18, CaState::Open));
        check(&s);
    }

    #[test]
    fn above_ssthresh_the_window_grows_by_about_one_segment_per_window() {
        let mut s = classic();
        write(&mut s, 0, 1000);
        // A loss halves the window (ssthresh = 5); recovery ends with cwnd = ssthresh, and the
        // same ACK grows it in congestion avoidance by the segments it newly delivers (Linux
        // `tcp_newly_delivered`): of the ten it acknowledges, three were SACKed before.
        s.on_ack(RTT, 0, &[sack(1, 4)], false, None);
        send(&mut s, RTT);
        s.on_ack(2 * RTT, 10 * SEG, &[], false, None);
        let w = s.cwnd();
        assert_eq!((w, s.ssthresh(), s.state()), (6, 5, CaState::Open), "5 + 7 delivered / 5");
        // One window's worth of ACKs, each for one segment: +1 segment in all.
        let mut una = 10;
        for i in 0..w as u64 {
            send(&mut s, (3 + i) * RTT);
            una += 1;
            s.on_ack((3 + i) * RTT + RTT / 2, una * SEG, &[], false, None);
        }
        assert_eq!(s.cwnd(), w + 1);
        check(&s);
    }

    #[test]
    fn after_an_idle_rto_the_window_restarts_from_the_initial_window() {
        let mut s = classic();
        write(&mut s, 0, 10);
        s.on_ack(RTT, 10 * SEG, &[], false, None);
        write(&mut s, RTT, 20);
        s.on_ack(2 * RTT, 30 * SEG, &[], false, None);
        assert_eq!(s.cwnd(), 40);
        // Idle for three RTOs: halved per RTO (RFC 2861), not below the initial window.
        let later = 2 * RTT + 3 * s.rto() + 1;
        assert_eq!(write(&mut s, later, 40).len(), 10);
        assert_eq!(s.cwnd(), 10);
    }
}

mod disorder {
    use super::*;

    #[test]
    fn a_sack_below_the_threshold_is_disorder_and_limited_transmit_sends_new_data() {
        let mut s = classic();
        write(&mut s, 0, 20);
        s.on_ack(RTT, 0, &[sack(1, 2)], false, None);
        assert_eq!(s.state(), CaState::Disorder);
        assert_eq!(send(&mut s, RTT), [(10, false)], "one new segment per SACKed one (RFC 3042)");
        assert_eq!((s.stats().retransmits, s.stats().fast_recoveries), (0, 0));
        check(&s);
    }

    #[test]
    fn without_limited_transmit_disorder_sends_nothing_new() {
        let mut s = sender_with(TcpConfig { rack: false, tail_loss_probe: false, limited_transmit: false, ..config() });
        write(&mut s, 0, 20);
        s.on_ack(RTT, 0, &[sack(1, 2)], false, None);
        assert_eq!(s.state(), CaState::Disorder);
        assert!(send(&mut s, RTT).is_empty());
    }

    #[test]
    fn the_hole_filled_returns_to_open() {
        let mut s = classic();
        write(&mut s, 0, 10);
        s.on_ack(RTT, 0, &[sack(1, 2)], false, None);
        s.on_ack(RTT + US, 2 * SEG, &[], false, None);
        assert_eq!(s.state(), CaState::Open);
        check(&s);
    }
}

mod recovery {
    use super::*;

    #[test]
    fn three_sacked_segments_above_a_hole_retransmit_it_at_once_and_halve_the_window() {
        let mut s = classic();
        write(&mut s, 0, 10);
        s.on_ack(RTT, 0, &[sack(1, 4)], false, None);
        assert_eq!(s.state(), CaState::Recovery);
        assert_eq!(s.ssthresh(), 5, "Reno halves");
        assert_eq!(send(&mut s, RTT)[0], (0, true), "fast retransmit first");
        assert_eq!((s.stats().fast_recoveries, s.stats().retransmits), (1, 1));
        check(&s);
    }

    #[test]
    fn recovery_ends_when_everything_sent_before_it_is_acknowledged() {
        let mut s = classic();
        write(&mut s, 0, 10);
        s.on_ack(RTT, 0, &[sack(1, 4)], false, None);
        send(&mut s, RTT);
        s.on_ack(2 * RTT, 4 * SEG, &[], false, None);
        assert_eq!(s.state(), CaState::Recovery, "a partial ACK: segments 4..10 are still out");
        s.on_ack(2 * RTT + US, 10 * SEG, &[], false, None);
        // The window is ssthresh, then grows on this ACK: the first flight filled the window,
        // which makes the sender window-limited (Linux tcp_write_xmit, tcp_is_cwnd_limited;
        // crates/conform/scripts/cwnd-limited-full-flight.pkt).
        assert_eq!((s.state(), s.cwnd()), (CaState::Open, s.ssthresh() + 1));
        check(&s);
    }

    #[test]
    fn without_sack_a_partial_ack_retransmits_the_next_hole_at_once() {
        let mut s = sender_with(TcpConfig { sack: false, ..config() });
        write(&mut s, 0, 10);
        // Segments 0 and 5 are lost; 1-4 and 6-9 arrive: eight duplicate ACKs.
        for i in 0..3 {
            s.on_ack(RTT + i * US, 0, &[], false, None);
        }
        assert_eq!(s.state(), CaState::Recovery);
        assert_eq!(send(&mut s, RTT + 3 * US)[0], (0, true));
        for i in 3..8 {
            s.on_ack(RTT + i * US, 0, &[], false, None);
        }
        // The retransmission of 0 fills the first hole: the ACK stops at 5 (RFC 6582).
        s.on_ack(2 * RTT, 5 * SEG, &[], false, None);
        assert_eq!(s.state(), CaState::Recovery);
        assert_eq!(send(&mut s, 2 * RTT)[0], (5, true), "NewReno: the next hole is lost too");
        check(&s);
    }
}

mod loss {
    use super::*;

    #[test]
    fn a_timeout_marks_everything_lost_and_restarts_from_one_segment() {
        let mut s = classic();
        write(&mut s, 0, 10);
        let rto = s.poll_timeout().expect("the retransmission timer");
        s.on_timer(rto);
        assert_eq!((s.state(), s.cwnd(), s.stats().timeouts), (CaState::Loss, 1, 1));
        assert_eq!(s.scoreboard().lost_out(), 10);
        assert_eq!(send(&mut s, rto), [(0, true)]);
        check(&s);
    }

    #[test]
    fn after_a_timeout_the_lost_segments_go_out_in_slow_start_until_all_are_acknowledged() {
        let mut s = classic();
        write(&mut s, 0, 10);
        let rto = s.poll_timeout().unwrap();
        s.on_timer(rto);
        send(&mut s, rto);
        s.on_ack(rto + RTT, SEG, &[], false, None);
        assert_eq!(send(&mut s, rto + RTT), [(1, true), (2, true)], "cwnd 2");
        s.on_ack(rto + 2 * RTT, 3 * SEG, &[], false, None);
        assert_eq!(send(&mut s, rto + 2 * RTT).len(), 4, "cwnd 4");
        s.on_ack(rto + 3 * RTT, 10 * SEG, &[], false, None);
        assert_eq!(s.state(), CaState::Open);
        check(&s);
    }

    #[test]
    fn each_timeout_doubles_the_rto_up_to_the_maximum() {
        let mut s = sender_with(TcpConfig { rack: false, tail_loss_probe: false, max_rto_ns: 1000 * MS, ..config() });
        write(&mut s, 0, 1);
        let base = s.rto();
        let mut now = 0;
        for k in 1..=4u32 {
            now = s.poll_timeout().unwrap();
            s.on_timer(now);
            send(&mut s, now);
            assert_eq!(s.rto(), (base << k).min(1000 * MS), "after {k} timeouts");
        }
        assert_eq!(s.rto(), 1000 * MS, "capped");
        assert_eq!(s.poll_timeout(), Some(now + 1000 * MS));
        assert_eq!(s.stats().recovery_fails, 0, "no recovery failed: there was none");
    }
}

mod rack {
    use super::*;

    #[test]
    fn a_hole_within_the_reordering_window_arms_the_reorder_timer_and_is_lost_when_it_fires() {
        let mut s = sender_with(config());
        write(&mut s, 0, 10);
        // Only the last segment arrives: too few SACKs for the duplicate-ACK rule; RACK waits
        // a reordering window (RTT/4) before declaring 0–8 lost.
        s.on_ack(RTT, 0, &[sack(9, 10)], false, None);
        assert_eq!((s.state(), s.scoreboard().lost_out()), (CaState::Disorder, 0));
        let t = s.poll_timeout().expect("the reorder timer");
        assert!(t > RTT && t <= RTT + RTT / 4 + 3 * MS, "{t}");
        s.on_timer(t);
        assert_eq!((s.state(), s.scoreboard().lost_out()), (CaState::Recovery, 9));
        assert_eq!(send(&mut s, t)[0], (0, true));
        check(&s);
    }

    #[test]
    fn a_sack_for_data_sent_later_marks_an_earlier_retransmission_lost_again() {
        let mut s = sender_with(config());
        write(&mut s, 0, 10);
        s.on_ack(RTT, 0, &[sack(1, 10)], false, None);
        s.write(RTT, 2 * SEG);
        assert_eq!(send(&mut s, RTT)[0], (0, true));
        s.on_ack(2 * RTT + RTT / 2, 0, &[sack(1, 11)], false, None);
        assert_eq!(send(&mut s, 2 * RTT + RTT / 2)[0], (0, true), "resent without waiting for a timeout");
        assert_eq!((s.stats().lost_retransmits, s.stats().timeouts), (1, 0));
        check(&s);
    }
}

mod tail_loss_probe {
    use super::*;

    #[test]
    fn a_silent_tail_is_probed_with_new_data_when_some_waits() {
        let mut s = sender_with(config());
        assert_eq!(write(&mut s, 0, 20).len(), 10);
        let t = s.poll_timeout().expect("a probe timer");
        assert!(t < s.rto(), "the probe comes before the RTO: {t}");
        s.on_timer(t);
        assert_eq!(send(&mut s, t), [(10, false)], "one new segment, whatever the window");
        assert_eq!(s.stats().loss_probes, 1);
        check(&s);
    }

    #[test]
    fn with_nothing_new_the_probe_resends_the_last_segment() {
        let mut s = sender_with(config());
        write(&mut s, 0, 10);
        let t = s.poll_timeout().unwrap();
        s.on_timer(t);
        assert_eq!(send(&mut s, t), [(9, true)]);
        assert_eq!((s.stats().loss_probes, s.stats().retransmits), (1, 1));
        // The probe's ACK shows the whole flight arrived but the first: RACK takes over.
        s.on_ack(t + RTT, 0, &[sack(1, 10)], false, None);
        assert_eq!(s.state(), CaState::Recovery);
        check(&s);
    }
}

/// ECN at the sender (Linux `tcp_enter_cwr`, `tcp_cwnd_reduction`, `tcp_dctcp.c`).
mod ecn {
    use super::*;
    use crate::tcp::Transmission;

    fn ecn_sender(cc: CongestionControl) -> Sender {
        sender_with(TcpConfig { ecn: true, congestion_control: cc, rack: false, tail_loss_probe: false, ..config() })
    }

    /// What goes out now, with the CWR flag: (segment number, CWR?).
    fn send_flags(s: &mut Sender, now: Nanos) -> Vec<(u64, bool)> {
        let mut out: Vec<Transmission> = Vec::new();
        s.transmit(now, SEG as u32, &mut out);
        out.iter().map(|t| (t.start / SEG, t.cwr)).collect()
    }

    /// Acknowledges segments up to `to`, one ACK per segment from `from`, echoing ECN or not;
    /// sends what each allows.
    fn ack_each(s: &mut Sender, now: Nanos, from: u64, to: u64, ece: bool) {
        for k in from..=to {
            s.on_ack_ecn(now, k * SEG, &[], false, None, ece);
            send(s, now);
        }
    }

    #[test]
    fn an_echo_reduces_the_window_once_per_window_and_the_next_new_data_carries_cwr() {
        let mut s = ecn_sender(CongestionControl::Newreno);
        write(&mut s, 0, 200);
        ack_each(&mut s, RTT, 1, 10, false);
        assert_eq!((s.cwnd(), s.snd_nxt() / SEG), (20, 30), "slow start: one segment per segment ACKed");
        // An echo: Reno halves ssthresh from the window now and enters CWR, until high_seq (30).
        s.on_ack_ecn(2 * RTT, 11 * SEG, &[], false, None, true);
        assert_eq!((s.state(), s.ssthresh(), s.stats().ecn_reductions), (CaState::Cwr, 10, 1));
        let out = send_flags(&mut s, 2 * RTT);
        assert_eq!(out.first().map(|o| o.1), Some(true), "the first new segment tells the receiver: {out:?}");
        assert!(out.iter().skip(1).all(|o| !o.1), "only the first");
        // More echoes within the window: no second reduction; PRR brings the window down.
        ack_each(&mut s, 2 * RTT, 12, 30, true);
        assert_eq!((s.state(), s.stats().ecn_reductions), (CaState::Cwr, 1), "held at high_seq itself");
        assert!(s.cwnd() <= 11, "PRR: {}", s.cwnd());
        // Data above high_seq acknowledged: the reduction ends at ssthresh, the state opens, and
        // the next echo starts a new reduction.
        s.on_ack_ecn(3 * RTT, 31 * SEG, &[], false, None, false);
        assert_eq!((s.state(), s.cwnd()), (CaState::Open, 10));
        s.on_ack_ecn(3 * RTT, 32 * SEG, &[], false, None, true);
        assert_eq!((s.state(), s.ssthresh(), s.stats().ecn_reductions), (CaState::Cwr, 5, 2));
        assert_eq!(s.stats().fast_recoveries + s.stats().retransmits, 0, "nothing was lost");
    }

    #[test]
    fn without_ecn_negotiated_an_echo_is_ignored() {
        let mut s = sender_with(TcpConfig { rack: false, tail_loss_probe: false, ..config() });
        write(&mut s, 0, 40);
        ack_each(&mut s, RTT, 1, 10, true);
        assert_eq!((s.state(), s.cwnd(), s.stats().ecn_reductions, s.stats().delivered_ce), (CaState::Open, 20, 0, 0));
    }

    #[test]
    fn dctcp_updates_alpha_once_per_window_of_data_and_cuts_by_half_of_it() {
        let mut s = ecn_sender(CongestionControl::Dctcp);
        assert_eq!(s.alpha(), Some(1024), "a new connection assumes every segment is marked");
        write(&mut s, 0, 400);
        // The first ACK ends the empty window before any data: α decays once (1024 − 64), and
        // the next window ends at snd_nxt (segment 10).
        s.on_ack_ecn(RTT, SEG, &[], false, None, false);
        assert_eq!(s.alpha(), Some(960));
        send(&mut s, RTT);
        ack_each(&mut s, RTT, 2, 9, true);
        assert_eq!(s.alpha(), Some(960), "no update within the window");
        // snd_una reaches 10: 9 segments delivered since the first ACK, the last 8 with an echo
        // (their ACKs carried ECE): α = 960 − 60 + (8 << 6) / 9 = 956.
        s.on_ack_ecn(RTT, 10 * SEG, &[], false, None, false);
        assert_eq!(s.alpha(), Some(956));
        // The echoes put the sender in CWR: ssthresh = cwnd − cwnd·α/2048 at the first echo,
        // with α = 960 then and the window 11: 11 − (11·960 >> 11) = 6.
        assert_eq!((s.ssthresh(), s.stats().ecn_reductions), (6, 1));
        assert_eq!(s.stats().delivered_ce, 8);
    }

    #[test]
    fn a_loss_halves_a_dctcp_window_whatever_alpha_and_leaves_alpha_as_it_was() {
        let mut s = ecn_sender(CongestionControl::Dctcp);
        write(&mut s, 0, 400);
        // Three unmarked windows (slow start: 10, 20, 40 segments) bring α to 1024·(15/16)³.
        ack_each(&mut s, RTT, 1, 61, false);
        let (alpha, cwnd) = (s.alpha().unwrap(), s.cwnd());
        assert_eq!(alpha, 844);
        // Segment 61 is lost: three SACKs above it start a recovery, which halves the window
        // (Linux `dctcp_react_to_loss`), not α/2 of it (that would leave 59 %).
        for k in 62..65 {
            s.on_ack_ecn(2 * RTT, 61 * SEG, &[sack(62, k + 1)], false, None, false);
        }
        assert_eq!((s.state(), s.ssthresh()), (CaState::Recovery, cwnd / 2));
        assert_eq!(s.alpha(), Some(alpha), "α is about marks, not losses");
    }

    #[test]
    fn alpha_is_kept_across_an_idle_period_while_the_window_restarts() {
        let mut s = ecn_sender(CongestionControl::Dctcp);
        write(&mut s, 0, 100);
        ack_each(&mut s, RTT, 1, 100, false);
        let alpha = s.alpha().unwrap();
        assert!(s.cwnd() > 10);
        // Linux's DCTCP does nothing on idle: α stays; the window restarts as after any idle.
        let later = 10 * 1000 * MS;
        write(&mut s, later, 50);
        assert_eq!((s.alpha(), s.cwnd()), (Some(alpha), 10));
    }
}

mod small_queues {
    use super::*;

    #[test]
    fn a_socket_keeps_at_most_its_limit_in_the_host_queue_and_sends_on_when_a_packet_leaves() {
        // Linux `tcp_small_queue_check`: with a 100 ms RTT, 10 segments of 1000 bytes in
        // slow start pace at 2 × 10 kB / 0.1 s = 200 kB/s, 195 bytes per 2^-10 s: the floor of
        // two segments' truesize (2 × 1896) holds. The check comes before each segment and
        // waits only above the limit: three go, the fourth waits.
        let mut s = sender_with(config());
        s.seed_rtt(100 * MS);
        s.use_small_queues();
        s.write(0, 10 * SEG);
        assert_eq!(send(&mut s, 0), [(0, false), (1, false), (2, false)], "the host queue is full");
        assert_eq!(send(&mut s, 1), [], "throttled");
        // One leaves the NIC: the socket is told, and sends one more.
        assert!(s.on_host_sent(SEG as u32));
        assert_eq!(send(&mut s, 2), [(3, false)]);
        assert_eq!(send(&mut s, 3), [], "throttled again");
        check(&s);
        // Without small queues the whole window goes at once.
        let mut s = sender_with(config());
        s.seed_rtt(100 * MS);
        assert_eq!(write(&mut s, 0, 10).len(), 10);
    }
}
