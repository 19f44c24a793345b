//! Built-in executors: `noop` and `sleep` for demos and benchmarks, `http` for one
//! upstream URL, and `openai` for OpenAI-compatible Chat Completions over a type's
//! ordered routes (local first, external on fallback), each route behind its circuit.

mod api_key;
mod basic;
mod call;
pub mod client;
mod http;
mod openai;
mod openai_answer;
mod openai_chunks;
mod openai_exhausted;
mod openai_stream;

pub use api_key::check_keys;
pub use basic::{Noop, Sleep};
pub use client::ClientOptions;
pub use http::Http;
pub use openai::Openai;
