//! The simulator's integration tests, one module per part of the model, each test stating a
//! claim and the bound it follows from. One binary: linking twelve cost the build minutes.

mod common;

mod atlas;
mod determinism;
mod ecn;
mod fabric;
mod host_cpu;
mod incast;
mod lossless;
mod physics;
mod pipe;
mod rc;
mod roi;
mod subfarm;
