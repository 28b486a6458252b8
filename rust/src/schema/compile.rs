//! Compiles a JSON Schema (2020-12 subset) once into an arena of nodes that the [`Checker`]
//! walks as events arrive.
//!
//! Design notes:
//! - Arena of [`Node`]s indexed by `u32`, enum-free flat structs with optional boxed rule blocks
//!   per instance type: the checker dispatches on the value's kind, never through trait objects,
//!   and a node that asserts nothing about strings costs nothing on a string.
//! - `$ref` is compiled lazily and memoised by canonical JSON Pointer: the target gets a node id
//!   before its body is compiled, so recursive schemas become cycles in the arena. Cycles that
//!   do not consume input (`{"$ref": "#"}`, `anyOf` or `allOf` back to itself) would make the
//!   checker loop; they are cut at compile time (the edge is dropped, which only loosens the
//!   check) and reported as unsupported.
//! - `$ref` and the members of `allOf` are *conjuncts*: subschemas applied to the same value as
//!   their owner, each with its own keywords (so `additionalProperties` in a member sees only
//!   that member's `properties`, as 2020-12 says). They differ only in number, so every rule
//!   about one conjunct (cycles, exactness, wrappers, plainness) reads both through
//!   [`Node::conjuncts`].
//! - Soundness over completeness: an unsupported keyword is reported and ignored, which can only
//!   accept more. Each node records whether it is `exact` (everything under it was understood);
//!   only exact branches may count against `oneOf`'s "exactly one".
//! - `patternProperties`: the schemas a member meets depend on its key, known only when the key
//!   closes. A property's are known here, so a property whose name a pattern takes gets a node
//!   applying both (`conjunction`), and so does each set of patterns that may take a key
//!   together (`PatternRule::sets`): the checker still follows one node per member, and
//!   objects without patterns take no new step. A key is judged only where every regex dialect
//!   reads the pattern alike (see `pattern::KeyPattern`); elsewhere it meets neither the
//!   pattern's schema nor `additionalProperties`, and the slot is loosened.
//!
//! [`Checker`]: super::Checker

use std::collections::HashMap;
use std::fmt::Write as _;

use super::pattern::{KeyPattern, Pattern};
use serde_json::{Map, Value};

use super::canon::Canon;
use super::decimal::{Decimal, Fixed, MultipleOf};
use super::format::Format;
use super::nesting::{MAX_SCHEMA_DEPTH, NAMED_SUBSCHEMAS, SUBSCHEMAS};
use super::trie::Trie;
use super::{pattern, push_pointer_token, SchemaError, SchemaErrorKind, Unsupported};
use crate::error::cut_at;

pub(crate) type NodeId = u32;
/// No node (no schema applies).
pub(crate) const NONE: NodeId = u32::MAX;
/// The `true` schema.
pub(crate) const TRUE_NODE: NodeId = 0;
/// The `false` schema.
pub(crate) const FALSE_NODE: NodeId = 1;

pub(crate) const T_NULL: u8 = 1;
pub(crate) const T_BOOL: u8 = 2;
pub(crate) const T_OBJECT: u8 = 4;
pub(crate) const T_ARRAY: u8 = 8;
pub(crate) const T_STRING: u8 = 16;
pub(crate) const T_NUMBER: u8 = 32;
pub(crate) const T_INTEGER: u8 = 64;
pub(crate) const T_ALL: u8 = 127;

/// Marks an `anyOf` that stands for a `oneOf` of the schema the tool declares: one whose
/// branches a looser pre-check cannot hold apart (a `format` left to validation, say), so that
/// two of them may both match. Errors still name the keyword the schema has.
pub const LOOSENED_ONE_OF: &str = "x-toolwire-one-of";

const ANNOTATIONS: &[&str] = &[
    "title",
    "description",
    "default",
    "examples",
    "$schema",
    "$comment",
    "deprecated",
    "readOnly",
    "writeOnly",
];

/// One compiled subschema.
#[derive(Debug)]
pub(crate) struct Node {
    /// Allowed instance types (`T_*` bits); `T_ALL` when unconstrained.
    pub types: u8,
    pub is_false: bool,
    /// Asserts nothing (after following `$ref`).
    pub trivial: bool,
    /// `T_*` bits of the instance types this node accepts and asserts nothing more about
    /// (numbers: both bits or neither), so the checker decides it at the value's first byte
    /// and gives it no slot. Set last, from the simplified node. An `anyOf` of one-slot
    /// branches is plain for the kinds some branch is plain for (`own_plain_types`).
    pub plain: u8,
    /// `T_*` bits of the kinds for which this node is the only subschema a value meets when it
    /// is a member of a container (no conjuncts, no branches, no `false`) and its first byte
    /// already passes its type and `enum` kinds (containers: no `enum` at all): the checker
    /// then follows a scalar without a frame or slot, and opens a container's frame and slot
    /// directly. Set with `plain`.
    pub lone: u8,
    /// The one conjunct of a node that holds nothing else (annotations aside) and is as exact
    /// as it, or `NONE`: the checker applies that conjunct in its place, one slot instead of
    /// two (Pydantic's `{"$ref": "#/$defs/Item"}` members, and the `{"allOf": [{"$ref": ...}],
    /// "description": ...}` that older exporters wrap a described reference in).
    pub wrapped: NodeId,
    /// Everything in and under this node is checked exactly (nothing ignored).
    pub exact: bool,
    pub reff: NodeId,
    pub all_of: Box<[NodeId]>,
    pub any_of: Box<[NodeId]>,
    pub one_of: Box<[NodeId]>,
    pub enumeration: Option<Box<EnumRule>>,
    pub string: Option<Box<StringRule>>,
    pub number: Option<Box<NumberRule>>,
    pub object: Option<Box<ObjectRule>>,
    pub array: Option<Box<ArrayRule>>,
    /// Where the subschema is, for unsupported reports.
    pub pointer: Box<str>,
    /// A short description for `anyOf`/`oneOf` messages.
    pub summary: Box<str>,
    /// The node's `anyOf` stands for the `oneOf` the schema has ([`LOOSENED_ONE_OF`]): its
    /// errors name `oneOf`.
    pub one_of_named: bool,
}

impl Node {
    fn new(pointer: &str) -> Self {
        Self {
            types: T_ALL,
            is_false: false,
            trivial: false,
            plain: 0,
            lone: 0,
            wrapped: NONE,
            exact: true,
            reff: NONE,
            all_of: Box::new([]),
            any_of: Box::new([]),
            one_of: Box::new([]),
            enumeration: None,
            string: None,
            number: None,
            object: None,
            array: None,
            pointer: pointer.into(),
            summary: "".into(),
            one_of_named: false,
        }
    }

    /// The subschemas applied to the same value alongside this one: its `$ref` target, then
    /// its `allOf` members.
    pub fn conjuncts(&self) -> impl Iterator<Item = NodeId> + '_ {
        (self.reff != NONE)
            .then_some(self.reff)
            .into_iter()
            .chain(self.all_of.iter().copied())
    }

    fn has_conjuncts(&self) -> bool {
        self.reff != NONE || !self.all_of.is_empty()
    }

    /// What this node asserts on its own, conjuncts aside.
    fn asserts_locally(&self) -> bool {
        self.types != T_ALL
            || self.is_false
            || self.enumeration.is_some()
            || self.string.is_some()
            || self.number.is_some()
            || self.object.is_some()
            || self.array.is_some()
            || !self.any_of.is_empty()
            || !self.one_of.is_empty()
    }
}

