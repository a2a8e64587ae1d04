//! Packet captures of simulated ports (`daqnet sim --pcap`): pcapng with real Ethernet, IPv4
//! and TCP headers and the simulated time, so Wireshark's TCP analysis reads a simulated incast
//! as it reads a captured one.
//!
//! What the headers say: host `h` is `10.w.x.y` with `w.x.y` = h + 1, MAC `02:00:00:w:x:y`; a
//! connection's opener (the
//! collector) uses port `50000 + c % 10000` and its acceptor (the readout unit) port 47000; the
//! first payload byte of each direction has sequence number 1 (the handshake happens before the
//! run and is not captured); the TCP timestamps option carries the simulated ms (the simulator
//! counts its 12 bytes in every frame), the SACK option the receiver's blocks; the window is
//! 65,535 bytes (the simulator does not model receive windows). Payload is not stored: each
//! frame is cut after its headers, its original length kept (like `tcpdump -s 128`).

use anyhow::Context;
use daqnet_core::trace::{CaptureSink, CapturedFrame};
use etherparse::{PacketBuilder, TcpOptionElement};
use pcap_file::pcapng::blocks::enhanced_packet::EnhancedPacketBlock;
use pcap_file::pcapng::blocks::interface_description::{InterfaceDescriptionBlock, InterfaceDescriptionOption};
use pcap_file::pcapng::PcapNgWriter;
use pcap_file::DataLink;
use std::borrow::Cow;
use std::path::Path;
use std::time::Duration;

/// The capture file beside `report.json`.
pub const CAPTURE_FILE: &str = "capture.pcapng";

/// TCP port of a connection's acceptor (a readout unit); its opener (a collector) uses this
/// plus the connection's number modulo 10,000. High unassigned ports, so no Wireshark dissector
/// claims the (cut) payload.
const ACCEPTOR_PORT: u16 = 47_000;
const OPENER_PORT: u16 = 50_000;

/// Bytes of each frame kept: Ethernet, IPv4 and TCP headers with the largest options.
const SNAPLEN: u32 = 14 + 20 + 60;

/// A [`CaptureSink`] writing pcapng: one interface per captured port.
pub struct PcapWriter<W: std::io::Write> {
    out: PcapNgWriter<W>,
    error: Option<anyhow::Error>,
    frames: u64,
}

impl PcapWriter<std::io::BufWriter<std::fs::File>> {
    /// Writes [`CAPTURE_FILE`] into `dir`.
    pub fn create(dir: &Path) -> anyhow::Result<Self> {
        let path = dir.join(CAPTURE_FILE);
        let file = std::fs::File::create(&path).with_context(|| format!("cannot write {}", path.display()))?;
        PcapWriter::new(std::io::BufWriter::new(file))
    }
}

impl<W: std::io::Write> PcapWriter<W> {
    /// Writes the capture to `out`.
    pub fn new(out: W) -> anyhow::Result<Self> {
        Ok(PcapWriter { out: PcapNgWriter::new(out)?, error: None, frames: 0 })
    }

    /// Finishes the file: the frames written, or the first error met.
    pub fn finish(self) -> anyhow::Result<u64> {
        if let Some(e) = self.error {
            return Err(e);
        }
        let mut w = self.out.into_inner();
        w.flush()?;
        Ok(self.frames)
    }

    fn write(&mut self, f: &CapturedFrame) -> anyhow::Result<()> {
        let bytes = frame(f)?;
        // The simulator's frame length counts the FCS, which a capture does not hold.
        let len = bytes.len().max(60) as u32;
        let kept = &bytes[..bytes.len().min(SNAPLEN as usize)];
        let epb = EnhancedPacketBlock {
            interface_id: f.port,
            timestamp: Duration::from_nanos(f.t_ns),
            original_len: len,
            data: Cow::Borrowed(kept),
            options: vec![],
        };
        self.out.write_pcapng_block(epb)?;
        self.frames += 1;
        Ok(())
    }
}

/// Host `h`'s address: 10.0.x.y with x.y = h + 1.
fn ip(h: u32) -> [u8; 4] {
    let n = h + 1;
    [10, (n >> 16) as u8, (n >> 8) as u8, n as u8]
}

fn mac(h: u32) -> [u8; 6] {
    let [_, a, b, c] = ip(h);
    [2, 0, 0, a, b, c]
}

/// The frame's bytes: headers, then as many zero bytes of payload as it carried.
fn frame(f: &CapturedFrame) -> anyhow::Result<Vec<u8>> {
    let (opener_port, acceptor_port) = (OPENER_PORT + (f.conn % 10_000) as u16, ACCEPTOR_PORT);
    let (src_port, dst_port) = if f.from_opener { (opener_port, acceptor_port) } else { (acceptor_port, opener_port) };
    let seq = |s: u64| (s + 1) as u32;
    let ts_ms = (f.t_ns / 1_000_000) as u32;
    let mut options = vec![TcpOptionElement::Noop, TcpOptionElement::Noop, TcpOptionElement::Timestamp(ts_ms, 0)];
    if f.nsack > 0 {
        let block = |i: usize| (seq(f.sack[i].0), seq(f.sack[i].1));
        let more = [1, 2].map(|i| (i < f.nsack as usize).then(|| block(i)));
        options.extend([TcpOptionElement::Noop, TcpOptionElement::Noop]);
        options.push(TcpOptionElement::SelectiveAcknowledgement(block(0), [more[0], more[1], None]));
    }
    let builder = PacketBuilder::ethernet2(mac(f.hosts.0), mac(f.hosts.1))
        .ipv4(ip(f.hosts.0), ip(f.hosts.1), 64)
        .tcp(src_port, dst_port, seq(f.seq), 65_535)
        .ack(seq(f.ack))
        .options(&options)
        .map_err(|e| anyhow::anyhow!("TCP options: {e}"))?;
    let payload = vec![0u8; f.len as usize];
    let mut out = Vec::with_capacity(builder.size(payload.len()));
    builder.write(&mut out, &payload)?;
    Ok(out)
}

impl<W: std::io::Write> CaptureSink for PcapWriter<W> {
    fn names(&mut self, ports: &[String], _hosts: &[String]) {
        for p in ports {
            let idb = InterfaceDescriptionBlock {
                linktype: DataLink::ETHERNET,
                snaplen: SNAPLEN,
                options: vec![
                    InterfaceDescriptionOption::IfName(Cow::Owned(p.clone())),
                    // Nanosecond timestamps: 10^-9.
                    InterfaceDescriptionOption::IfTsResol(9),
                ],
            };
            if let Err(e) = self.out.write_pcapng_block(idb) {
                self.error.get_or_insert(e.into());
            }
        }
    }

    fn frames(&mut self, frames: &[CapturedFrame]) {
        for f in frames {
            if self.error.is_none() {
                self.error = self.write(f).err();
            }
        }
    }
}
