//! Serves an endpoint on a free loopback port for the rest of the test: what a generated
//! client is pointed at.

/// The base URL (`http://127.0.0.1:PORT`) of `app`, served on a task of the test's runtime.
pub async fn serve(app: impl poem::IntoEndpoint<Endpoint: 'static> + Send + 'static) -> String {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0")
        .await
        .expect("a free port");
    let base = format!("http://{}", listener.local_addr().expect("bound"));
    let acceptor = poem::listener::TcpAcceptor::from_tokio(listener).expect("an acceptor");
    tokio::spawn(poem::Server::new_with_acceptor(acceptor).run(app));
    base
}