/// `enum` or `const`.
#[derive(Debug)]
pub(crate) struct EnumRule {
    pub keyword: &'static str,
    /// `T_*` bits of the kinds that occur among the values.
    pub kinds: u8,
    pub strings: Trie,
    pub numbers: Vec<Decimal>,
    /// Bit 0: `false` allowed, bit 1: `true` allowed.
    pub bools: u8,
    pub containers: Vec<Canon>,
    pub expected: String,
}

#[derive(Debug)]
pub(crate) struct StringRule {
    pub min_len: u64,
    pub max_len: u64,
    pub pattern: Option<(Pattern, Box<str>)>,
    pub format: Option<Format>,
}

#[derive(Debug)]
pub(crate) struct NumberRule {
    pub minimum: Option<Decimal>,
    pub maximum: Option<Decimal>,
    pub exclusive_minimum: Option<Decimal>,
    pub exclusive_maximum: Option<Decimal>,
    pub multiple_of: Option<(MultipleOf, Box<str>)>,
    /// Bounds in words: `a number >= 1 and <= 100`.
    pub bounds_expected: String,
    /// The same rules as [`Fixed`] numbers, when every one of them fits.
    pub fixed: Option<FixedRule>,
}

/// A [`NumberRule`] whose bounds and divisor all fit a [`Fixed`].
#[derive(Debug, Clone, Copy)]
pub(crate) struct FixedRule {
    pub minimum: Option<Fixed>,
    pub maximum: Option<Fixed>,
    pub exclusive_minimum: Option<Fixed>,
    pub exclusive_maximum: Option<Fixed>,
    pub multiple_of: Option<Fixed>,
}

impl NumberRule {
    /// `fixed` for these rules, `multiple_of` being the divisor of `self.multiple_of`.
    fn fixed_rule(&self, multiple_of: Option<&Decimal>) -> Option<FixedRule> {
        let fit = |d: &Option<Decimal>| match d {
            None => Some(None),
            Some(d) => Fixed::from_decimal(d).map(Some),
        };
        let multiple_of = match (&self.multiple_of, multiple_of) {
            (None, _) => None,
            (Some(_), Some(d)) => Some(Fixed::from_decimal(d)?),
            (Some(_), None) => return None,
        };
        Some(FixedRule {
            minimum: fit(&self.minimum)?,
            maximum: fit(&self.maximum)?,
            exclusive_minimum: fit(&self.exclusive_minimum)?,
            exclusive_maximum: fit(&self.exclusive_maximum)?,
            multiple_of,
        })
    }
}

/// What happens to a key that `properties` does not name.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Additional {
    Any,
    Deny,
    Schema(NodeId),
}

#[derive(Debug, Clone, Copy)]
pub(crate) struct KeyInfo {
    /// The property's schema, or `NONE` for a name that is only `required`.
    pub prop: NodeId,
    /// The bit of this name in the required set, or `u32::MAX`.
    pub required_bit: u32,
}

#[derive(Debug)]
pub(crate) struct ObjectRule {
    pub trie: Trie,
    /// `patternProperties`, which decide the members `properties` does not name: then
    /// `additional` is `Any` (so the paths that read it, key tries included, treat the
    /// object as open) and the rule that holds for the keys no pattern takes is the pattern
    /// rule's. A property whose name a pattern takes has both in its `prop` already.
    pub patterns: Option<Box<PatternRule>>,
    pub keys: Vec<KeyInfo>,
    /// The name of each entry of `keys`, for the checker's whole-name comparison with the
    /// property it expects next.
    pub names: Vec<Box<[u8]>>,
    pub additional: Additional,
    pub required: Vec<Box<str>>,
    pub deny_expected: String,
    pub required_expected: String,
}

/// Patterns listed at most this many times over, one node per set of them that may take a key
/// together; a key more of them take meets only its first (looser, and marked so).
const MAX_LISTED_PATTERNS: usize = 6;

/// `patternProperties` and the `additionalProperties` beside them.
#[derive(Debug)]
pub(crate) struct PatternRule {
    pub patterns: Box<[(KeyPattern, NodeId)]>,
    /// For each set of patterns (bit `i`: pattern `i`), the node a member whose key they all
    /// take meets (their conjunction); empty past `MAX_LISTED_PATTERNS` patterns.
    pub sets: Box<[NodeId]>,
    pub additional: Additional,
}

/// What a key that `properties` does not name meets under a [`PatternRule`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum PatternMember {
    /// The patterns that take it: their node, and whether that is all of them (no pattern
    /// may take it as one dialect reads it and not as another, and none was left out).
    Patterns(NodeId, bool),
    /// No pattern takes it: `additionalProperties` decides.
    Additional,
    /// No pattern surely takes it, and one may: nothing is checked.
    Unknown,
}

impl PatternRule {
    /// The schema the member under `key` (not a property) meets.
    pub fn member(&self, key: &str) -> PatternMember {
        let mut set = 0usize;
        let mut first = NONE;
        let mut count = 0;
        let mut unknown = false;
        for (i, (pattern, id)) in self.patterns.iter().enumerate() {
            match pattern.matches(key) {
                Some(true) => {
                    if first == NONE {
                        first = *id;
                    }
                    count += 1;
                    if i < MAX_LISTED_PATTERNS {
                        set |= 1 << i;
                    }
                }
                Some(false) => {}
                None => unknown = true,
            }
        }
        match (count, unknown) {
            (0, false) => PatternMember::Additional,
            (0, true) => PatternMember::Unknown,
            (1, _) => PatternMember::Patterns(first, !unknown),
            _ => match self.sets.get(set) {
                Some(&node) => PatternMember::Patterns(node, !unknown),
                None => PatternMember::Patterns(first, false),
            },
        }
    }
}

#[derive(Debug)]
pub(crate) struct ArrayRule {
    pub prefix: Box<[NodeId]>,
    /// Schema of the elements after `prefix`, or `NONE`.
    pub items: NodeId,
    pub min_items: u64,
    pub max_items: u64,
}

/// The compiled arena.
#[derive(Debug)]
pub(crate) struct Compiled {
    pub nodes: Vec<Node>,
    pub root: NodeId,
    pub unsupported: Vec<Unsupported>,
}

struct Compiler<'s> {
    root: &'s Value,
    nodes: Vec<Node>,
    memo: HashMap<String, NodeId>,
    unsupported: Vec<Unsupported>,
    /// The dialect the root's `$schema` names: keywords a draft does not have are
    /// annotations there, and draft 7 and older ignore the siblings of `$ref`.
    draft: Draft,
    depth: u32,
}

/// The JSON Schema drafts whose vocabularies differ in what the pre-check applies.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
enum Draft {
    D4,
    D6,
    D7,
    D2019,
    D2020,
}

impl Draft {
    /// The draft a root `$schema` names; 2020-12 without one, as the final validation reads it.
    fn of(schema: &Value) -> Self {
        let Some(uri) = schema.get("$schema").and_then(Value::as_str) else {
            return Self::D2020;
        };
        [
            ("draft-04", Self::D4),
            ("draft-03", Self::D4),
            ("draft-06", Self::D6),
            ("draft-07", Self::D7),
            ("2019-09", Self::D2019),
        ]
        .into_iter()
        .find_map(|(name, draft)| uri.contains(name).then_some(draft))
        .unwrap_or(Self::D2020)
    }

