//! A small regular-expression engine for JSON Schema `pattern` (the subset API documents use).
//!
//! Shared by the generator (to reject patterns outside the subset when it reads a document) and
//! by generated crates (to enforce them), so both agree on what a pattern means.
#[derive(Debug, Clone)]
enum Node {
    Char(char),
    Any,
    Class(Vec<(char, char)>, bool),
    Group(Vec<Vec<(Node, u32, u32)>>),
    Start,
    End,
}

#[derive(Debug, Clone)]
pub struct Regex {
    /// The whole pattern as one group of its alternatives.
    root: Node,
}

impl Regex {
    pub fn parse(p: &str) -> Option<Regex> {
        let chars: Vec<char> = p.chars().collect();
        let mut i = 0;
        let alts = parse_alts(&chars, &mut i)?;
        if i != chars.len() {
            return None;
        }
        Some(Regex {
            root: Node::Group(alts),
        })
    }

    /// Unanchored search, as JSON Schema's `pattern` is.
    pub fn is_match(&self, s: &str) -> bool {
        let chars: Vec<char> = s.chars().collect();
        (0..=chars.len()).any(|start| !match_node(&self.root, &chars, start, 0).is_empty())
    }
}

fn parse_alts(c: &[char], i: &mut usize) -> Option<Vec<Vec<(Node, u32, u32)>>> {
    let mut alts = vec![Vec::new()];
    while *i < c.len() {
        let node = match c[*i] {
            '|' => {
                *i += 1;
                alts.push(Vec::new());
                continue;
            }
            ')' => break,
            '(' => {
                *i += 1;
                if c.get(*i) == Some(&'?') {
                    if c.get(*i + 1) != Some(&':') {
                        return None;
                    }
                    *i += 2;
                }
                let inner = parse_alts(c, i)?;
                if c.get(*i) != Some(&')') {
                    return None;
                }
                *i += 1;
                Node::Group(inner)
            }
            '[' => {
                *i += 1;
                parse_class(c, i)?
            }
            '^' => {
                *i += 1;
                Node::Start
            }
            '$' => {
                *i += 1;
                Node::End
            }
            '.' => {
                *i += 1;
                Node::Any
            }
            '\\' => {
                *i += 1;
                parse_escape(c, i)?
            }
            '*' | '+' | '?' | '{' | ']' | '}' => return None,
            ch => {
                *i += 1;
                Node::Char(ch)
            }
        };
        let (min, max) = parse_quant(c, i)?;
        alts.last_mut()?.push((node, min, max));
    }
    Some(alts)
}

fn parse_quant(c: &[char], i: &mut usize) -> Option<(u32, u32)> {
    let q = match c.get(*i) {
        Some('?') => (0, 1),
        Some('*') => (0, u32::MAX),
        Some('+') => (1, u32::MAX),
        Some('{') => {
            let close = c[*i..].iter().position(|&x| x == '}')? + *i;
            let body: String = c[*i + 1..close].iter().collect();
            let q = match body.split_once(',') {
                None => {
                    let n = body.parse().ok()?;
                    (n, n)
                }
                Some((a, "")) => (a.parse().ok()?, u32::MAX),
                Some((a, b)) => (a.parse().ok()?, b.parse().ok()?),
            };
            *i = close;
            q
        }
        _ => return Some((1, 1)),
    };
    *i += 1;
    Some(q)
}

fn escape_class(ch: char) -> Option<(Vec<(char, char)>, bool)> {
    Some(match ch {
        'd' => (vec![('0', '9')], false),
        'D' => (vec![('0', '9')], true),
        'w' => (vec![('a', 'z'), ('A', 'Z'), ('0', '9'), ('_', '_')], false),
        'W' => (vec![('a', 'z'), ('A', 'Z'), ('0', '9'), ('_', '_')], true),
        's' => (vec![(' ', ' '), ('\t', '\r')], false),
        'S' => (vec![(' ', ' '), ('\t', '\r')], true),
        _ => return None,
    })
}

