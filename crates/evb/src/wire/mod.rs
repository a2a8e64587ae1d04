//! The wire format: frames and the messages they carry.

mod frame;
mod message;

pub use frame::{put_header, FrameDecoder, FrameError, HEADER_BYTES, MAGIC, VERSION};
pub use message::{
    put_response_head, CollectorStatus, FragmentHeader, Message, NodeTcp, ResponseHead, WireError,
    FRAGMENT_HEADER_BYTES, RESPONSE_HEAD_BYTES,
};