    /// Whether `keyword`, one the pre-check applies, is an assertion of this draft: draft 4
    /// has no `const` and reads `exclusiveMinimum`/`exclusiveMaximum` only as the boolean
    /// modifier of the bound beside it, and `prefixItems` is 2020-12's. A validator of the
    /// draft ignores the others, so applying them would refuse valid arguments.
    fn asserts(self, keyword: &str) -> bool {
        match keyword {
            "const" | "exclusiveMinimum" | "exclusiveMaximum" => self > Self::D4,
            "prefixItems" => self == Self::D2020,
            _ => true,
        }
    }
}

pub(crate) fn compile(schema: &Value) -> Result<Compiled, SchemaError> {
    let mut true_node = Node::new("");
    true_node.trivial = true;
    let mut false_node = Node::new("");
    false_node.is_false = true;
    false_node.summary = "nothing".into();
    let mut c = Compiler {
        root: schema,
        nodes: vec![true_node, false_node],
        memo: HashMap::new(),
        unsupported: Vec::new(),
        draft: Draft::of(schema),
        depth: 0,
    };
    refuse_foreign_patterns(schema)?;
    let root = c.compile_at(schema, "")?;
    c.cut_cycles();
    c.simplify();
    for n in &mut c.nodes {
        n.plain = plain_types(n);
        n.lone = lone_types(n);
    }
    // Branches first (above), then the `anyOf` owners that read their bits.
    for i in 0..c.nodes.len() {
        let n = &c.nodes[i];
        if n.any_of.is_empty() || n.trivial {
            continue;
        }
        let simple = |b: &NodeId| {
            let b = &c.nodes[*b as usize];
            !b.has_conjuncts() && b.any_of.is_empty() && b.one_of.is_empty()
        };
        if !n.any_of.iter().all(simple) {
            continue;
        }
        let branches = n
            .any_of
            .iter()
            .fold(0, |bits, &b| bits | c.nodes[b as usize].plain);
        c.nodes[i].plain = own_plain_types(&c.nodes[i]) & branches;
    }
    c.propagate_exactness();
    for i in 0..c.nodes.len() {
        let wrapped = {
            let n = &c.nodes[i];
            let mut conjuncts = n.conjuncts();
            match (conjuncts.next(), conjuncts.next()) {
                // An inexact wrapper over an exact target (an ignored keyword next to the
                // `$ref`) must keep its own slot, or a `oneOf` would count the target as an
                // exact match.
                (Some(t), None) if !n.asserts_locally() && n.exact == c.nodes[t as usize].exact => {
                    t
                }
                _ => NONE,
            }
        };
        c.nodes[i].wrapped = wrapped;
    }
    c.summarise();
    Ok(Compiled {
        nodes: c.nodes,
        root,
        unsupported: c.unsupported,
    })
}

/// Refuses the schema at the first `pattern` or `patternProperties` name, anywhere a subschema
/// may stand, that is no ECMA-262 regular expression (see [`pattern::ecma_error`]). Compiling
/// reaches only what the root and its references reach, and a definition no `$ref` names is
/// still the author's schema, broken there as anywhere: the whole text is walked, without
/// recursion (its depth is bounded, not small), and values that are data (`const`, `enum`,
/// `default`) are not read as schemas.
fn refuse_foreign_patterns(schema: &Value) -> Result<(), SchemaError> {
    let mut todo: Vec<(&Value, String)> = vec![(schema, String::new())];
    while let Some((node, ptr)) = todo.pop() {
        let Some(obj) = node.as_object() else {
            continue;
        };
        let written = obj
            .get("pattern")
            .and_then(Value::as_str)
            .map(|source| (child_ptr(&ptr, "pattern"), "pattern", source));
        let names = obj
            .get("patternProperties")
            .and_then(Value::as_object)
            .into_iter()
            .flat_map(Map::keys)
            .map(|name| {
                let at = child_ptr(&child_ptr(&ptr, "patternProperties"), name);
                (at, "patternProperties name", name.as_str())
            });
        for (at, what, source) in written.into_iter().chain(names) {
            if let Some(reason) = pattern::ecma_error(source) {
                return Err(err(
                    &at,
                    format!("{what} {source:?} is no ECMA-262 regular expression: {reason}"),
                ));
            }
        }
        for (key, value) in obj {
            if NAMED_SUBSCHEMAS.contains(&key.as_str()) {
                let at = child_ptr(&ptr, key);
                if let Some(map) = value.as_object() {
                    todo.extend(map.iter().map(|(name, sub)| (sub, child_ptr(&at, name))));
                }
            } else if SUBSCHEMAS.contains(&key.as_str()) {
                let at = child_ptr(&ptr, key);
                match value.as_array() {
                    Some(list) => todo.extend(
                        list.iter()
                            .enumerate()
                            .map(|(i, sub)| (sub, child_ptr(&at, &i.to_string()))),
                    ),
                    None => todo.push((value, at)),
                }
            }
        }
    }
    Ok(())
}

fn err(pointer: &str, message: impl Into<String>) -> SchemaError {
    SchemaError {
        pointer: pointer.to_owned(),
        message: message.into(),
        kind: SchemaErrorKind::Malformed,
    }
}

fn child_ptr(ptr: &str, key: &str) -> String {
    let mut s = String::with_capacity(ptr.len() + key.len() + 1);
    s.push_str(ptr);
    s.push('/');
    push_pointer_token(&mut s, key);
    s
}

fn to_id(n: usize) -> NodeId {
    NodeId::try_from(n).unwrap_or(NONE)
}

fn type_bit(name: &str) -> Option<u8> {
    Some(match name {
        "null" => T_NULL,
        "boolean" => T_BOOL,
        "object" => T_OBJECT,
        "array" => T_ARRAY,
        "string" => T_STRING,
        "number" => T_NUMBER | T_INTEGER,
        "integer" => T_INTEGER,
        _ => return None,
    })
}

/// Type bits in words: `string or null`, `integer`.
pub(crate) fn type_words(types: u8) -> String {
    let mut parts: Vec<&str> = Vec::new();
    for (bit, name) in [
        (T_STRING, "string"),
        (T_OBJECT, "object"),
        (T_ARRAY, "array"),
        (T_BOOL, "boolean"),
    ] {
        if types & bit != 0 {
            parts.push(name);
        }
    }
    if types & T_NUMBER != 0 {
        parts.push("number");
    } else if types & T_INTEGER != 0 {
        parts.push("integer");
    }
    if types & T_NULL != 0 {
        parts.push("null");
    }
    if parts.is_empty() {
        return "nothing".to_owned();
    }
    parts.join(" or ")
}

fn map_keys(map: Option<&Map<String, Value>>) -> impl Iterator<Item = &str> {
    map.into_iter().flat_map(|m| m.keys().map(String::as_str))
}

fn quoted_list<'a>(names: impl IntoIterator<Item = &'a str>) -> String {
    let mut out = String::new();
    for (i, n) in names.into_iter().enumerate() {
        if i > 0 {
            out.push_str(", ");
        }
        out.push_str(&serde_json::Value::String(n.to_owned()).to_string());
    }
    out
}

