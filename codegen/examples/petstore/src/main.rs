//! `cargo run -p petstore-example` serves the Petstore on `PETSTORE_ADDR` (default
//! `127.0.0.1:8080`); the document is at `/openapi.json` and `/docs`.

fn main() -> std::io::Result<()> {
    let addr = std::env::var("PETSTORE_ADDR").unwrap_or_else(|_| "127.0.0.1:8080".into());
    tokio::runtime::Runtime::new()?.block_on(
        poem::Server::new(poem::listener::TcpListener::bind(addr)).run(petstore_example::app()),
    )
}
