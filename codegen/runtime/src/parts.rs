//! The parts of a generated API: one poem-openapi impl per path, nested in tuples of at most 16
//! (the tuples poem-openapi implements `OpenApi` for), built from one server handle.

use std::sync::Arc;

/// A part of a generated API, or a tuple of parts, built over the server `S`.
///
/// The generated crate implements it for its `ApiPart<S, N>`; the tuples below build each of
/// their members, so `fn api` is one call whatever the number of parts.
pub trait ApiParts<S>: Sized {
    /// The part over `server` (`None` only for the document, which needs no server).
    fn build(server: &Option<Arc<S>>) -> Self;
}

macro_rules! tuple_parts {
    ($($member:ident),+) => {
        impl<S, $($member: ApiParts<S>),+> ApiParts<S> for ($($member,)+) {
            fn build(server: &Option<Arc<S>>) -> Self {
                ($($member::build(server),)+)
            }
        }
    };
}

tuple_parts!(A, B);
tuple_parts!(A, B, C);
tuple_parts!(A, B, C, D);
tuple_parts!(A, B, C, D, E);
tuple_parts!(A, B, C, D, E, F);
tuple_parts!(A, B, C, D, E, F, G);
tuple_parts!(A, B, C, D, E, F, G, H);
tuple_parts!(A, B, C, D, E, F, G, H, I);
tuple_parts!(A, B, C, D, E, F, G, H, I, J);
tuple_parts!(A, B, C, D, E, F, G, H, I, J, K);
tuple_parts!(A, B, C, D, E, F, G, H, I, J, K, L);
tuple_parts!(A, B, C, D, E, F, G, H, I, J, K, L, M);
tuple_parts!(A, B, C, D, E, F, G, H, I, J, K, L, M, N);
tuple_parts!(A, B, C, D, E, F, G, H, I, J, K, L, M, N, O);
tuple_parts!(A, B, C, D, E, F, G, H, I, J, K, L, M, N, O, P);

#[cfg(test)]
mod tests {
    use super::*;

    /// A part that remembers which server it was built over.
    #[derive(Debug, PartialEq)]
    struct Part<const N: usize>(Option<u32>);

    impl<const N: usize> ApiParts<u32> for Part<N> {
        fn build(server: &Option<Arc<u32>>) -> Self {
            Part(server.as_deref().copied())
        }
    }

    #[test]
    fn nested_tuples_build_every_part_over_the_same_server() {
        type Nested = ((Part<0>, Part<1>), Part<2>);
        let built = Nested::build(&Some(Arc::new(7)));
        assert_eq!(built, ((Part(Some(7)), Part(Some(7))), Part(Some(7))));
        assert_eq!(Nested::build(&None), ((Part(None), Part(None)), Part(None)));
    }
}