pub(crate) fn count_words(n: u64, unit: &str) -> String {
    if n == 1 {
        format!("1 {unit}")
    } else {
        format!("{n} {unit}s")
    }
}

impl Compiler<'_> {
    fn unsupported(&mut self, keyword: &str, pointer: &str) {
        self.unsupported.push(Unsupported {
            keyword: keyword.to_owned(),
            pointer: pointer.to_owned(),
        });
    }

    fn compile_at(&mut self, schema: &Value, ptr: &str) -> Result<NodeId, SchemaError> {
        match schema {
            Value::Bool(true) => Ok(TRUE_NODE),
            Value::Bool(false) => Ok(FALSE_NODE),
            Value::Object(obj) => {
                if let Some(&id) = self.memo.get(ptr) {
                    return Ok(id);
                }
                if self.depth as usize > MAX_SCHEMA_DEPTH {
                    return Err(SchemaError {
                        kind: SchemaErrorKind::TooDeep,
                        ..err(ptr, "schema is nested too deeply")
                    });
                }
                let id = to_id(self.nodes.len());
                self.nodes.push(Node::new(ptr));
                self.memo.insert(ptr.to_owned(), id);
                self.depth += 1;
                let node = self.build(obj, ptr);
                self.depth -= 1;
                self.nodes[id as usize] = node?;
                Ok(id)
            }
            _ => Err(err(ptr, "a schema must be an object or a boolean")),
        }
    }

    fn schema_list(
        &mut self,
        v: &Value,
        ptr: &str,
        keyword: &str,
    ) -> Result<Box<[NodeId]>, SchemaError> {
        let kptr = child_ptr(ptr, keyword);
        let Value::Array(items) = v else {
            return Err(err(&kptr, format!("{keyword} must be an array of schemas")));
        };
        if items.is_empty() && keyword != "prefixItems" {
            return Err(err(&kptr, format!("{keyword} must not be empty")));
        }
        let mut ids = Vec::with_capacity(items.len());
        for (i, s) in items.iter().enumerate() {
            ids.push(self.compile_at(s, &child_ptr(&kptr, &i.to_string()))?);
        }
        Ok(ids.into_boxed_slice())
    }

    /// The rule of `patternProperties` (`map`) beside `additional`; each property of
    /// `entries` whose name a pattern surely takes meets that pattern's schema too.
    fn pattern_rule(
        &mut self,
        map: &Map<String, Value>,
        ptr: &str,
        entries: &mut [(&str, NodeId, bool)],
        additional: Additional,
        node: &mut Node,
    ) -> Result<PatternRule, SchemaError> {
        let map_ptr = child_ptr(ptr, "patternProperties");
        let mut patterns = Vec::with_capacity(map.len());
        for (source, sub) in map {
            let id = self.compile_at(sub, &child_ptr(&map_ptr, source))?;
            let pattern = KeyPattern::compile(source);
            if !pattern.runs() {
                // Any key may be its: it is applied to none, and no key is additional.
                self.unsupported("patternProperties", &child_ptr(&map_ptr, source));
                node.exact = false;
            }
            patterns.push((pattern, id));
        }
        let props_ptr = child_ptr(ptr, "properties");
        for (name, id, _) in entries.iter_mut() {
            let mut all = vec![*id];
            for (pattern, sub) in &patterns {
                match pattern.matches(name) {
                    Some(true) => all.push(*sub),
                    Some(false) => {}
                    // Validation may apply it or not: the property alone is checked.
                    None => node.exact = false,
                }
            }
            if all.len() > 1 {
                *id = self.conjunction(all, &child_ptr(&props_ptr, name));
            }
        }
        let mut sets = Vec::new();
        if patterns.len() <= MAX_LISTED_PATTERNS {
            sets = vec![NONE; 1 << patterns.len()];
            for (set, slot) in sets.iter_mut().enumerate().skip(1) {
                let members: Vec<NodeId> = (0..patterns.len())
                    .filter(|i| set & (1 << i) != 0)
                    .map(|i| patterns[i].1)
                    .collect();
                *slot = match members[..] {
                    [one] => one,
                    _ => self.conjunction(members, &map_ptr),
                };
            }
        }
        Ok(PatternRule {
            patterns: patterns.into_boxed_slice(),
            sets: sets.into_boxed_slice(),
            additional,
        })
    }

    /// A node applying every one of `members` to one value (an `allOf` the schema does not
    /// spell out: a member that several `properties` / `patternProperties` entries name).
    fn conjunction(&mut self, members: Vec<NodeId>, ptr: &str) -> NodeId {
        let mut n = Node::new(ptr);
        n.all_of = members.into_boxed_slice();
        let id = to_id(self.nodes.len());
        self.nodes.push(n);
        id
    }

    fn count(v: &Value, ptr: &str, keyword: &str) -> Result<u64, SchemaError> {
        v.as_number()
            .and_then(|n| Decimal::parse(&n.to_string()))
            .filter(|d| !d.as_ref().neg && d.as_ref().is_integer())
            // A count past any a text can reach (`maxLength: 2**64`) bounds nothing more than
            // the largest one does.
            .map(|d| d.to_u64().unwrap_or(u64::MAX))
            .ok_or_else(|| {
                err(
                    &child_ptr(ptr, keyword),
                    format!("{keyword} must be a non-negative integer"),
                )
            })
    }

    #[allow(clippy::too_many_lines)] // one match arm per keyword reads better than a split
    fn build(&mut self, obj: &Map<String, Value>, ptr: &str) -> Result<Node, SchemaError> {
        let mut node = Node::new(ptr);
        if !ptr.is_empty() && obj.contains_key("$id") {
            // An embedded resource changes how `$ref`s inside it resolve; ignore it whole.
            self.unsupported("$id", ptr);
            node.exact = false;
            return Ok(node);
        }
        if self.draft <= Draft::D7 {
            if let Some(r) = obj.get("$ref") {
                self.resolve_ref(r, ptr, &mut node)?;
                return Ok(node);
            }
        }
        let mut properties: Option<&Map<String, Value>> = None;
        let mut additional: Option<&Value> = None;
        let mut required: Vec<&str> = Vec::new();
        let mut pattern_properties: Option<&Map<String, Value>> = None;
        let mut nullable = false;
        let mut string = StringRule {
            min_len: 0,
            max_len: u64::MAX,
            pattern: None,
            format: None,
        };
        let mut number = NumberRule {
            minimum: None,
            maximum: None,
            exclusive_minimum: None,
            exclusive_maximum: None,
            multiple_of: None,
            bounds_expected: String::new(),
            fixed: None,
        };
        let mut multiple_of_decimal = None;
        let mut array = ArrayRule {
            prefix: Box::new([]),
            items: NONE,
            min_items: 0,
            max_items: u64::MAX,
        };
        for (key, v) in obj {
            let kptr = || child_ptr(ptr, key);
            if !self.draft.asserts(key) {
                if key.starts_with("exclusiveM") {
                    // Draft 4's modifier: ignoring it keeps the bound inclusive, which is looser.
                    self.unsupported(key, ptr);
                    node.exact = false;
                }
                continue;
            }
            match key.as_str() {
                "type" => {
                    let names: Vec<&Value> = match v {
                        Value::Array(a) => a.iter().collect(),
                        other => vec![other],
                    };
                    let mut bits = 0;
                    for n in names {
                        bits |= n
                            .as_str()
                            .and_then(type_bit)
                            .ok_or_else(|| err(&kptr(), format!("unknown type {n}")))?;
                    }
                    node.types = bits;
                    if self.draft == Draft::D4 && bits & (T_INTEGER | T_NUMBER) == T_INTEGER {
                        // Draft 4's `integer` takes no `1.0` or `1e2`, which the checker reads
                        // as integers: a pass may be a value validation refuses.
                        node.exact = false;
                    }
                }
                "properties" => {
                    properties = Some(
                        v.as_object()
                            .ok_or_else(|| err(&kptr(), "properties must be an object"))?,
                    );
                }
                "additionalProperties" => additional = Some(v),
                "required" => {
                    let list = v
                        .as_array()
                        .ok_or_else(|| err(&kptr(), "required must be an array"))?;
                    for name in list {
                        let name = name
                            .as_str()
                            .ok_or_else(|| err(&kptr(), "required must list strings"))?;
                        if !required.contains(&name) {
                            required.push(name);
                        }
                    }
                }
                "enum" | "const" => {
                    let (keyword, values) = if key == "enum" {
                        let values = v
                            .as_array()
                            .ok_or_else(|| err(&kptr(), "enum must be an array"))?;
                        ("enum", values.as_slice())
                    } else {
                        ("const", std::slice::from_ref(v))
                    };
                    if node.enumeration.is_some() {
                        // One rule is kept, for both: the other is left to the final
                        // validation, so a pass is no certain match.
                        node.exact = false;
                    }
                    node.enumeration = Some(Box::new(enum_rule(keyword, values)));
                }
                "allOf" => node.all_of = self.schema_list(v, ptr, "allOf")?,
                "anyOf" => node.any_of = self.schema_list(v, ptr, "anyOf")?,
                "oneOf" => node.one_of = self.schema_list(v, ptr, "oneOf")?,
                "items" => {
                    if v.is_array() {
                        // Draft 7 tuple form; 2020-12 spells it prefixItems.
                        self.unsupported("items", ptr);
                        node.exact = false;
                    } else {
                        array.items = self.compile_at(v, &kptr())?;
                    }
                }
                "prefixItems" => array.prefix = self.schema_list(v, ptr, "prefixItems")?,
                "minItems" => array.min_items = Self::count(v, ptr, key)?,
                "maxItems" => array.max_items = Self::count(v, ptr, key)?,
                "minLength" => string.min_len = Self::count(v, ptr, key)?,
                "maxLength" => string.max_len = Self::count(v, ptr, key)?,
                "minimum" | "maximum" | "exclusiveMinimum" | "exclusiveMaximum" => {
                    let Some(n) = v.as_number() else {
                        if v.is_boolean() {
                            // Draft 4 boolean form: ignoring it keeps the bound inclusive,
                            // which is looser.
                            self.unsupported(key, ptr);
                            node.exact = false;
                            continue;
                        }
                        return Err(err(&kptr(), format!("{key} must be a number")));
                    };
                    let d = Decimal::parse(&n.to_string())
                        .ok_or_else(|| err(&kptr(), format!("{key} must be a number")))?;
                    let slot = match key.as_str() {
                        "minimum" => &mut number.minimum,
                        "maximum" => &mut number.maximum,
                        "exclusiveMinimum" => &mut number.exclusive_minimum,
                        _ => &mut number.exclusive_maximum,
                    };
                    *slot = Some(d);
                }
                "multipleOf" => {
                    let text = v
                        .as_number()
                        .map(ToString::to_string)
                        .ok_or_else(|| err(&kptr(), "multipleOf must be a number"))?;
                    let d = Decimal::parse(&text)
                        .ok_or_else(|| err(&kptr(), "multipleOf must be a number"))?;
                    if d.as_ref().neg || d.as_ref().is_zero() {
                        return Err(err(&kptr(), "multipleOf must be greater than 0"));
                    }
                    if let Some(m) = MultipleOf::new(&d) {
                        number.multiple_of = Some((m, text.into()));
                        multiple_of_decimal = Some(d);
                    } else {
                        self.unsupported(key, ptr);
                        node.exact = false;
                    }
                }
                "pattern" => {
                    let src = v
                        .as_str()
                        .ok_or_else(|| err(&kptr(), "pattern must be a string"))?;
                    if let Some(re) = pattern::compile(src) {
                        // The check takes what any dialect matches (`\d` takes `٣`, `.` a
                        // `\r`), so where the dialects differ a pass is no certain match.
                        if !pattern::dialects_agree(src) {
                            node.exact = false;
                        }
                        string.pattern = Some((re, src.into()));
                    } else {
                        self.unsupported(key, ptr);
                        node.exact = false;
                    }
                }
                "format" => {
                    let name = v
                        .as_str()
                        .ok_or_else(|| err(&kptr(), "format must be a string"))?;
                    // Asserted or not, a format leaves the node inexact: the checkers are
                    // lenient where the final validation is strict (a space for `T`, a leap
                    // second, a zone id in an IPv6 address), so a pass may be a value
                    // validation refuses, and no `oneOf` may count it as a certain match.
                    node.exact = false;
                    match Format::from_name(name) {
                        Some(f) => string.format = Some(f),
                        None => self.unsupported(key, ptr),
                    }
                }
                "$ref" => self.resolve_ref(v, ptr, &mut node)?,
                "$defs" | "definitions" => {
                    // Compiled lazily, when a `$ref` reaches them.
                    if !v.is_object() {
                        return Err(err(&kptr(), format!("{key} must be an object")));
                    }
                }
                "$id" => {} // root only: embedded ones returned early above
                "nullable" => {
                    // OpenAPI 3.0: accept null here, so an OpenAPI-style schema is never
                    // stricter than its author meant.
                    self.unsupported(key, ptr);
                    node.exact = false;
                    nullable = v.as_bool() == Some(true);
                }
                "patternProperties" => {
                    pattern_properties = Some(
                        v.as_object()
                            .ok_or_else(|| err(&kptr(), "patternProperties must be an object"))?,
                    );
                }
                LOOSENED_ONE_OF => node.one_of_named = v.as_bool() == Some(true),
                k if ANNOTATIONS.contains(&k) => {}
                _ => {
                    self.unsupported(key, ptr);
                    node.exact = false;
                }
            }
        }

        // Objects.
        let mut entries: Vec<(&str, NodeId, bool)> = Vec::new();
        if let Some(props) = properties {
            let props_ptr = child_ptr(ptr, "properties");
            for (name, sub) in props {
                let id = self.compile_at(sub, &child_ptr(&props_ptr, name))?;
                entries.push((name.as_str(), id, true));
            }
        }
        let additional = match additional {
            None => Additional::Any,
            Some(s) => match self.compile_at(s, &child_ptr(ptr, "additionalProperties"))? {
                FALSE_NODE => Additional::Deny,
                TRUE_NODE => Additional::Any,
                id => Additional::Schema(id),
            },
        };
        let patterns = match pattern_properties {
            Some(map) if !map.is_empty() => {
                Some(self.pattern_rule(map, ptr, &mut entries, additional, &mut node)?)
            }
            _ => None,
        };
        if !entries.is_empty()
            || additional != Additional::Any
            || !required.is_empty()
            || patterns.is_some()
        {
            let mut rule = object_rule(&entries, &required, additional);
            if let Some(patterns) = patterns {
                // The paths that read `additional` take the object as open; the pattern
                // rule holds the real one.
                rule.additional = Additional::Any;
                rule.deny_expected = format!(
                    "{} or names matching {}",
                    rule.deny_expected,
                    quoted_list(map_keys(pattern_properties))
                );
                rule.patterns = Some(Box::new(patterns));
            }
            node.object = Some(Box::new(rule));
        }

        // Arrays, strings, numbers.
        if !array.prefix.is_empty()
            || array.items != NONE
            || array.min_items > 0
            || array.max_items < u64::MAX
        {
            node.array = Some(Box::new(array));
        }
        if string.min_len > 0
            || string.max_len < u64::MAX
            || string.pattern.is_some()
            || string.format.is_some()
        {
            node.string = Some(Box::new(string));
        }
        if number.minimum.is_some()
            || number.maximum.is_some()
            || number.exclusive_minimum.is_some()
            || number.exclusive_maximum.is_some()
            || number.multiple_of.is_some()
        {
            number.bounds_expected = bounds_words(obj);
            number.fixed = number.fixed_rule(multiple_of_decimal.as_ref());
            node.number = Some(Box::new(number));
        }
        if nullable {
            if node.types != T_ALL {
                node.types |= T_NULL;
            }
            if let Some(e) = node.enumeration.as_mut() {
                e.kinds |= T_NULL;
            }
        }
        Ok(node)
    }

    fn resolve_ref(&mut self, v: &Value, ptr: &str, node: &mut Node) -> Result<(), SchemaError> {
        let kptr = child_ptr(ptr, "$ref");
        let r = v
            .as_str()
            .ok_or_else(|| err(&kptr, "$ref must be a string"))?;
        let Some(fragment) = r.strip_prefix('#').and_then(percent_decode) else {
            // Remote references are not fetched.
            self.unsupported("$ref", ptr);
            node.exact = false;
            return Ok(());
        };
        if !fragment.is_empty() && !fragment.starts_with('/') {
            // `#name` anchors.
            self.unsupported("$ref", ptr);
            node.exact = false;
            return Ok(());
        }
        if crosses_embedded_id(self.root, &fragment) {
            self.unsupported("$ref", ptr);
            node.exact = false;
            return Ok(());
        }
        let root = self.root;
        let target = root
            .pointer(&fragment)
            .ok_or_else(|| err(&kptr, format!("unresolvable $ref {r:?}")))?;
        node.reff = self.compile_at(target, &fragment)?;
        Ok(())
    }

    /// Drops `$ref`/`allOf`/`anyOf`/`oneOf` edges that close a cycle on the same instance
    /// value.
    fn cut_cycles(&mut self) {
        const WHITE: u8 = 0;
        const GREY: u8 = 1;
        const BLACK: u8 = 2;
        let n = self.nodes.len();
        let mut color = vec![WHITE; n];
        for start in 0..n {
            if color[start] != WHITE {
                continue;
            }
            // Stack of (node, next edge index).
            let mut stack: Vec<(usize, usize)> = vec![(start, 0)];
            color[start] = GREY;
            while let Some(&mut (u, ref mut next)) = stack.last_mut() {
                let edges = same_value_edges(&self.nodes[u]);
                if *next >= edges.len() {
                    color[u] = BLACK;
                    stack.pop();
                    continue;
                }
                let e = *next;
                *next += 1;
                let v = edges[e] as usize;
                match color[v] {
                    WHITE => {
                        color[v] = GREY;
                        stack.push((v, 0));
                    }
                    GREY => {
                        let node = &mut self.nodes[u];
                        node.exact = false;
                        let pointer = node.pointer.to_string();
                        let keyword = drop_edge(node, e);
                        self.unsupported(keyword, &pointer);
                    }
                    _ => {}
                }
            }
        }
    }

    /// Marks trivial nodes and removes `anyOf` groups that a trivial branch always satisfies.
    fn simplify(&mut self) {
        loop {
            let mut changed = false;
            for i in 0..self.nodes.len() {
                let trivial_branch = self.nodes[i]
                    .any_of
                    .iter()
                    .any(|&b| self.nodes[b as usize].trivial);
                // A dropped edge keeps its inexactness: a branch that is trivial only because
                // its keywords were ignored (`{"not": ...}`) may reject values, so the owner
                // must not count as an exact `oneOf` match once the edge is gone.
                if trivial_branch {
                    let inexact = self.nodes[i]
                        .any_of
                        .iter()
                        .any(|&b| !self.nodes[b as usize].exact);
                    let n = &mut self.nodes[i];
                    n.any_of = Box::new([]);
                    n.exact &= !inexact;
                    changed = true;
                }
                let r = self.nodes[i].reff;
                if r != NONE && self.nodes[r as usize].trivial {
                    let inexact = !self.nodes[r as usize].exact;
                    let n = &mut self.nodes[i];
                    n.reff = NONE;
                    n.exact &= !inexact;
                    changed = true;
                }
                // A trivial member of a conjunction adds nothing but its inexactness.
                let members = &self.nodes[i].all_of;
                if members.iter().any(|&m| self.nodes[m as usize].trivial) {
                    let inexact = members
                        .iter()
                        .any(|&m| self.nodes[m as usize].trivial && !self.nodes[m as usize].exact);
                    let kept: Box<[NodeId]> = members
                        .iter()
                        .copied()
                        .filter(|&m| !self.nodes[m as usize].trivial)
                        .collect();
                    let n = &mut self.nodes[i];
                    n.all_of = kept;
                    n.exact &= !inexact;
                    changed = true;
                }
                let node = &self.nodes[i];
                if !node.trivial && !node.has_conjuncts() && !node.asserts_locally() {
                    self.nodes[i].trivial = true;
                    changed = true;
                }
            }
            if !changed {
                break;
            }
        }
    }

    fn propagate_exactness(&mut self) {
        loop {
            let mut changed = false;
            for i in 0..self.nodes.len() {
                if !self.nodes[i].exact {
                    continue;
                }
                let inexact_child =
                    children(&self.nodes[i]).any(|c| c != NONE && !self.nodes[c as usize].exact);
                if inexact_child {
                    self.nodes[i].exact = false;
                    changed = true;
                }
            }
            if !changed {
                break;
            }
        }
    }

    /// A union without a type of its own read as its branches (`Optional[Pay]`'s inner
    /// union is `object with kind, mail or object with kind, amount`), once each has words:
    /// an outer union's type error then names what it takes.
    fn branches_summary(&self, i: usize) -> Option<Box<str>> {
        let n = &self.nodes[i];
        let branches = if n.any_of.is_empty() {
            &n.one_of
        } else {
            &n.any_of
        };
        let mut words: Vec<&str> = Vec::new();
        for &b in branches.iter() {
            let s = &*self.nodes[b as usize].summary;
            if s.is_empty() {
                return None;
            }
            if !words.contains(&s) {
                words.push(s);
            }
        }
        (!words.is_empty()).then(|| words.join(" or ").into())
    }

    fn summarise(&mut self) {
        for i in 0..self.nodes.len() {
            let s = own_summary(&self.nodes[i]);
            self.nodes[i].summary = s.into();
        }
        // A node that says nothing of its own is described by its first conjunct that does
        // (an `allOf` around a `$ref` reads as the target): to a fixed point, as a conjunct's
        // own description may come from its conjuncts in turn.
        loop {
            let mut changed = false;
            for i in 0..self.nodes.len() {
                if !self.nodes[i].summary.is_empty() {
                    continue;
                }
                let found = self.nodes[i]
                    .conjuncts()
                    .map(|c| &self.nodes[c as usize].summary)
                    .find(|s| !s.is_empty())
                    .cloned()
                    .or_else(|| self.branches_summary(i));
                if let Some(s) = found {
                    self.nodes[i].summary = s;
                    changed = true;
                }
            }
            if !changed {
                break;
            }
        }
        for n in &mut self.nodes {
            if n.summary.is_empty() {
                n.summary = "a value matching the schema".into();
            }
        }
    }
}