fn parse_escaped_char(c: &[char], i: &mut usize) -> Option<char> {
    let ch = *c.get(*i)?;
    *i += 1;
    Some(match ch {
        'n' => '\n',
        't' => '\t',
        'r' => '\r',
        'x' => {
            let hex: String = c.get(*i..*i + 2)?.iter().collect();
            *i += 2;
            char::from_u32(u32::from_str_radix(&hex, 16).ok()?)?
        }
        'u' => {
            let hex: String = c.get(*i..*i + 4)?.iter().collect();
            *i += 4;
            char::from_u32(u32::from_str_radix(&hex, 16).ok()?)?
        }
        c if c.is_ascii_alphanumeric() => return None,
        c => c,
    })
}

fn parse_escape(c: &[char], i: &mut usize) -> Option<Node> {
    let ch = *c.get(*i)?;
    if let Some((ranges, neg)) = escape_class(ch) {
        *i += 1;
        return Some(Node::Class(ranges, neg));
    }
    Some(Node::Char(parse_escaped_char(c, i)?))
}

fn parse_class(c: &[char], i: &mut usize) -> Option<Node> {
    let mut neg = false;
    if c.get(*i) == Some(&'^') {
        neg = true;
        *i += 1;
    }
    let mut ranges = Vec::new();
    let mut first = true;
    loop {
        let ch = *c.get(*i)?;
        if ch == ']' && !first {
            *i += 1;
            break;
        }
        first = false;
        let lo = if ch == '\\' {
            *i += 1;
            if let Some((r, false)) = c.get(*i).and_then(|&e| escape_class(e)) {
                *i += 1;
                ranges.extend(r);
                continue;
            }
            parse_escaped_char(c, i)?
        } else {
            *i += 1;
            ch
        };
        if c.get(*i) == Some(&'-') && c.get(*i + 1).is_some_and(|&n| n != ']') {
            *i += 1;
            let hi_ch = *c.get(*i)?;
            let hi = if hi_ch == '\\' {
                *i += 1;
                parse_escaped_char(c, i)?
            } else {
                *i += 1;
                hi_ch
            };
            if hi < lo {
                return None;
            }
            ranges.push((lo, hi));
        } else {
            ranges.push((lo, lo));
        }
    }
    Some(Node::Class(ranges, neg))
}

/// Every end position reachable by matching `node` once at `pos`.
fn match_node(node: &Node, s: &[char], pos: usize, depth: usize) -> Vec<usize> {
    if depth > 256 {
        return Vec::new();
    }
    match node {
        Node::Start => {
            if pos == 0 {
                vec![pos]
            } else {
                vec![]
            }
        }
        Node::End => {
            if pos == s.len() {
                vec![pos]
            } else {
                vec![]
            }
        }
        Node::Char(ch) => {
            if s.get(pos) == Some(ch) {
                vec![pos + 1]
            } else {
                vec![]
            }
        }
        Node::Any => {
            if pos < s.len() && s[pos] != '\n' {
                vec![pos + 1]
            } else {
                vec![]
            }
        }
        Node::Class(ranges, neg) => match s.get(pos) {
            Some(&ch) if ranges.iter().any(|&(lo, hi)| lo <= ch && ch <= hi) != *neg => {
                vec![pos + 1]
            }
            _ => vec![],
        },
        Node::Group(alts) => {
            let mut out = Vec::new();
            for seq in alts {
                for end in match_seq(seq, s, pos, depth + 1) {
                    if !out.contains(&end) {
                        out.push(end);
                    }
                }
            }
            out
        }
    }
}

fn match_seq(seq: &[(Node, u32, u32)], s: &[char], pos: usize, depth: usize) -> Vec<usize> {
    let mut positions = vec![pos];
    for (node, min, max) in seq {
        let mut next = Vec::new();
        let mut frontier = positions.clone();
        let mut count = 0u32;
        if *min == 0 {
            next.extend(frontier.iter().copied());
        }
        while count < *max && !frontier.is_empty() {
            let mut reached = Vec::new();
            for &p in &frontier {
                for e in match_node(node, s, p, depth) {
                    if !reached.contains(&e) && (e != p || count == 0) {
                        reached.push(e);
                    }
                }
            }
            count += 1;
            if count >= *min {
                for &e in &reached {
                    if !next.contains(&e) {
                        next.push(e);
                    }
                }
            }
            if reached.iter().all(|e| frontier.contains(e)) {
                break;
            }
            frontier = reached;
        }
        positions = next;
        if positions.is_empty() {
            break;
        }
    }
    positions
}
