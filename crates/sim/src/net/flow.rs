//! Link-level flow control (`[network.flow_control]`): a port's transmitter that pause frames
//! can stop ([`Gate`]), and a receiver's count of what each link brought in ([`Ingress`]).
//!
//! Under flow control a port no longer knows each frame's departure when it admits it: a
//! pause can stop it. Its frames wait in the gate, one queue per priority, and the transmitter
//! takes them one at a time: pause frames first (they wait only for the frame being sent), then
//! the highest priority that is not paused (802.1Qbb's strict priority; 802.3x puts every
//! frame on one priority and pauses it).

use std::collections::VecDeque;

/// Priorities of 802.1Q.
pub const PRIORITIES: usize = 8;

/// Whose memory a frame occupies while a switch holds it: the flow-controlled port it came in
/// through (`port`, or [`Held::NONE`]), its priority and its bytes. Released when the frame's
/// last bit leaves the switch.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Held {
    /// The port it arrived through, counted at this receiver.
    pub port: u32,
    /// Its priority.
    pub class: u8,
    /// Its frame bytes.
    pub bytes: u32,
}

impl Held {
    /// A frame no receiver counts (sent by a host).
    pub const NONE: Held = Held { port: u32::MAX, class: 0, bytes: 0 };

    /// Whether a receiver counts it.
    pub fn counted(self) -> bool {
        self.port != u32::MAX
    }
}

/// A pause frame waiting for its port's transmitter: it pauses `class` of port `to` (the port
/// at the other end of the link) for `quanta` × 512 bit times; 0 resumes it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct PauseFrame {
    /// The port it pauses.
    pub to: u32,
    /// The priority it pauses.
    pub class: u8,
    /// Pause length in quanta of 512 bit times.
    pub quanta: u16,
}

/// What a free transmitter sends next.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Next<P> {
    /// A pause frame.
    Pause(PauseFrame),
    /// A data frame and whose memory it holds.
    Frame(P, Held),
    /// Nothing may go before this time (ps): every waiting priority is paused.
    WaitUntil(u64),
    /// Nothing waits.
    Idle,
}

/// What a transmitter is sending.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Sending<P> {
    /// Nothing.
    Nothing,
    /// A pause frame.
    Pause(PauseFrame),
    /// A data frame, holding this memory.
    Frame(P, Held),
}

/// A port's transmitter under flow control, with its frames waiting by priority.
#[derive(Debug, Clone)]
pub struct Gate<P> {
    queues: [VecDeque<(P, Held)>; PRIORITIES],
    pauses: VecDeque<PauseFrame>,
    /// What it is sending now.
    pub sending: Sending<P>,
    paused_until_ps: [u64; PRIORITIES],
    /// Start of the stretch of pause not yet added to `paused_ps`, per priority.
    paused_since_ps: [u64; PRIORITIES],
    /// A resume event is due at this time (ns; `u64::MAX`: none).
    pub wake_ns: u64,
    /// Pause frames it has sent.
    pub pause_sent: u64,
    /// Pause frames it has received (each stopping or resuming one of its priorities).
    pub pause_received: u64,
    paused_ps: u64,
    /// Credit-based links: the bytes the receiver has room for, per priority (virtual lane);
    /// `None`: the port sends whatever its pauses allow.
    credits: Option<[u64; PRIORITIES]>,
}

impl<P> Default for Gate<P> {
    fn default() -> Self {
        Gate {
            queues: Default::default(),
            pauses: VecDeque::new(),
            sending: Sending::Nothing,
            paused_until_ps: [0; PRIORITIES],
            paused_since_ps: [0; PRIORITIES],
            wake_ns: u64::MAX,
            pause_sent: 0,
            pause_received: 0,
            paused_ps: 0,
            credits: None,
        }
    }
}

impl<P> Gate<P> {
    /// Queues a data frame of priority `held.class`.
    pub fn push(&mut self, p: P, held: Held) {
        self.queues[held.class as usize].push_back((p, held));
    }

    /// Queues a pause frame, to go before any data frame.
    pub fn push_pause(&mut self, frame: PauseFrame) {
        self.pauses.push_back(frame);
    }

    /// Data frames waiting.
    pub fn waiting(&self) -> usize {
        self.queues.iter().map(VecDeque::len).sum()
    }

    /// Whether it is sending.
    pub fn busy(&self) -> bool {
        !matches!(self.sending, Sending::Nothing)
    }

    /// Sends only against credits: the receiver has room for `bytes` per priority.
    pub fn use_credits(&mut self, bytes: u64) {
        self.credits = Some([bytes; PRIORITIES]);
    }

    /// The receiver has passed on `bytes` of priority `class`: they are credits again.
    pub fn credit(&mut self, class: u8, bytes: u32) {
        let credits = self.credits.as_mut().expect("a credit-based port");
        credits[class as usize] += bytes as u64;
    }

