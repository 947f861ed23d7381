// sqlx's `migrate!` and the SQLite migrator embed the migration files at compile time; without
// this a new migration file would not trigger a rebuild and the binary would silently miss it.
fn main() {
    println!("cargo:rerun-if-changed=migrations");
}
