//! The simulated network: Ethernet framing, output ports with buffer schemes, and the live
//! ports of a scenario's network plan (`daqnet_fabric::network`).

pub mod flow;
pub mod network;
pub mod port;
pub mod wire;

pub use daqnet_fabric::network::Vertex;
pub use network::Network;
pub use port::{Admission, BufferPools, Port, PortBuffer};
