//! A server written before the OpenAPI 3.1 document added its `paymentSettled` webhook: the
//! compiler names the method that builds the new payload.
use fixture_openapi31::callbacks::Webhooks;

struct Server;

impl Webhooks for Server {
    type Event = ();
}

fn main() {}
