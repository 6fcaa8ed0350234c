// `sqlx::migrate!` embeds the files of `migrations/` at compile time; without this, cargo would
// keep a binary built before a migration file changed.
fn main() {
    println!("cargo:rerun-if-changed=migrations");
}