/// The `plain` bits of a node without `anyOf` (an owner's are set from its branches').
fn plain_types(n: &Node) -> u8 {
    if n.trivial {
        return T_ALL;
    }
    if !n.any_of.is_empty() {
        return 0;
    }
    own_plain_types(n)
}

/// The `plain` bits of a node's own keywords, `anyOf` aside. An `anyOf` whose branches take
/// one slot each and one of which is plain for the kind cannot fail (that branch lives to the
/// end, and the others are conditional), so it asserts nothing more either.
fn own_plain_types(n: &Node) -> u8 {
    if n.is_false || n.has_conjuncts() || !n.one_of.is_empty() || n.enumeration.is_some() {
        return 0;
    }
    let mut plain = n.types & (T_NULL | T_BOOL);
    if n.object.is_none() {
        plain |= n.types & T_OBJECT;
    }
    if n.array.is_none() {
        plain |= n.types & T_ARRAY;
    }
    if n.string.is_none() {
        plain |= n.types & T_STRING;
    }
    // An integer-only node must see the whole number to tell `1.5` from `1`.
    if n.number.is_none() && n.types & T_NUMBER != 0 {
        plain |= T_NUMBER | T_INTEGER;
    }
    plain
}

/// The `lone` bits of a node.
fn lone_types(n: &Node) -> u8 {
    if n.is_false || n.has_conjuncts() || !n.any_of.is_empty() || !n.one_of.is_empty() {
        return 0;
    }
    match &n.enumeration {
        Some(e) => n.types & e.kinds & (T_NULL | T_BOOL | T_STRING | T_NUMBER | T_INTEGER),
        None => n.types,
    }
}

