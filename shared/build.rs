//! `sqlx::migrate!` embeds `migrations/` at compile time: rebuild when a migration is added
//! or changed (cargo does not watch that directory otherwise).
fn main() {
    println!("cargo:rerun-if-changed=migrations");
}
