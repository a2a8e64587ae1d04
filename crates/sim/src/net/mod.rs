//! The simulated network: Ethernet framing, output ports with buffer schemes, and the fabric
//! (hosts, switches, routes) built from a scenario's `[network]`.

pub mod fabric;
pub mod port;
pub mod wire;

pub use fabric::{Fabric, Vertex};
pub use port::{Admission, BufferPools, Port, PortBuffer};
