//! Look-alike names: two bundle names a person could take for one another, either one edit
//! apart (Damerau–Levenshtein distance 1: one character inserted, deleted, replaced, or two
//! neighbours swapped) or the same once case, separators and confusable characters are folded
//! (`0` and `o`, `1`, `i` and `l`, `rn` and `m`, `vv` and `w`, Cyrillic and Greek letters that
//! look Latin). Pure; the host warns with it when a new name resembles an installed one.

/// How two different names resemble each other.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum Lookalike {
    /// The same name (from another source).
    SameName,
    /// The same after case, separator and confusable folding.
    Confusable,
    /// One insertion, deletion, substitution or swap of neighbours apart.
    OneEdit,
}

impl Lookalike {
    /// `the same name as`, `confusable with`, `one edit away from`.
    pub fn describe(self) -> &'static str {
        match self {
            Self::SameName => "the same name as",
            Self::Confusable => "confusable with",
            Self::OneEdit => "one edit away from",
        }
    }
}

/// Whether `name` could pass for `other`, and how; `None` when they are plainly different.
pub fn lookalike(name: &str, other: &str) -> Option<Lookalike> {
    LookalikeName::new(name).lookalike(other)
}

/// A name to compare with many others (every installed one): its folded form is computed once.
#[derive(Debug, Clone)]
pub struct LookalikeName<'a> {
    name: &'a str,
    skeleton: String,
}

impl<'a> LookalikeName<'a> {
    /// `name`, folded once.
    pub fn new(name: &'a str) -> Self {
        Self {
            name,
            skeleton: skeleton(name),
        }
    }

    /// [`lookalike`] of this name and `other`.
    pub fn lookalike(&self, other: &str) -> Option<Lookalike> {
        if self.name == other {
            return Some(Lookalike::SameName);
        }
        // Folded lazily: most installed names differ from this one within a few characters.
        if self.skeleton.chars().eq(folded(other)) {
            return Some(Lookalike::Confusable);
        }
        within_one_edit(self.name, other).then_some(Lookalike::OneEdit)
    }
}

/// The folded form two confusable names share.
pub fn skeleton(name: &str) -> String {
    folded(name).collect()
}

/// [`skeleton`]'s characters, one at a time: case, separators and confusables folded, hidden
/// characters dropped, then `rn` read as `m` and, after that, `vv` as `w`, each left to right
/// without overlap.
fn folded(name: &str) -> impl Iterator<Item = char> + '_ {
    let chars = name.chars().flat_map(char::to_lowercase).filter_map(fold);
    pairs(pairs(chars, ('r', 'n'), 'm'), ('v', 'v'), 'w')
}

/// `chars` with each `first` directly followed by `second` read as `one`, left to right.
fn pairs(
    chars: impl Iterator<Item = char>,
    (first, second): (char, char),
    one: char,
) -> impl Iterator<Item = char> {
    let mut chars = chars.peekable();
    std::iter::from_fn(move || {
        let c = chars.next()?;
        Some(if c == first && chars.next_if_eq(&second).is_some() {
            one
        } else {
            c
        })
    })
}

/// One lowercase character folded to the Latin letter it passes for; `None` for a hidden one.
fn fold(c: char) -> Option<char> {
    Some(match c {
        '0' | 'о' | 'ο' | 'օ' => 'o',
        '1' | 'i' | '|' | 'і' | 'ι' | 'ӏ' => 'l',
        'а' | 'α' => 'a',
        'е' | 'ε' => 'e',
        'р' | 'ρ' => 'p',
        'с' | 'ϲ' => 'c',
        'у' | 'γ' => 'y',
        'х' | 'χ' => 'x',
        'ѕ' | '5' => 's',
        'ј' => 'j',
        'ԁ' => 'd',
        'ɡ' => 'g',
        'ν' => 'v',
        'κ' | 'к' => 'k',
        'т' | 'τ' => 't',
        'н' => 'h',
        'м' => 'm',
        '_' | '.' | ' ' => '-',
        c if crate::hidden::hidden_kind(c).is_some() => return None,
        c => c,
    })
}

/// Damerau–Levenshtein (optimal string alignment) distance at most 1, in chars.
pub fn within_one_edit(a: &str, b: &str) -> bool {
    // Most pairs differ in length by more than one: answered before anything is collected.
    if a.chars().count().abs_diff(b.chars().count()) > 1 {
        return false;
    }
    let a: Vec<char> = a.chars().collect();
    let b: Vec<char> = b.chars().collect();
    let (short, long) = if a.len() <= b.len() {
        (&a, &b)
    } else {
        (&b, &a)
    };
    if long.len() - short.len() > 1 {
        return false;
    }
    let prefix = short
        .iter()
        .zip(long.iter())
        .take_while(|(x, y)| x == y)
        .count();
    if short.len() == long.len() {
        if prefix == short.len() {
            return true;
        }
        // One substitution, or one swap of neighbours.
        let rest = prefix + 1;
        short[rest..] == long[rest..]
            || (rest < short.len()
                && short[prefix] == long[rest]
                && short[rest] == long[prefix]
                && short[rest + 1..] == long[rest + 1..])
    } else {
        // One insertion into the shorter.
        short[prefix..] == long[prefix + 1..]
    }
}
