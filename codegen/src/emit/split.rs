//! A large document's types as several crates: cargo checks independent ones on every core, and
//! no one rustc holds all of them (most of a large crate's memory is its models).
//!
//! The crates follow the type graph. Types that hold each other (a strongly connected
//! component) stay together; each component has a *level*, 0 when it holds no other type and
//! else one more than the highest level it holds. Taken by level, then in document order, the
//! components fill parts of about `types_per_crate` types each, so a part only holds types of
//! parts before it (the crates form no cycle) and the parts of one level do not depend on each
//! other (they compile side by side).
//!
//! Every part is `<crate>-types-<k>` under `parts/types-<k>/`, with a `models` module that
//! imports the parts it needs; the crate's own `models` re-exports every part, so the paths
//! a server uses (`<crate>::models::X`) do not change.

use std::collections::{BTreeSet, HashMap};

use crate::ir::Api;

/// One crate of types: indices into [`Api::types`] (in document order) and the parts (indices
/// into the layout) whose types they hold.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct TypesPart {
    pub types: Vec<usize>,
    pub deps: Vec<usize>,
}

/// The parts of the types when there are more than `types_per_crate` of them (0: never split).
pub(crate) fn types_parts(api: &Api, types_per_crate: usize) -> Option<Vec<TypesPart>> {
    let n = api.types.len();
    if types_per_crate == 0 || n <= types_per_crate {
        return None;
    }
    let index: HashMap<&str, usize> = api
        .types
        .iter()
        .enumerate()
        .map(|(i, t)| (t.name.as_str(), i))
        .collect();
    let edges: Vec<Vec<usize>> = api
        .types
        .iter()
        .map(|t| {
            api.direct_refs(t)
                .into_iter()
                .filter_map(|name| index.get(name).copied())
                .collect()
        })
        .collect();
    let (component, count) = components(&edges);
    // Tarjan numbers a component after every component it reaches: levels in one pass.
    let mut level = vec![0usize; count];
    let mut members: Vec<Vec<usize>> = vec![Vec::new(); count];
    for (v, &c) in component.iter().enumerate() {
        members[c].push(v);
    }
    for c in 0..count {
        level[c] = members[c]
            .iter()
            .flat_map(|&v| &edges[v])
            .map(|&w| component[w])
            .filter(|&d| d != c)
            .map(|d| level[d] + 1)
            .max()
            .unwrap_or(0);
    }
    let mut order: Vec<usize> = (0..count).collect();
    order.sort_by_key(|&c| (level[c], members[c][0]));
    let mut part_of = vec![0usize; n];
    let mut parts: Vec<Vec<usize>> = vec![Vec::new()];
    for c in order {
        if parts.last().is_some_and(|p| p.len() >= types_per_crate) {
            parts.push(Vec::new());
        }
        let k = parts.len() - 1;
        for &v in &members[c] {
            part_of[v] = k;
        }
        parts[k].extend(&members[c]);
    }
    Some(
        parts
            .into_iter()
            .enumerate()
            .map(|(k, mut types)| {
                types.sort_unstable();
                let deps: BTreeSet<usize> = types
                    .iter()
                    .flat_map(|&v| &edges[v])
                    .map(|&w| part_of[w])
                    .filter(|&p| p != k)
                    .collect();
                TypesPart {
                    types,
                    deps: deps.into_iter().collect(),
                }
            })
            .collect(),
    )
}

/// Strongly connected components (Tarjan's, without recursion: a large document's chains of
/// types are deeper than a thread's stack would like): each vertex's component and their
/// count. A component is numbered after every component it reaches.
fn components(edges: &[Vec<usize>]) -> (Vec<usize>, usize) {
    const NONE: usize = usize::MAX;
    let n = edges.len();
    let mut index = vec![NONE; n];
    let mut low = vec![0usize; n];
    let mut on_stack = vec![false; n];
    let mut stack: Vec<usize> = Vec::new();
    let mut component = vec![NONE; n];
    let mut count = 0;
    let mut next = 0;
    // (vertex, position of the next edge to follow)
    let mut calls: Vec<(usize, usize)> = Vec::new();
    for root in 0..n {
        if index[root] != NONE {
            continue;
        }
        calls.push((root, 0));
        while let Some(&mut (v, ref mut edge)) = calls.last_mut() {
            if *edge == 0 && index[v] == NONE {
                index[v] = next;
                low[v] = next;
                next += 1;
                stack.push(v);
                on_stack[v] = true;
            }
            if let Some(&w) = edges[v].get(*edge) {
                *edge += 1;
                if index[w] == NONE {
                    calls.push((w, 0));
                } else if on_stack[w] {
                    low[v] = low[v].min(index[w]);
                }
                continue;
            }
            calls.pop();
            if let Some(&(parent, _)) = calls.last() {
                low[parent] = low[parent].min(low[v]);
            }
            if low[v] == index[v] {
                while let Some(w) = stack.pop() {
                    on_stack[w] = false;
                    component[w] = count;
                    if w == v {
                        break;
                    }
                }
                count += 1;
            }
        }
    }
    (component, count)
}

#[cfg(test)]
mod tests {
    use super::components;

    #[test]
    fn components_are_numbered_after_what_they_reach() {
        // 0 → 1 ⇄ 2 → 3, 4 → 0, 5 alone
        let edges = vec![vec![1], vec![2], vec![1, 3], vec![], vec![0], vec![]];
        let (c, count) = components(&edges);
        assert_eq!(count, 5);
        assert_eq!(c[1], c[2]);
        assert!(c[3] < c[1], "3 is reached from 1");
        assert!(c[1] < c[0] && c[0] < c[4]);
        assert_ne!(c[5], c[0]);
    }

    #[test]
    fn a_self_reference_is_one_component() {
        let (c, count) = components(&[vec![0], vec![0]]);
        assert_eq!(count, 2);
        assert!(c[0] < c[1]);
    }
}
