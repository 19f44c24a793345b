//! refinery embeds `migrations/` at compile time without telling cargo; this makes a
//! changed or added migration rebuild the crate.
fn main() {
    println!("cargo:rerun-if-changed=migrations");
}
