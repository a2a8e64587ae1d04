//! ECN (RFC 3168) at the TCP ends: the bits a segment carries, and how a receiver echoes the
//! Congestion Experienced marks it gets — classic ECN's ECE-until-CWR, or DCTCP's exact echo
//! of every change of CE state (RFC 8257 §3.2). After Linux's `tcp_ecn_send`,
//! `tcp_ecn_accept_cwr`, `__tcp_ecn_check_ce` and `dctcp_ece_ack_update`.

pub use crate::net::wire::HeaderBits;

/// The IP header's ECN field as a receiver reads it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Codepoint {
    /// Not ECN-capable.
    NotEct,
    /// ECN-capable, not marked.
    Ect,
    /// Congestion Experienced.
    Ce,
}

/// How a receiver reports marks.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum EchoMode {
    /// RFC 3168: ECE on every segment from the first CE mark until a segment with CWR arrives.
    Classic,
    /// RFC 8257 §3.2: ECE exactly on the ACKs of CE-marked data, an ACK at once whenever the CE
    /// state changes.
    Dctcp,
}

/// What the echo asks of the receiver after a data segment.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum EchoAction {
    /// Nothing.
    None,
    /// Linux `tcp_enter_quickack_mode(sk, 2)`: this segment and the next are ACKed at once.
    QuickAck,
    /// The CE state changed (DCTCP): ACK at once; if an ACK was being delayed, first send one
    /// for `ack` (what had arrived before this segment) with the old state's ECE.
    StateChanged {
        /// The delayed ACK to send first, if one was pending.
        prior: Option<(u64, bool)>,
    },
}

/// A receiver's ECN state (its part of Linux's `ecn_flags`, and DCTCP's `ce_state`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Echo {
    mode: EchoMode,
    /// ECE on every segment sent (`TCP_ECN_DEMAND_CWR`).
    demand_cwr: bool,
    /// An ECN-capable segment has arrived (`TCP_ECN_SEEN`).
    seen: bool,
    /// DCTCP: the last ECN-capable segment was marked (`ce_state`).
    ce_state: bool,
    /// DCTCP: `rcv_nxt` after the last segment whose CE state was read (`prior_rcv_nxt`).
    prior_rcv_nxt: u64,
    /// DCTCP's ACK of what arrived before a change of CE state, with the old state's ECE, to
    /// send before anything else (`dctcp_ece_ack_update`'s `__tcp_send_ack`).
    pub prior_ack: Option<(u64, bool)>,
}

impl Echo {
    /// The echo of a new connection.
    pub fn new(mode: EchoMode) -> Self {
        Echo { mode, demand_cwr: false, seen: false, ce_state: false, prior_rcv_nxt: 0, prior_ack: None }
    }

    /// Whether segments sent now carry ECE.
    pub fn ece(&self) -> bool {
        self.demand_cwr
    }

    /// Linux `tcp_ecn_accept_cwr`, for every data segment: CWR ends the echo (and, as the
    /// sender's window may be down to one segment, is ACKed at once: returns true).
    pub fn accept_cwr(&mut self, cwr: bool) -> bool {
        if cwr {
            self.demand_cwr = false;
        }
        cwr
    }

    /// Linux `__tcp_ecn_check_ce`, for data that is new (in order or not): the codepoint `cp`
    /// it arrived with; `rcv_nxt` once it is taken; whether an ACK was being delayed before it.
    pub fn check_ce(&mut self, cp: Codepoint, rcv_nxt: u64, ack_delayed: bool) -> EchoAction {
        match (cp, self.mode) {
            // A segment that is not ECN-capable after ones that were is probably a
            // retransmission: ACK it at once.
            (Codepoint::NotEct, _) => {
                if self.seen {
                    EchoAction::QuickAck
                } else {
                    EchoAction::None
                }
            }
            (Codepoint::Ce, EchoMode::Classic) => {
                self.seen = true;
                if self.demand_cwr {
                    EchoAction::None
                } else {
                    self.demand_cwr = true;
                    EchoAction::QuickAck
                }
            }
            (Codepoint::Ect, EchoMode::Classic) => {
                self.seen = true;
                EchoAction::None
            }
            (_, EchoMode::Dctcp) => {
                self.seen = true;
                self.dctcp_update(cp == Codepoint::Ce, rcv_nxt, ack_delayed)
            }
        }
    }