fn own_summary(node: &Node) -> String {
    if node.is_false {
        return "nothing".to_owned();
    }
    if let Some(e) = &node.enumeration {
        return e.expected.clone();
    }
    // Alternatives of one type differ by a pattern, a format or the fields they need: said,
    // so that `exactly one of string or string` names what tells them apart.
    let detail = match (node.types, node.string.as_deref(), node.object.as_deref()) {
        (T_STRING, Some(rule), _) => match (&rule.pattern, rule.format) {
            (Some((_, source)), _) => {
                Some(format!("string matching {}", cut_to(source, SUMMARY_CHARS)))
            }
            (None, Some(format)) => Some(format!("{} string", format.name())),
            (None, None) => None,
        },
        (T_OBJECT | T_ALL, _, Some(rule)) if !rule.required.is_empty() => Some(format!(
            "object with {}",
            cut_to(&rule.required.join(", "), SUMMARY_CHARS)
        )),
        _ => None,
    };
    if let Some(detail) = detail {
        return detail;
    }
    if node.types != T_ALL {
        return type_words(node.types);
    }
    if node.object.is_some() {
        return "object".to_owned();
    }
    String::new()
}

/// `text`, cut after `max` characters with a `…` to say so: a length a message can quote.
pub(crate) fn cut_to(text: &str, max: usize) -> String {
    match cut_at(text, max) {
        Some(cut) => format!("{}…", &text[..cut]),
        None => text.to_owned(),
    }
}

