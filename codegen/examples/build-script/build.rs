//! Writes the server code for `codegen/tests/fixtures/multi_file.yaml` (and the files it refers
//! to) into `OUT_DIR/pets_api.rs`; cargo runs this again when any of them changes.

fn main() -> std::io::Result<()> {
    openapi_poem::Builder::new("../../tests/fixtures/multi_file.yaml")
        .module("pets_api")
        .generate()?;
    Ok(())
}
