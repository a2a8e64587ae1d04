use super::*;
use proptest::prelude::*;

const P: RcParams = RcParams { mtu: 4096, rate_limit_bps: None, ack_timeout_ns: 1_000_000 };

fn data(o: Option<Output>) -> (u64, u64, bool, bool) {
    match o {
        Some(Output::Data { start, end, ack_req, retransmit }) => (start, end, ack_req, retransmit),
        other => panic!("expected a data packet, got {other:?}"),
    }
}

/// Every packet `qp` may send at `now`, telling it each left the NIC at once.
fn drain(qp: &mut QueuePair, now: Nanos) -> Vec<Output> {
    let mut out = Vec::new();
    while let Some(o) = qp.poll(now) {
        if matches!(o, Output::Data { .. }) {
            qp.handle(now, Input::LeftNic);
        }
        out.push(o);
    }
    out
}

#[test]
fn a_message_is_cut_at_the_path_mtu_and_asks_for_an_ack_with_its_last_packet() {
    let mut qp = QueuePair::new(P);
    qp.handle(0, Input::Post { bytes: 10_000 });
    assert_eq!(data(qp.poll(0)), (0, 4096, false, false));
    assert_eq!(data(qp.poll(0)), (4096, 8192, false, false));
    assert_eq!(qp.poll(0), None, "the NIC holds two packets of a queue pair at most");
    qp.handle(0, Input::LeftNic);
    assert_eq!(data(qp.poll(0)), (8192, 10_000, true, false));
    qp.handle(0, Input::LeftNic);
    assert_eq!(qp.poll(0), None);
}

#[test]
fn a_packet_never_carries_bytes_of_two_messages() {
    let mut qp = QueuePair::new(P);
    qp.handle(0, Input::Post { bytes: 100 });
    qp.handle(0, Input::Post { bytes: 5000 });
    let sent: Vec<_> = drain(&mut qp, 0).into_iter().map(|o| data(Some(o))).collect();
    assert_eq!(sent, vec![(0, 100, true, false), (100, 4196, false, false), (4196, 5100, true, false)]);
}

#[test]
fn a_long_message_asks_for_an_ack_every_sixteen_packets() {
    let mut qp = QueuePair::new(P);
    qp.handle(0, Input::Post { bytes: 40 * 4096 });
    let asks: Vec<u64> =
        drain(&mut qp, 0).into_iter().map(|o| data(Some(o))).filter(|d| d.2).map(|d| d.1 / 4096).collect();
    assert_eq!(asks, vec![16, 32, 40]);
}

#[test]
fn the_responder_acknowledges_what_is_asked_and_naks_a_gap_once() {
    let mut qp = QueuePair::new(P);
    qp.handle(0, Input::Data { start: 0, end: 4096, ack_req: false });
    assert_eq!(qp.poll(0), None, "no ACK unless asked");
    qp.handle(0, Input::Data { start: 4096, end: 8192, ack_req: true });
    assert_eq!(qp.poll(0), Some(Output::Ack { upto: 8192, nak: false }));
    qp.handle(0, Input::Data { start: 12_288, end: 16_384, ack_req: false });
    assert_eq!(qp.poll(0), Some(Output::Ack { upto: 8192, nak: true }));
    qp.handle(0, Input::Data { start: 16_384, end: 20_480, ack_req: true });
    assert_eq!(qp.poll(0), None, "one NAK per gap; an out-of-sequence packet is dropped, asked or not");
    assert_eq!(qp.received(), 8192, "out-of-sequence packets are dropped");
    qp.handle(0, Input::Data { start: 8192, end: 12_288, ack_req: false });
    assert_eq!(qp.received(), 12_288);
    qp.handle(0, Input::Data { start: 16_384, end: 20_480, ack_req: false });
    assert_eq!(qp.poll(0), Some(Output::Ack { upto: 12_288, nak: true }), "a new gap, a new NAK");
    assert_eq!((qp.counters().acks, qp.counters().naks), (1, 2));
}

#[test]
fn a_nak_sends_again_from_the_psn_it_names() {
    let mut qp = QueuePair::new(P);
    qp.handle(0, Input::Post { bytes: 5 * 4096 });
    assert_eq!(drain(&mut qp, 0).len(), 5);
    qp.handle(10, Input::Ack { upto: 8192, nak: true });
    let again: Vec<_> = drain(&mut qp, 10).into_iter().map(|o| data(Some(o))).collect();
    assert_eq!(again, vec![(8192, 12_288, false, true), (12_288, 16_384, false, true), (16_384, 20_480, true, true)]);
    let c = qp.counters();
    assert_eq!((c.data_packets, c.retransmitted_packets, c.go_back_n, c.timeouts), (8, 3, 1, 0));
    assert_eq!(qp.posted_and_acknowledged(), (20_480, 8192));
}

