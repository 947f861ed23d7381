//! Code written when `CreatePayment.reference` was `type: [string, integer, boolean]`; the
//! OpenAPI 3.1 document narrowed the union to `[string, integer]`, and the compiler names the
//! code that built the member that is gone.
use fixture_openapi31::models::CreatePaymentReference;

fn reference() -> CreatePaymentReference {
    CreatePaymentReference::Boolean(true)
}

fn main() {
    let _ = reference();
}