/// The characters of a pattern or a field list a branch's summary quotes.
const SUMMARY_CHARS: usize = 60;

fn same_value_edges(node: &Node) -> Vec<NodeId> {
    node.conjuncts()
        .chain(node.any_of.iter().copied())
        .chain(node.one_of.iter().copied())
        .collect()
}

/// Removes edge `e` in [`same_value_edges`] order and returns its keyword: `$ref` becomes
/// none, an `allOf` member or a branch becomes `true` (`simplify` then drops it).
fn drop_edge(node: &mut Node, mut e: usize) -> &'static str {
    if node.reff != NONE {
        if e == 0 {
            node.reff = NONE;
            return "$ref";
        }
        e -= 1;
    }
    let groups: [(&mut [NodeId], &'static str); 3] = [
        (&mut node.all_of, "allOf"),
        (&mut node.any_of, "anyOf"),
        (&mut node.one_of, "oneOf"),
    ];
    for (members, keyword) in groups {
        if let Some(m) = members.get_mut(e) {
            *m = TRUE_NODE;
            return keyword;
        }
        e -= members.len();
    }
    "$ref"
}

fn children(node: &Node) -> impl Iterator<Item = NodeId> + '_ {
    let object = node.object.iter().flat_map(|o| {
        let extra = match o.additional {
            Additional::Schema(id) => id,
            _ => NONE,
        };
        let patterns = o.patterns.iter().flat_map(|p| {
            let extra = match p.additional {
                Additional::Schema(id) => id,
                _ => NONE,
            };
            p.patterns
                .iter()
                .map(|(_, id)| *id)
                .chain(p.sets.iter().copied())
                .chain(std::iter::once(extra))
        });
        o.keys
            .iter()
            .map(|k| k.prop)
            .chain(std::iter::once(extra))
            .chain(patterns)
    });
    let array = node
        .array
        .iter()
        .flat_map(|a| a.prefix.iter().copied().chain(std::iter::once(a.items)));
    std::iter::once(node.reff)
        .chain(node.all_of.iter().copied())
        .chain(node.any_of.iter().copied())
        .chain(node.one_of.iter().copied())
        .chain(object)
        .chain(array)
}

fn percent_decode(s: &str) -> Option<String> {
    let b = s.as_bytes();
    let mut out = Vec::with_capacity(b.len());
    let mut i = 0;
    while i < b.len() {
        if b[i] == b'%' {
            let hex = std::str::from_utf8(b.get(i + 1..i + 3)?).ok()?;
            out.push(u8::from_str_radix(hex, 16).ok()?);
            i += 3;
        } else {
            out.push(b[i]);
            i += 1;
        }
    }
    String::from_utf8(out).ok()
}

/// True when a JSON Pointer walks through a subschema (below the root) that declares `$id`.
fn crosses_embedded_id(root: &Value, pointer: &str) -> bool {
    let mut cur = root;
    for token in pointer.split('/').skip(1) {
        let token = token.replace("~1", "/").replace("~0", "~");
        let next = match cur {
            Value::Object(o) => o.get(&token),
            Value::Array(a) => token.parse::<usize>().ok().and_then(|i| a.get(i)),
            _ => None,
        };
        let Some(next) = next else {
            return false;
        };
        if next.get("$id").is_some_and(Value::is_string) {
            return true;
        }
        cur = next;
    }
    false
}