#[test]
fn without_an_ack_the_timeout_goes_back_to_the_oldest_unacknowledged_packet() {
    let mut qp = QueuePair::new(P);
    qp.handle(0, Input::Post { bytes: 3 * 4096 });
    drain(&mut qp, 0);
    qp.handle(500_000, Input::Ack { upto: 4096, nak: false });
    assert_eq!(qp.poll_timeout(), Some(1_500_000), "the timeout runs from the last progress");
    qp.handle(1_499_999, Input::Timer);
    assert_eq!(qp.poll(1_499_999), None, "not yet");
    qp.handle(1_500_000, Input::Timer);
    assert_eq!(data(qp.poll(1_500_000)), (4096, 8192, false, true));
    assert_eq!(qp.counters().timeouts, 1);
    qp.handle(1_600_000, Input::Ack { upto: 3 * 4096, nak: false });
    assert_eq!(qp.poll_timeout(), None, "everything acknowledged: no timer");
}

#[test]
fn a_rate_limit_spaces_the_packets_by_their_payload_at_the_rate() {
    let mut qp = QueuePair::new(RcParams { rate_limit_bps: Some(8_192_000_000), ..P });
    qp.handle(0, Input::Post { bytes: 3 * 4096 });
    assert_eq!(data(qp.poll(0)).0, 0);
    qp.handle(0, Input::LeftNic);
    assert_eq!(qp.poll(3_999), None);
    assert_eq!(qp.poll_timeout(), Some(4_000), "4096 bytes at 8.192 Gb/s: 4 µs");
    assert_eq!(data(qp.poll(4_000)).0, 4096);
}

/// A link that loses the packets `lost` names (by their index on it) and delivers the rest in
/// order; both ends' packets cross it, `delay` apart.
fn deliver_over_lossy_link(messages: &[u64], lost: &[usize]) -> (QueuePair, QueuePair, u64) {
    let (mut a, mut b) = (QueuePair::new(P), QueuePair::new(P));
    for &m in messages {
        a.handle(0, Input::Post { bytes: m });
    }
    let (mut now, mut index) = (0, 0usize);
    for _ in 0..100_000 {
        let mut progressed = false;
        while let Some(o) = a.poll(now) {
            progressed = true;
            if let Output::Data { start, end, ack_req, .. } = o {
                a.handle(now, Input::LeftNic);
                if !lost.contains(&index) {
                    b.handle(now, Input::Data { start, end, ack_req });
                }
                index += 1;
            }
            while let Some(Output::Ack { upto, nak }) = b.poll(now) {
                a.handle(now, Input::Ack { upto, nak });
            }
        }
        if !progressed {
            match a.poll_timeout() {
                Some(t) => {
                    now = now.max(t);
                    a.handle(now, Input::Timer);
                }
                None => break,
            }
        }
    }
    (a, b, now)
}

proptest! {
    /// Whatever packets a link loses, every message arrives whole and in order, the requester
    /// sees it all acknowledged, and every retransmission follows a NAK or a timeout.
    #[test]
    fn every_message_arrives_whatever_is_lost(
        messages in proptest::collection::vec(1u64..50_000, 1..8),
        lost in proptest::collection::vec(0usize..60, 0..10),
    ) {
        let total: u64 = messages.iter().sum();
        let (a, b, _) = deliver_over_lossy_link(&messages, &lost);
        prop_assert_eq!(b.received(), total);
        prop_assert_eq!(a.posted_and_acknowledged(), (total, total));
        let c = a.counters();
        prop_assert!(c.retransmitted_packets == 0 || c.go_back_n + c.timeouts > 0);
        prop_assert_eq!(a.poll_timeout(), None);
    }
}

#[test]
fn without_loss_nothing_is_sent_twice() {
    let (a, b, now) = deliver_over_lossy_link(&[100_000, 3, 4096], &[]);
    assert_eq!(b.received(), 104_099);
    let c = a.counters();
    assert_eq!((c.retransmitted_packets, c.go_back_n, c.timeouts, now), (0, 0, 0, 0));
    assert_eq!(c.data_packets, 25 + 1 + 1);
}
