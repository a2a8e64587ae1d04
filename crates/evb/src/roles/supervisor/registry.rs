//! Start-up, without IO: which roles have registered, where the readout units listen, and which
//! collectors have connected to every readout unit.

use crate::role::RoleId;
use daqnet_core::{Layout, NodeId};
use std::fmt;

/// Why a hello is refused.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Refusal {
    /// The role is not part of this scenario.
    NotInScenario(RoleId),
    /// The role's slot is already taken: a second process claims it.
    AlreadyConnected(RoleId),
    /// Registration is over.
    RunStarted(RoleId),
}

impl fmt::Display for Refusal {
    fn fmt(&self, f: &mut fmt::Formatter) -> fmt::Result {
        match self {
            Refusal::NotInScenario(r) => write!(f, "{r} is not in this scenario"),
            Refusal::AlreadyConnected(r) => write!(f, "{r} is already connected"),
            Refusal::RunStarted(r) => write!(f, "{r} came after the run started"),
        }
    }
}

/// Who has registered.
#[derive(Debug, Clone)]
pub struct Registry {
    layout: Layout,
    readout_addrs: Vec<Option<String>>,
    collectors: Vec<bool>,
    connected: Vec<bool>,
    peers_sent: bool,
}

impl Registry {
    /// Nobody yet.
    pub fn new(layout: Layout) -> Self {
        Registry {
            layout,
            readout_addrs: vec![None; layout.readout_units() as usize],
            collectors: vec![false; layout.nodes() as usize],
            connected: vec![false; layout.nodes() as usize],
            peers_sent: false,
        }
    }

    /// `role` says hello, listening on `listen`.
    pub fn on_hello(&mut self, role: RoleId, listen: &str) -> Result<(), Refusal> {
        let slot_taken = match role {
            RoleId::Readout(r) if self.layout.has_readout(r) => self.readout_addrs[r.index()].is_some(),
            RoleId::Collector(n) if self.layout.has_node(n) => self.collectors[n.index()],
            _ => return Err(Refusal::NotInScenario(role)),
        };
        if slot_taken {
            return Err(Refusal::AlreadyConnected(role));
        }
        match role {
            RoleId::Readout(r) => self.readout_addrs[r.index()] = Some(listen.to_string()),
            RoleId::Collector(n) => self.collectors[n.index()] = true,
            RoleId::Supervisor | RoleId::Sfc | RoleId::Worker(_) => unreachable!("refused above"),
        }
        Ok(())
    }

    /// Once every role has registered (and only once): the readout units' addresses, which
    /// every collector needs.
    pub fn take_peers(&mut self) -> Option<Vec<String>> {
        let all = self.readout_addrs.iter().all(Option::is_some) && self.collectors.iter().all(|&c| c);
        if !all || self.peers_sent {
            return None;
        }
        self.peers_sent = true;
        Some(self.readout_addrs.iter().map(|a| a.clone().unwrap_or_default()).collect())
    }

    /// Collector `node` reached every readout unit.
    pub fn on_connected(&mut self, node: NodeId) {
        if self.layout.has_node(node) {
            self.connected[node.index()] = true;
        }
    }

    /// Whether the run can start.
    pub fn complete(&self) -> bool {
        self.connected.iter().all(|&c| c)
    }

    /// Who is still missing, for the start-up timeout's message.
    pub fn missing(&self) -> Vec<String> {
        let mut m: Vec<String> = self
            .layout
            .readouts()
            .filter(|r| self.readout_addrs[r.index()].is_none())
            .map(|r| RoleId::Readout(r).to_string())
            .collect();
        m.extend(
            self.layout.all_nodes().filter(|n| !self.collectors[n.index()]).map(|n| RoleId::Collector(n).to_string()),
        );
        if m.is_empty() {
            let not_connected = self.layout.all_nodes().filter(|n| !self.connected[n.index()]);
            m.extend(not_connected.map(|n| format!("collector {n} (not yet connected to every readout unit)")));
        }
        m
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use daqnet_core::ReadoutId;

    #[test]
    fn the_run_starts_once_everyone_registered_and_connected() {
        let mut r = Registry::new(Layout::new(2, 1, 1));
        r.on_hello(RoleId::Readout(ReadoutId(1)), "a:1").unwrap();
        r.on_hello(RoleId::Collector(NodeId(0)), "").unwrap();
        assert_eq!(r.take_peers(), None, "readout 0 missing");
        assert_eq!(r.missing(), vec!["readout 0"]);
        r.on_hello(RoleId::Readout(ReadoutId(0)), "a:0").unwrap();
        assert_eq!(r.take_peers(), Some(vec!["a:0".to_string(), "a:1".to_string()]));
        assert_eq!(r.take_peers(), None, "sent once");
        assert!(!r.complete());
        assert_eq!(r.missing(), vec!["collector 0 (not yet connected to every readout unit)"]);
        r.on_connected(NodeId(0));
        assert!(r.complete());
    }

    #[test]
    fn a_second_claim_to_a_slot_and_strangers_are_refused() {
        let mut r = Registry::new(Layout::new(2, 1, 1));
        r.on_hello(RoleId::Readout(ReadoutId(0)), "a:0").unwrap();
        assert_eq!(
            r.on_hello(RoleId::Readout(ReadoutId(0)), "evil:0"),
            Err(Refusal::AlreadyConnected(RoleId::Readout(ReadoutId(0))))
        );
        assert_eq!(
            r.on_hello(RoleId::Readout(ReadoutId(5)), ""),
            Err(Refusal::NotInScenario(RoleId::Readout(ReadoutId(5))))
        );
        assert!(r.on_hello(RoleId::Supervisor, "").is_err());
    }
}