    /// Credits left of priority `class`, if the port sends against credits.
    pub fn credits(&self, class: u8) -> Option<u64> {
        self.credits.map(|c| c[class as usize])
    }

    /// What the free transmitter sends at `now_ps`, taken from its queue: a priority whose
    /// head frame has no credits waits for them (the caller retries when they come).
    pub fn next(&mut self, now_ps: u64) -> Next<P> {
        if let Some(f) = self.pauses.pop_front() {
            return Next::Pause(f);
        }
        let mut wait = u64::MAX;
        for c in (0..PRIORITIES).rev() {
            let Some(&(_, head)) = self.queues[c].front() else { continue };
            if self.paused_until_ps[c] > now_ps {
                wait = wait.min(self.paused_until_ps[c]);
                continue;
            }
            if let Some(credits) = self.credits.as_mut() {
                if (head.bytes as u64) > credits[c] {
                    continue;
                }
                credits[c] -= head.bytes as u64;
            }
            let (p, held) = self.queues[c].pop_front().expect("not empty");
            return Next::Frame(p, held);
        }
        if wait == u64::MAX {
            Next::Idle
        } else {
            Next::WaitUntil(wait)
        }
    }

    /// A pause frame reaches it at `now_ps`: `class` is paused until `until_ps` (at or before
    /// `now_ps`: resumed).
    pub fn pause(&mut self, class: u8, now_ps: u64, until_ps: u64) {
        let c = class as usize;
        self.paused_ps += self.paused_until_ps[c].min(now_ps).saturating_sub(self.paused_since_ps[c]);
        self.paused_since_ps[c] = now_ps;
        self.paused_until_ps[c] = until_ps.max(now_ps);
        self.pause_received += 1;
    }

    /// Time it has spent paused by `now_ps`, summed over its priorities, in ps.
    pub fn paused_ps(&self, now_ps: u64) -> u64 {
        let open: u64 =
            (0..PRIORITIES).map(|c| self.paused_until_ps[c].min(now_ps).saturating_sub(self.paused_since_ps[c])).sum();
        self.paused_ps + open
    }
}

/// A receiver's count of the frames one flow-controlled port brought in and it still holds,
/// per priority, and whether it has paused that priority.
#[derive(Debug, Clone, Default)]
pub struct Ingress {
    /// Bytes held, per priority.
    pub held: [u64; PRIORITIES],
    /// Whether the priority is paused (XOFF sent, no XON since).
    pub paused: [bool; PRIORITIES],
    /// When the pause of each priority is next refreshed (ns).
    pub refresh_ns: [u64; PRIORITIES],
}

#[cfg(test)]
mod tests {
    use super::*;

    fn frame(class: u8) -> Held {
        Held { port: 0, class, bytes: 100 }
    }

    #[test]
    fn pause_frames_go_first_then_the_highest_priority_not_paused() {
        let mut g: Gate<u32> = Gate::default();
        g.push(1, frame(3));
        g.push(2, frame(6));
        g.push_pause(PauseFrame { to: 9, class: 3, quanta: 10 });
        assert_eq!(g.next(0), Next::Pause(PauseFrame { to: 9, class: 3, quanta: 10 }));
        assert_eq!(g.next(0), Next::Frame(2, frame(6)));
        g.pause(3, 0, 5000);
        assert_eq!(g.next(4999), Next::WaitUntil(5000));
        assert_eq!(g.next(5000), Next::Frame(1, frame(3)));
        assert_eq!(g.next(5000), Next::Idle);
    }

    #[test]
    fn a_credit_port_sends_only_what_the_receiver_has_room_for() {
        let mut g: Gate<u32> = Gate::default();
        g.use_credits(250);
        g.push(1, frame(0));
        g.push(2, frame(0));
        g.push(3, frame(0));
        assert_eq!(g.next(0), Next::Frame(1, frame(0)));
        assert_eq!(g.next(0), Next::Frame(2, frame(0)));
        assert_eq!(g.credits(0), Some(50));
        assert_eq!(g.next(0), Next::Idle, "50 bytes of credit: the third (100) waits");
        g.credit(0, 100);
        assert_eq!(g.next(0), Next::Frame(3, frame(0)));
        assert_eq!(g.credits(0), Some(50));
    }

    #[test]
    fn paused_time_counts_overlapping_pauses_once_and_stops_at_a_resume() {
        let mut g: Gate<u32> = Gate::default();
        g.pause(3, 1000, 5000);
        // Refreshed before it expires: 1000..9000 in all so far.
        g.pause(3, 4000, 9000);
        assert_eq!(g.paused_ps(20_000), 8000);
        // Resumed early at 6000: 5000 of pause.
        g.pause(3, 6000, 0);
        assert_eq!(g.paused_ps(20_000), 5000);
        // Another priority's pause adds its own time.
        g.pause(1, 10_000, 11_000);
        assert_eq!(g.paused_ps(20_000), 6000);
        assert_eq!(g.pause_received, 4);
    }
}