    /// Linux `dctcp_ece_ack_update`.
    fn dctcp_update(&mut self, ce: bool, rcv_nxt: u64, ack_delayed: bool) -> EchoAction {
        let action = if self.ce_state != ce {
            EchoAction::StateChanged { prior: ack_delayed.then_some((self.prior_rcv_nxt, self.ce_state)) }
        } else {
            EchoAction::None
        };
        self.prior_rcv_nxt = rcv_nxt;
        self.ce_state = ce;
        self.demand_cwr = ce;
        action
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn bits_pack_in_one_byte_and_a_mark_turns_ect_into_ce() {
        let b = HeaderBits::new(true, false, true);
        assert!(b.ect() && !b.ece() && b.cwr() && !b.ce());
        assert_eq!(b.codepoint(), Codepoint::Ect);
        assert_eq!(b.marked().codepoint(), Codepoint::Ce);
        assert_eq!(HeaderBits::new(false, true, false).codepoint(), Codepoint::NotEct);
        assert_eq!(std::mem::size_of::<HeaderBits>(), 1);
    }

    #[test]
    fn classic_echo_holds_ece_from_the_first_mark_until_cwr() {
        let mut e = Echo::new(EchoMode::Classic);
        assert_eq!(e.check_ce(Codepoint::Ect, 1000, false), EchoAction::None);
        assert!(!e.ece());
        assert_eq!(e.check_ce(Codepoint::Ce, 2000, true), EchoAction::QuickAck, "the first mark: ACK at once");
        assert!(e.ece());
        assert_eq!(e.check_ce(Codepoint::Ce, 3000, false), EchoAction::None, "already echoing");
        assert_eq!(e.check_ce(Codepoint::Ect, 4000, false), EchoAction::None);
        assert!(e.ece(), "an unmarked segment does not end the echo; only CWR does");
        assert!(e.accept_cwr(true));
        assert!(!e.ece());
        assert_eq!(e.check_ce(Codepoint::NotEct, 5000, false), EchoAction::QuickAck, "likely a retransmission");
    }

    #[test]
    fn dctcp_echo_follows_the_ce_state_and_flushes_a_delayed_ack_with_the_old_state() {
        let mut e = Echo::new(EchoMode::Dctcp);
        assert_eq!(e.check_ce(Codepoint::Ect, 1000, false), EchoAction::None, "state 0 stays 0");
        // A mark while the ACK of [0, 1000) waits: that ACK goes first, without ECE.
        assert_eq!(e.check_ce(Codepoint::Ce, 2000, true), EchoAction::StateChanged { prior: Some((1000, false)) });
        assert!(e.ece());
        assert_eq!(e.check_ce(Codepoint::Ce, 3000, true), EchoAction::None, "state 1 stays 1: ACKs may be delayed");
        assert!(e.ece());
        // Back to unmarked with nothing delayed: ACK at once, no flush.
        assert_eq!(e.check_ce(Codepoint::Ect, 4000, false), EchoAction::StateChanged { prior: None });
        assert!(!e.ece());
        // CWR does not matter to DCTCP's echo: the state sets ECE again on the next mark.
        e.accept_cwr(true);
        assert_eq!(e.check_ce(Codepoint::Ce, 5000, true), EchoAction::StateChanged { prior: Some((4000, false)) });
        assert!(e.ece());
        // A retransmission (not ECN-capable under classic ECN) leaves DCTCP's state alone.
        assert_eq!(e.check_ce(Codepoint::NotEct, 6000, false), EchoAction::QuickAck);
        assert!(e.ece());
    }
}