fn enum_rule(keyword: &'static str, values: &[Value]) -> EnumRule {
    let mut kinds = 0;
    let mut strings: Vec<&str> = Vec::new();
    let mut numbers = Vec::new();
    let mut bools = 0;
    let mut containers = Vec::new();
    for v in values {
        match v {
            Value::Null => kinds |= T_NULL,
            Value::Bool(b) => {
                kinds |= T_BOOL;
                bools |= if *b { 2 } else { 1 };
            }
            Value::Number(n) => {
                kinds |= T_NUMBER | T_INTEGER;
                if let Some(d) = Decimal::parse(&n.to_string()) {
                    numbers.push(d);
                }
            }
            Value::String(s) => {
                kinds |= T_STRING;
                strings.push(s);
            }
            Value::Array(_) => {
                kinds |= T_ARRAY;
                containers.push(Canon::from_json(v));
            }
            Value::Object(_) => {
                kinds |= T_OBJECT;
                containers.push(Canon::from_json(v));
            }
        }
    }
    let mut expected = String::new();
    if keyword == "const" {
        expected.push_str("exactly ");
    } else if values.len() == 1 {
        expected.push_str("only ");
    } else {
        expected.push_str("one of ");
    }
    for (i, v) in values.iter().enumerate() {
        if i > 0 {
            expected.push_str(", ");
        }
        if expected.len() > 400 {
            expected.push('…');
            break;
        }
        let _ = write!(expected, "{v}");
    }
    if values.is_empty() {
        "no value (the enum is empty)".clone_into(&mut expected);
    }
    EnumRule {
        keyword,
        kinds,
        strings: Trie::build(strings.iter().map(|s| (s.as_bytes(), true))),
        numbers,
        bools,
        containers,
        expected,
    }
}

fn object_rule(
    entries: &[(&str, NodeId, bool)],
    required: &[&str],
    additional: Additional,
) -> ObjectRule {
    let mut names: Vec<(&str, bool)> = entries.iter().map(|&(n, _, live)| (n, live)).collect();
    let mut keys: Vec<KeyInfo> = entries
        .iter()
        .map(|&(_, id, _)| KeyInfo {
            prop: id,
            required_bit: u32::MAX,
        })
        .collect();
    for (bit, name) in required.iter().enumerate() {
        let bit = u32::try_from(bit).unwrap_or(u32::MAX);
        if let Some(i) = names.iter().position(|(n, _)| n == name) {
            keys[i].required_bit = bit;
        } else {
            names.push((name, false));
            keys.push(KeyInfo {
                prop: NONE,
                required_bit: bit,
            });
        }
    }
    let trie = Trie::build(names.iter().map(|&(n, live)| (n.as_bytes(), live)));
    let allowed: Vec<&str> = entries.iter().map(|&(n, _, _)| n).collect();
    let deny_expected = if allowed.is_empty() {
        "no properties".to_owned()
    } else {
        format!(
            "no properties other than {}",
            quoted_list(allowed.iter().copied())
        )
    };
    let required_expected = format!(
        "required properties {}",
        quoted_list(required.iter().copied())
    );
    ObjectRule {
        trie,
        patterns: None,
        keys,
        names: names.iter().map(|&(n, _)| n.as_bytes().into()).collect(),
        additional,
        required: required.iter().map(|&s| s.into()).collect(),
        deny_expected,
        required_expected,
    }
}

/// `a == b` for the short byte strings of property names, inline rather than a `memcmp` call:
/// up to 16 bytes, two word reads of each (overlapping when the length is not a word's), at
/// the same cost for every length; a loop over the bytes cost about 40 instructions a key.
#[inline]
fn same_bytes(a: &[u8], b: &[u8]) -> bool {
    let n = a.len();
    if n != b.len() {
        return false;
    }
    match n {
        0 => true,
        1..=3 => a[0] == b[0] && a[n / 2] == b[n / 2] && a[n - 1] == b[n - 1],
        4..=7 => word::<4>(a, 0) == word::<4>(b, 0) && word::<4>(a, n - 4) == word::<4>(b, n - 4),
        8..=16 => word::<8>(a, 0) == word::<8>(b, 0) && word::<8>(a, n - 8) == word::<8>(b, n - 8),
        _ => a == b,
    }
}

/// The `N` bytes of `s` from `at` (`at + N` is within `s`).
#[inline(always)]
fn word<const N: usize>(s: &[u8], at: usize) -> [u8; N] {
    s.get(at..)
        .and_then(<[u8]>::first_chunk::<N>)
        .copied()
        .unwrap_or([0; N])
}

impl ObjectRule {
    /// Whether entry `guess` names a property (and can be expected next).
    #[inline]
    pub fn names_property(&self, guess: u32) -> bool {
        self.keys
            .get(guess as usize)
            .is_some_and(|k| k.prop != NONE)
    }

    /// Entry `guess` when it is a property named exactly `key`: then it is the entry a trie
    /// lookup of `key` finds, as property names are distinct.
    #[inline]
    pub fn guessed(&self, guess: u32, key: &[u8]) -> Option<u32> {
        let name = self.names.get(guess as usize)?;
        (self.names_property(guess) && same_bytes(name, key)).then_some(guess)
    }

    /// Whether the name of entry `guess` continues with `piece` at byte `at`.
    #[inline]
    pub fn continues(&self, guess: u32, at: usize, piece: &[u8]) -> bool {
        self.names
            .get(guess as usize)
            .and_then(|n| n.get(at..at + piece.len()))
            .is_some_and(|n| same_bytes(n, piece))
    }
}

fn bounds_words(obj: &Map<String, Value>) -> String {
    let mut parts: Vec<String> = Vec::new();
    for (key, op) in [
        ("minimum", ">="),
        ("exclusiveMinimum", ">"),
        ("maximum", "<="),
        ("exclusiveMaximum", "<"),
    ] {
        if let Some(n) = obj.get(key).and_then(Value::as_number) {
            parts.push(format!("{op} {n}"));
        }
    }
    if parts.is_empty() {
        "a number".to_owned()
    } else {
        format!("a number {}", parts.join(" and "))
    }
}

/// Helper for callers that describe counts (`at most 5 items`).
pub(crate) fn at_most(n: u64, unit: &str) -> String {
    format!("at most {}", count_words(n, unit))
}

/// Helper for callers that describe counts (`at least 1 item`).
pub(crate) fn at_least(n: u64, unit: &str) -> String {
    format!("at least {}", count_words(n, unit))
}

#[cfg(test)]
mod tests {
    use super::same_bytes;

    #[test]
    fn same_bytes_is_slice_equality_at_every_length() {
        let bytes: Vec<u8> = (b'a'..=b'z').chain(b'0'..=b'9').collect();
        for n in 0..=bytes.len() {
            let x = &bytes[..n];
            let copy = x.to_vec();
            assert!(same_bytes(x, &copy), "{n} bytes");
            if n > 0 {
                assert!(
                    !same_bytes(x, &bytes[..n - 1]),
                    "{n} bytes against a prefix"
                );
                let shifted = bytes.get(1..=n).unwrap_or(&bytes[1..]);
                assert!(!same_bytes(x, shifted), "{n} bytes against a shift");
            }
            for i in 0..n {
                let mut y = x.to_vec();
                y[i] ^= 0x20;
                assert!(!same_bytes(x, &y), "{n} bytes, differing at {i}");
            }
        }
    }
}
