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
        if self.skeleton == skeleton(other) {
            return Some(Lookalike::Confusable);
        }
        within_one_edit(self.name, other).then_some(Lookalike::OneEdit)
    }
}

/// The folded form two confusable names share.
pub fn skeleton(name: &str) -> String {
    let mut folded = String::with_capacity(name.len());
    for c in name.chars().flat_map(char::to_lowercase) {
        let c = match c {
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
            c if crate::hidden::hidden_kind(c).is_some() => continue,
            c => c,
        };
        folded.push(c);
    }
    folded.replace("rn", "m").replace("vv", "w")
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
