//! The shared, sandboxed template environment of defaults (spec 2.6), lookups (spec 2.7) and
//! workflow conditions and actions (spec 4.5).
//!
//! Every render is bounded, so a hostile template fails with an error instead of hanging or
//! exhausting memory:
//!
//! - **instructions**: fuel (100,000 instructions) and a recursion limit;
//! - **wall-clock time**: a deadline ([`RENDER_BUDGET`]) checked by every operator, filter, test,
//!   function and output of the template;
//! - **memory**: every string a template builds is at most [`MAX_TEMPLATE_STRING`] bytes and
//!   every sequence at most [`MAX_TEMPLATE_ITEMS`] items, checked *before* it is built; the
//!   output is at most the caller's limit.
//!
//! The memory bound is total because every way a template has to build a value goes through a
//! check: the template is compiled by minijinja, then its instructions are rewritten so that the
//! operators that build strings or sequences (`~`, `+`, `*`, `in`, which stringifies) call checked
//! functions, and raw text is emitted through the same checked formatter as `{{ }}`; every
//! filter, test and global function is wrapped by a check of its arguments (what it may turn into
//! text) and of its result. The constructs that could build values out of reach of these checks
//! are refused when the template is saved: blocks that capture output (`{% set x %}...{% endset %}`,
//! `{% filter %}`, macros and `{% call %}`), recursive loops, `namespace()` (a mutable, possibly
//! cyclic object), argument splats (`f(*a, *b)`: one instruction pushing every item of many
//! sequences), template inheritance and includes.
//!
//! Part of `metadata` (layer 4 of `scripts/check-structure`): it may import only what `metadata`
//! may (see `metadata`'s module documentation).

use std::cell::RefCell;
use std::collections::BTreeMap;
use std::sync::{Arc, LazyLock};
use std::time::{Duration, Instant};

use chrono::{DateTime, Datelike, NaiveDateTime, Timelike, Utc};
use minijinja::machinery::{CompiledTemplate, Instruction, Instructions};
use minijinja::value::{Enumerator, Kwargs, Object, ObjectRepr, Rest, Value, ValueKind};
use minijinja::{AutoEscape, Environment, Error as JinjaError, ErrorKind, Expression, State};
use parking_lot::RwLock;

use super::datefmt;

/// Longest template source accepted (api.md limits).
pub const MAX_TEMPLATE_LEN: usize = 10_000;
/// Longest string a template may build (any intermediate value, and any one output piece).
pub const MAX_TEMPLATE_STRING: usize = 256 * 1024;
/// Most items a sequence built by a template may have.
pub const MAX_TEMPLATE_ITEMS: usize = 100_000;
/// Wall-clock time the renders of one unit of work (a change, a lookup) may take in all, across
/// all its templates and attempts (see `Docmeta::write`).
pub const RENDER_BUDGET: Duration = Duration::from_secs(2);
/// Instructions one render may execute.
const FUEL: u64 = 100_000;
/// Names of the checked operators; templates may not use names with this prefix.
const RESERVED: &str = "__docmeta_";
const CONCAT: &str = "__docmeta_concat";
const ADD: &str = "__docmeta_add";
const MUL: &str = "__docmeta_mul";
const IN: &str = "__docmeta_in";
/// `LOOP_FLAG_RECURSIVE` of minijinja's instructions (not re-exported).
const LOOP_FLAG_RECURSIVE: u8 = 2;

/// Why a template could not be compiled or rendered.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TemplateError(pub String);

impl std::fmt::Display for TemplateError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.0)
    }
}

/// One environment shared by every template of a [`crate::Docmeta`].
pub struct TemplateEngine {
    /// The filters, functions and limits every render runs with (never changed after `new`).
    env: Environment<'static>,
    /// Compiled templates by source, each in an environment of its own, so that no lock is
    /// held while a template renders.
    cache: RwLock<rustc_hash::FxHashMap<String, Arc<Environment<'static>>>>,
    budget: Duration,
}

/// The name of the one template of each cached environment.
const NAME: &str = "template";

/// Distinct compiled templates kept before the cache starts over.
const MAX_CACHED_TEMPLATES: usize = 10_000;

impl std::fmt::Debug for TemplateEngine {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("TemplateEngine").finish_non_exhaustive()
    }
}

impl Default for TemplateEngine {
    fn default() -> Self {
        Self::new()
    }
}

/// True when `source` has no template syntax and is used literally (spec 2.6).
pub fn is_literal(source: &str) -> bool {
    !(source.contains("{{") || source.contains("{%") || source.contains("{#"))
}

/// The limits of the render running in this thread.
struct Budget {
    deadline: Instant,
    budget: Duration,
    emitted: usize,
    max_output: usize,
}

thread_local! {
    static BUDGET: RefCell<Option<Budget>> = const { RefCell::new(None) };
}

fn refuse(message: impl Into<String>) -> JinjaError {
    JinjaError::new(ErrorKind::InvalidOperation, message.into())
}

fn too_long() -> JinjaError {
    refuse(format!(
        "the template builds a string longer than {MAX_TEMPLATE_STRING} bytes"
    ))
}

fn too_many() -> JinjaError {
    refuse(format!(
        "the template builds a sequence of more than {MAX_TEMPLATE_ITEMS} items"
    ))
}

/// Fails once the render has used its wall-clock budget.
fn check_deadline() -> Result<(), JinjaError> {
    BUDGET.with(|b| match &*b.borrow() {
        Some(b) if Instant::now() > b.deadline => Err(refuse(format!(
            "the template ran past the render budget ({} ms for all the templates of one change)",
            b.budget.as_millis()
        ))),
        _ => Ok(()),
    })
}

/// An upper bound of the length of `value` rendered as text, or `cap + 1` when it is over `cap`
/// (counting stops there). Containers count their items and separators; nesting deeper than 32
/// counts as too long.
fn text_len(value: &Value, cap: usize) -> usize {
    fn walk(value: &Value, cap: usize, depth: u32, total: &mut usize) {
        if *total > cap {
            return;
        }
        if depth > 32 {
            *total = cap + 1;
            return;
        }
        match value.kind() {
            ValueKind::Undefined | ValueKind::None => *total += 4,
            ValueKind::String => *total += value.as_str().map_or(0, str::len),
            ValueKind::Bytes => *total += value.as_bytes().map_or(0, |b| b.len() * 4 + 3),
            ValueKind::Seq | ValueKind::Map | ValueKind::Iterable => {
                *total += 2;
                let is_map = value.kind() == ValueKind::Map;
                let Ok(items) = value.try_iter() else {
                    return;
                };
                for (n, item) in items.enumerate() {
                    if *total > cap || n >= MAX_TEMPLATE_ITEMS {
                        *total = cap + 1;
                        return;
                    }
                    *total += 2;
                    if is_map {
                        let v = value.get_item(&item).unwrap_or_default();
                        *total += 2;
                        walk(&v, cap, depth + 1, total);
                    }
                    walk(&item, cap, depth + 1, total);
                }
            }
            // Numbers, booleans and docmeta's own objects render as short text.
            _ => *total += value.to_string().len(),
        }
    }
    let mut total = 0;
    walk(value, cap, 0, &mut total);
    total.min(cap + 1)
}

/// The number of items of a sequence, map or iterable (counting stops past the limit), or
/// `None` for other values.
fn item_count(value: &Value) -> Option<usize> {
    match value.kind() {
        ValueKind::Seq | ValueKind::Map | ValueKind::Iterable => Some(match value.len() {
            Some(n) => n,
            None => value
                .try_iter()
                .map_or(0, |i| i.take(MAX_TEMPLATE_ITEMS + 1).count()),
        }),
        _ => None,
    }
}

/// Refuses a value a template built when it is over the limits.
fn check_built(value: &Value) -> Result<(), JinjaError> {
    if let Some(s) = value.as_str() {
        if s.len() > MAX_TEMPLATE_STRING {
            return Err(too_long());
        }
    } else if item_count(value).is_some_and(|n| n > MAX_TEMPLATE_ITEMS) {
        return Err(too_many());
    }
    Ok(())
}

fn check_text(values: &[&Value]) -> Result<(), JinjaError> {
    let mut total = 0usize;
    for v in values {
        total += text_len(v, MAX_TEMPLATE_STRING);
        if total > MAX_TEMPLATE_STRING {
            return Err(too_long());
        }
    }
    Ok(())
}

/// The unchecked operators, evaluated after their operands were checked (minijinja's own
/// semantics: numbers, strings, sequences).
struct Operators {
    concat: Expression<'static, 'static>,
    add: Expression<'static, 'static>,
    mul: Expression<'static, 'static>,
    contains: Expression<'static, 'static>,
}

static OPERATOR_ENV: LazyLock<Environment<'static>> = LazyLock::new(Environment::empty);
static OPERATORS: LazyLock<Option<Operators>> = LazyLock::new(|| {
    let env: &'static Environment<'static> = &OPERATOR_ENV;
    Some(Operators {
        concat: env.compile_expression("a ~ b").ok()?,
        add: env.compile_expression("a + b").ok()?,
        mul: env.compile_expression("a * b").ok()?,
        contains: env.compile_expression("a in b").ok()?,
    })
});

fn operate(
    pick: impl Fn(&Operators) -> &Expression<'static, 'static>,
    a: Value,
    b: Value,
) -> Result<Value, JinjaError> {
    let ops = OPERATORS
        .as_ref()
        .ok_or_else(|| refuse("the template operators are unavailable"))?;
    let out = pick(ops).eval(minijinja::context! { a => a, b => b })?;
    check_built(&out)?;
    Ok(out)
}

fn op_concat(a: Value, b: Value) -> Result<Value, JinjaError> {
    check_deadline()?;
    check_text(&[&a, &b])?;
    operate(|o| &o.concat, a, b)
}

fn is_sequence(v: &Value) -> bool {
    matches!(v.kind(), ValueKind::Seq | ValueKind::Iterable)
}

fn op_add(a: Value, b: Value) -> Result<Value, JinjaError> {
    check_deadline()?;
    if is_sequence(&a) && is_sequence(&b) {
        let n = item_count(&a).unwrap_or(0) + item_count(&b).unwrap_or(0);
        if n > MAX_TEMPLATE_ITEMS {
            return Err(too_many());
        }
    } else if a.kind() == ValueKind::String || b.kind() == ValueKind::String {
        check_text(&[&a, &b])?;
    }
    operate(|o| &o.add, a, b)
}

fn op_mul(a: Value, b: Value) -> Result<Value, JinjaError> {
    check_deadline()?;
    for (x, n) in [(&a, &b), (&b, &a)] {
        let times = n.as_i64().unwrap_or(0).max(0).unsigned_abs();
        let times = usize::try_from(times).unwrap_or(usize::MAX);
        if let Some(s) = x.as_str()
            && s.len().saturating_mul(times) > MAX_TEMPLATE_STRING
        {
            return Err(too_long());
        }
        if is_sequence(x) && item_count(x).unwrap_or(0).saturating_mul(times) > MAX_TEMPLATE_ITEMS {
            return Err(too_many());
        }
    }
    operate(|o| &o.mul, a, b)
}

fn op_in(a: Value, b: Value) -> Result<Value, JinjaError> {
    check_deadline()?;
    // `a in "text"` turns `a` into text.
    if b.kind() == ValueKind::String {
        check_text(&[&a])?;
    }
    operate(|o| &o.contains, a, b)
}

/// Filters that work on sequences as such (they do not turn their arguments into text).
const SEQUENCE_FILTERS: [&str; 30] = [
    "length",
    "count",
    "dictsort",
    "items",
    "default",
    "d",
    "abs",
    "int",
    "float",
    "attr",
    "round",
    "first",
    "last",
    "min",
    "max",
    "sort",
    "list",
    "bool",
    "slice",
    "batch",
    "sum",
    "select",
    "selectattr",
    "reject",
    "rejectattr",
    "map",
    "groupby",
    "unique",
    "chain",
    "zip",
];

/// Checks a filter's arguments before it runs: what it may turn into text, and the parameters
/// that make its result grow (`join`'s separator, `replace`'s occurrences, `indent`'s width...).
fn check_filter_arguments(name: &str, args: &[Value]) -> Result<(), JinjaError> {
    let arg = |i: usize| args.get(i).filter(|v| !v.is_kwargs());
    let number = |i: usize| {
        arg(i)
            .and_then(Value::as_i64)
            .unwrap_or(0)
            .max(0)
            .unsigned_abs()
    };
    let number = |i: usize| usize::try_from(number(i)).unwrap_or(usize::MAX);
    match name {
        "join" => {
            let sep = arg(1).map_or(0, |s| text_len(s, MAX_TEMPLATE_STRING));
            let mut total = 0usize;
            if let Some(seq) = arg(0)
                && let Ok(items) = seq.try_iter()
            {
                for (n, item) in items.enumerate() {
                    if n >= MAX_TEMPLATE_ITEMS {
                        return Err(too_many());
                    }
                    total = total
                        .saturating_add(text_len(&item, MAX_TEMPLATE_STRING))
                        .saturating_add(sep);
                    if total > MAX_TEMPLATE_STRING {
                        return Err(too_long());
                    }
                }
            }
            Ok(())
        }
        "replace" => {
            check_text(&args.iter().collect::<Vec<_>>())?;
            let text = arg(0).map(ToString::to_string).unwrap_or_default();
            let from = arg(1).map(ToString::to_string).unwrap_or_default();
            let to = arg(2).map_or(0, |v| text_len(v, MAX_TEMPLATE_STRING));
            let occurrences = if from.is_empty() {
                text.chars().count() + 1
            } else {
                text.matches(from.as_str()).count()
            };
            if text.len().saturating_add(occurrences.saturating_mul(to)) > MAX_TEMPLATE_STRING {
                return Err(too_long());
            }
            Ok(())
        }
        "indent" => {
            check_text(&args.iter().collect::<Vec<_>>())?;
            let text = arg(0).map(ToString::to_string).unwrap_or_default();
            let width = match arg(1) {
                Some(w) if w.kind() == ValueKind::String => w.as_str().map_or(0, str::len),
                Some(_) => number(1),
                None => 4,
            };
            let lines = text.lines().count() + 1;
            if text.len().saturating_add(lines.saturating_mul(width)) > MAX_TEMPLATE_STRING {
                return Err(too_long());
            }
            Ok(())
        }
        "center" if number(1) > MAX_TEMPLATE_STRING => Err(too_long()),
        "batch" | "slice" if number(1) > MAX_TEMPLATE_ITEMS => Err(too_many()),
        "format" => {
            let format = arg(0).map(ToString::to_string).unwrap_or_default();
            check_text(&[arg(0).unwrap_or(&Value::UNDEFINED)])?;
            let widest = args
                .iter()
                .skip(1)
                .map(|a| text_len(a, MAX_TEMPLATE_STRING))
                .max()
                .unwrap_or(0);
            let slots = format.matches('%').count();
            if format.len().saturating_add(slots.saturating_mul(widest)) > MAX_TEMPLATE_STRING {
                return Err(too_long());
            }
            Ok(())
        }
        "sum" => check_text(&args.iter().collect::<Vec<_>>()),
        // A sequence is reversed as such; anything else as text.
        "reverse" if arg(0).is_some_and(is_sequence) => Ok(()),
        "date" | "time" => {
            // A format code renders as at most 32 characters.
            if arg(1).map_or(0, |f| text_len(f, MAX_TEMPLATE_STRING)) > MAX_TEMPLATE_STRING / 32 {
                return Err(too_long());
            }
            Ok(())
        }
        name if SEQUENCE_FILTERS.contains(&name) => Ok(()),
        _ => check_text(&args.iter().collect::<Vec<_>>()),
    }
}

/// minijinja's filters (builtins feature, without json and urlencode), wrapped by the sandbox.
fn builtin_filters() -> Vec<(&'static str, Value)> {
    use minijinja::filters as f;
    vec![
        ("safe", Value::from_function(f::safe)),
        ("escape", Value::from_function(f::escape)),
        ("e", Value::from_function(f::escape)),
        ("lower", Value::from_function(f::lower)),
        ("upper", Value::from_function(f::upper)),
        ("title", Value::from_function(f::title)),
        ("capitalize", Value::from_function(f::capitalize)),
        ("replace", Value::from_function(f::replace)),
        ("length", Value::from_function(f::length)),
        ("count", Value::from_function(f::length)),
        ("dictsort", Value::from_function(f::dictsort)),
        ("items", Value::from_function(f::items)),
        ("reverse", Value::from_function(f::reverse)),
        ("trim", Value::from_function(f::trim)),
        ("join", Value::from_function(f::join)),
        ("split", Value::from_function(f::split)),
        ("lines", Value::from_function(f::lines)),
        ("default", Value::from_function(f::default)),
        ("d", Value::from_function(f::default)),
        ("round", Value::from_function(f::round)),
        ("abs", Value::from_function(f::abs)),
        ("int", Value::from_function(f::int)),
        ("float", Value::from_function(f::float)),
        ("attr", Value::from_function(f::attr)),
        ("first", Value::from_function(f::first)),
        ("last", Value::from_function(f::last)),
        ("min", Value::from_function(f::min)),
        ("max", Value::from_function(f::max)),
        ("sort", Value::from_function(f::sort)),
        ("list", Value::from_function(f::list)),
        ("string", Value::from_function(f::string)),
        ("bool", Value::from_function(f::bool)),
        ("batch", Value::from_function(f::batch)),
        ("slice", Value::from_function(f::slice)),
        ("sum", Value::from_function(f::sum)),
        ("indent", Value::from_function(f::indent)),
        ("select", Value::from_function(f::select)),
        ("reject", Value::from_function(f::reject)),
        ("selectattr", Value::from_function(f::selectattr)),
        ("rejectattr", Value::from_function(f::rejectattr)),
        ("map", Value::from_function(f::map)),
        ("groupby", Value::from_function(f::groupby)),
        ("unique", Value::from_function(f::unique)),
        ("chain", Value::from_function(f::chain)),
        ("zip", Value::from_function(f::zip)),
        ("pprint", Value::from_function(f::pprint)),
        ("format", Value::from_function(f::format)),
        ("date", Value::from_function(date_filter)),
        ("time", Value::from_function(time_filter)),
    ]
}

/// The positional arguments followed by the keyword arguments, as minijinja passes them on
/// (every keyword is marked used here; the wrapped function checks them).
fn with_kwargs(args: Rest<Value>, kwargs: &Kwargs) -> Result<Vec<Value>, JinjaError> {
    let mut args = args.0;
    let pairs = kwargs
        .args()
        .map(|k| Ok((k.to_owned(), kwargs.get::<Value>(k)?)))
        .collect::<Result<Vec<_>, JinjaError>>()?;
    if !pairs.is_empty() {
        args.push(Value::from(Kwargs::from_iter(pairs)));
    }
    Ok(args)
}

/// Registers `original` as the filter `name`, with its arguments checked before it runs and
/// its result after.
fn add_checked_filter(env: &mut Environment<'static>, name: &'static str, original: Value) {
    env.add_filter(
        name,
        move |state: &mut State, args: Rest<Value>, kwargs: Kwargs| -> Result<Value, JinjaError> {
            check_deadline()?;
            let args = with_kwargs(args, &kwargs)?;
            check_filter_arguments(name, &args)?;
            let out = original.call(state, &args)?;
            check_built(&out)?;
            Ok(out)
        },
    );
}

/// Registers the test `name` with the text its arguments turn into checked.
fn add_checked_test(env: &mut Environment<'static>, name: &'static str, original: Value) {
    env.add_test(
        name,
        move |state: &mut State, args: Rest<Value>, kwargs: Kwargs| -> Result<bool, JinjaError> {
            check_deadline()?;
            let args = with_kwargs(args, &kwargs)?;
            check_text(&args.iter().collect::<Vec<_>>())?;
            Ok(original.call(state, &args)?.is_true())
        },
    );
}

/// Registers the global function `name` with its result checked.
fn add_checked_function(env: &mut Environment<'static>, name: &'static str, original: Value) {
    env.add_function(
        name,
        move |state: &mut State, args: Rest<Value>, kwargs: Kwargs| -> Result<Value, JinjaError> {
            check_deadline()?;
            let args = with_kwargs(args, &kwargs)?;
            let out = original.call(state, &args)?;
            check_built(&out)?;
            Ok(out)
        },
    );
}

impl TemplateEngine {
    /// A fresh environment with docmeta's filters and limits.
    pub fn new() -> Self {
        Self::with_budget(RENDER_BUDGET)
    }

    /// An environment whose renders may take `budget` of wall-clock time (tests use a short one).
    pub fn with_budget(budget: Duration) -> Self {
        let mut env = Environment::new();
        env.set_auto_escape_callback(|_| AutoEscape::None);
        env.set_fuel(Some(FUEL));
        env.set_recursion_limit(64);
        for (name, original) in builtin_filters() {
            add_checked_filter(&mut env, name, original);
        }
        use minijinja::tests as t;
        add_checked_test(
            &mut env,
            "startingwith",
            Value::from_function(t::is_startingwith),
        );
        add_checked_test(
            &mut env,
            "endingwith",
            Value::from_function(t::is_endingwith),
        );
        add_checked_test(&mut env, "in", Value::from_function(t::is_in));
        use minijinja::functions as f;
        add_checked_function(&mut env, "range", Value::from_function(f::range));
        add_checked_function(&mut env, "dict", Value::from_function(f::dict));
        env.remove_global("namespace");
        env.remove_global("debug");
        env.add_function(CONCAT, op_concat);
        env.add_function(ADD, op_add);
        env.add_function(MUL, op_mul);
        env.add_function(IN, op_in);
        // Every `{{ }}` and (rewritten) raw text: autoescaping is off, so a value is written as
        // its text, counted exactly against the output limit.
        env.set_formatter(|out, _state, value| {
            check_deadline()?;
            if text_len(value, MAX_TEMPLATE_STRING) > MAX_TEMPLATE_STRING {
                return Err(too_long());
            }
            let owned;
            let text = match value.as_str() {
                Some(s) => s,
                None => {
                    owned = value.to_string();
                    owned.as_str()
                }
            };
            BUDGET.with(|b| {
                if let Some(b) = &mut *b.borrow_mut() {
                    b.emitted += text.len();
                    if b.emitted > b.max_output {
                        return Err(JinjaError::new(
                            ErrorKind::WriteFailure,
                            "template output limit",
                        ));
                    }
                }
                Ok(())
            })?;
            out.write_str(text).map_err(JinjaError::from)
        });
        TemplateEngine {
            env,
            cache: RwLock::default(),
            budget,
        }
    }

    /// Checks that `source` compiles and uses only what the sandbox allows (without rendering
    /// it).
    pub fn check(&self, source: &str) -> Result<(), TemplateError> {
        if source.len() > MAX_TEMPLATE_LEN {
            return Err(TemplateError(format!(
                "template is longer than {MAX_TEMPLATE_LEN} characters"
            )));
        }
        if is_literal(source) {
            return Ok(());
        }
        let compiled = self.compile(source)?;
        let template = compiled
            .get_template(NAME)
            .map_err(|e| TemplateError(format!("invalid template: {}", describe(&e))))?;
        sandbox(minijinja::machinery::get_compiled_template(&template)).map(drop)
    }

    /// The compiled form of `source` (minijinja's own instructions, not yet sandboxed), from
    /// the cache or compiled now.
    fn compile(&self, source: &str) -> Result<Arc<Environment<'static>>, TemplateError> {
        if let Some(compiled) = self.cache.read().get(source) {
            return Ok(compiled.clone());
        }
        let mut env = Environment::empty();
        env.add_template_owned(NAME, django_filter_arguments(source))
            .map_err(|e| TemplateError(format!("invalid template: {}", describe(&e))))?;
        let compiled = Arc::new(env);
        let mut cache = self.cache.write();
        if cache.len() >= MAX_CACHED_TEMPLATES {
            cache.clear();
        }
        cache.insert(source.to_owned(), compiled.clone());
        Ok(compiled)
    }

    /// The wall-clock time the renders of one unit of work may take in all.
    pub fn budget(&self) -> Duration {
        self.budget
    }

    /// Renders `source` with `context`; output beyond `max_output` bytes, a value beyond
    /// [`MAX_TEMPLATE_STRING`] or a render beyond the time budget is an error.
    pub fn render(
        &self,
        source: &str,
        context: Value,
        max_output: usize,
    ) -> Result<String, TemplateError> {
        self.render_until(source, context, max_output, Instant::now() + self.budget)
    }

    /// [`render`](Self::render), stopped at `deadline` (what is left of the budget of the unit
    /// of work it renders for).
    pub fn render_until(
        &self,
        source: &str,
        context: Value,
        max_output: usize,
        deadline: Instant,
    ) -> Result<String, TemplateError> {
        if is_literal(source) {
            return Ok(source.to_owned());
        }
        if source.len() > MAX_TEMPLATE_LEN {
            return Err(TemplateError(format!(
                "template is longer than {MAX_TEMPLATE_LEN} characters"
            )));
        }
        let compiled = self.compile(source)?;
        let template = compiled
            .get_template(NAME)
            .map_err(|e| TemplateError(format!("invalid template: {}", describe(&e))))?;
        let instructions = sandbox(minijinja::machinery::get_compiled_template(&template))?;
        let previous = BUDGET.with(|b| {
            b.borrow_mut().replace(Budget {
                deadline: deadline.min(Instant::now() + self.budget),
                budget: self.budget,
                emitted: 0,
                max_output,
            })
        });
        let mut text = String::new();
        let result = {
            let mut out = minijinja::machinery::make_string_output(&mut text);
            let blocks = BTreeMap::new();
            minijinja::machinery::eval(
                &self.env,
                &instructions,
                context,
                &blocks,
                &mut out,
                AutoEscape::None,
            )
            .map(drop)
        };
        BUDGET.with(|b| *b.borrow_mut() = previous);
        result.map_err(|e| {
            if e.kind() == ErrorKind::WriteFailure {
                TemplateError(format!("template output is longer than {max_output} bytes"))
            } else {
                TemplateError(format!("template failed: {}", describe(&e)))
            }
        })?;
        if text.len() > max_output {
            return Err(TemplateError(format!(
                "template output is longer than {max_output} bytes"
            )));
        }
        Ok(text)
    }
}

/// Rewrites a compiled template's instructions into the sandbox's (see the module docs), or
/// refuses what the sandbox does not allow.
fn sandbox<'s>(compiled: &CompiledTemplate<'s>) -> Result<Instructions<'s>, TemplateError> {
    if !compiled.blocks.is_empty() {
        return Err(unsupported("blocks"));
    }
    let old = &compiled.instructions;
    let mut count = 0u32;
    while old.get(count).is_some() {
        count += 1;
    }
    // Where each old instruction lands: raw text becomes two instructions.
    let mut target = Vec::with_capacity(count as usize + 1);
    let mut next = 0u32;
    for i in 0..count {
        target.push(next);
        next += match old.get(i) {
            Some(Instruction::EmitRaw(_)) => 2,
            _ => 1,
        };
    }
    target.push(next);
    let to = |t: &u32| target.get(*t as usize).copied().unwrap_or(next);
    let mut new = Instructions::new(old.name(), old.source());
    for i in 0..count {
        let Some(instruction) = old.get(i) else { break };
        let line = u16::try_from(old.get_line(i).unwrap_or(0)).unwrap_or(u16::MAX);
        let replaced = match instruction {
            Instruction::EmitRaw(text) => {
                new.add_with_line(Instruction::LoadConst(Value::from(*text)), line);
                Instruction::Emit
            }
            Instruction::StringConcat => Instruction::CallFunction(CONCAT, Some(2)),
            Instruction::Add => Instruction::CallFunction(ADD, Some(2)),
            Instruction::Mul => Instruction::CallFunction(MUL, Some(2)),
            Instruction::In => Instruction::CallFunction(IN, Some(2)),
            Instruction::Jump(t) => Instruction::Jump(to(t)),
            Instruction::JumpIfFalse(t) => Instruction::JumpIfFalse(to(t)),
            Instruction::JumpIfFalseOrPop(t) => Instruction::JumpIfFalseOrPop(to(t)),
            Instruction::JumpIfTrueOrPop(t) => Instruction::JumpIfTrueOrPop(to(t)),
            Instruction::Iterate(t) => Instruction::Iterate(to(t)),
            Instruction::PushLoop(flags) if flags & LOOP_FLAG_RECURSIVE != 0 => {
                return Err(unsupported("recursive loops"));
            }
            Instruction::CompareAndPreserve(op) if format!("{op:?}").contains("In") => {
                return Err(unsupported("chained `in` comparisons"));
            }
            Instruction::BeginCapture(_) => {
                return Err(unsupported(
                    "blocks that capture output ({% set %}...{% endset %}, {% filter %}, macros, {% call %})",
                ));
            }
            Instruction::BuildMacro(..)
            | Instruction::Enclose(_)
            | Instruction::GetClosure
            | Instruction::Return => return Err(unsupported("macros")),
            Instruction::CallBlock(_)
            | Instruction::LoadBlocks
            | Instruction::Include(_)
            | Instruction::ExportLocals
            | Instruction::FastSuper
            | Instruction::FastRecurse => {
                return Err(unsupported("inheritance, includes and imports"));
            }
            Instruction::SetAttr(_) => return Err(unsupported("namespace attributes")),
            // One instruction that pushes every item of many sequences (or merges many maps).
            Instruction::UnpackLists(_) | Instruction::MergeKwargs(_) => {
                return Err(unsupported("argument splats (*args, **kwargs)"));
            }
            Instruction::Lookup(name)
            | Instruction::StoreLocal(name)
            | Instruction::CallFunction(name, _)
                if name.starts_with(RESERVED) =>
            {
                return Err(TemplateError(format!(
                    "invalid template: names starting with {RESERVED} are reserved"
                )));
            }
            other => other.clone(),
        };
        new.add_with_line(replaced, line);
    }
    Ok(new)
}

fn unsupported(what: &str) -> TemplateError {
    TemplateError(format!(
        "invalid template: {what} are not allowed in docmeta templates"
    ))
}

fn describe(e: &JinjaError) -> String {
    match e.kind() {
        ErrorKind::OutOfFuel => "template ran too long (out of fuel)".to_owned(),
        _ => match e.detail() {
            Some(detail) => format!("{} ({detail})", e.kind()),
            None => e.kind().to_string(),
        },
    }
}

/// Rewrites Django's `value|filter:arg` spelling into Jinja's `value|filter(arg)` inside tags,
/// leaving text and string literals alone.
pub fn django_filter_arguments(source: &str) -> String {
    let b = source.as_bytes();
    let mut out = String::with_capacity(source.len() + 8);
    let mut i = 0;
    let mut in_tag = false;
    let mut last = 0;
    while i < b.len() {
        if !in_tag {
            if b[i] == b'{' && matches!(b.get(i + 1), Some(b'{' | b'%')) {
                in_tag = true;
                i += 2;
            } else {
                i += 1;
            }
            continue;
        }
        match b[i] {
            b'}' if i > 0 && matches!(b[i - 1], b'}' | b'%') => {
                in_tag = false;
                i += 1;
            }
            q @ (b'"' | b'\'') => i = skip_string(b, i, q),
            b'|' => {
                let name_start = skip_spaces(b, i + 1);
                let name_end = name_start
                    + b[name_start..]
                        .iter()
                        .take_while(|c| c.is_ascii_alphanumeric() || **c == b'_')
                        .count();
                let colon = skip_spaces(b, name_end);
                if name_end > name_start && b.get(colon) == Some(&b':') {
                    let arg_start = skip_spaces(b, colon + 1);
                    let arg_end = match b.get(arg_start) {
                        Some(&q @ (b'"' | b'\'')) => skip_string(b, arg_start, q),
                        _ => {
                            arg_start
                                + b[arg_start..]
                                    .iter()
                                    .take_while(|c| {
                                        c.is_ascii_alphanumeric() || matches!(c, b'_' | b'.' | b'-')
                                    })
                                    .count()
                        }
                    };
                    if arg_end > arg_start {
                        out.push_str(&source[last..name_end]);
                        out.push('(');
                        out.push_str(&source[arg_start..arg_end]);
                        out.push(')');
                        last = arg_end;
                    }
                    i = arg_end.max(i + 1);
                } else {
                    i += 1;
                }
            }
            _ => i += 1,
        }
    }
    out.push_str(&source[last..]);
    out
}

fn skip_spaces(b: &[u8], mut i: usize) -> usize {
    while b.get(i).is_some_and(|c| c.is_ascii_whitespace()) {
        i += 1;
    }
    i
}

fn skip_string(b: &[u8], start: usize, quote: u8) -> usize {
    let mut i = start + 1;
    while i < b.len() {
        match b[i] {
            b'\\' => i += 2,
            c if c == quote => return i + 1,
            _ => i += 1,
        }
    }
    b.len()
}

/// Reads a template value as a date and time: a [`Moment`], or ISO 8601 text.
fn as_datetime(value: &Value) -> Option<NaiveDateTime> {
    if let Some(m) = value.downcast_object_ref::<Moment>() {
        return Some(m.0.naive_utc());
    }
    let s = value.as_str()?.trim();
    super::calendar::iso_date_time(s)
        .or_else(|| super::calendar::iso_date(s).and_then(|d| d.and_hms_opt(0, 0, 0)))
        .or_else(|| {
            // `YYYY-MM-DDTHH:MM:SS` with fractions or an offset.
            DateTime::parse_from_rfc3339(s).ok().map(|d| d.naive_utc())
        })
}

fn date_filter(
    _: &State,
    value: Value,
    format: Option<String>,
) -> Result<String, minijinja::Error> {
    if value.is_undefined() || value.is_none() {
        return Ok(String::new());
    }
    let t = as_datetime(&value).ok_or_else(|| {
        minijinja::Error::new(
            ErrorKind::InvalidOperation,
            format!("date filter: '{value}' is not a date"),
        )
    })?;
    Ok(datefmt::format(&t, format.as_deref().unwrap_or("Y-m-d")))
}

fn time_filter(
    state: &State,
    value: Value,
    format: Option<String>,
) -> Result<String, minijinja::Error> {
    date_filter(
        state,
        value,
        Some(format.unwrap_or_else(|| "H:i".to_owned())),
    )
}

/// A point in time inside templates (`now`, `document.datetime_created`). Renders as
/// `YYYY-MM-DD HH:MM:SS` and exposes `year`, `month`, `day`, `hour`, `minute`, `second`.
#[derive(Debug, Clone, Copy)]
pub struct Moment(pub DateTime<Utc>);

impl Object for Moment {
    fn repr(self: &Arc<Self>) -> ObjectRepr {
        ObjectRepr::Plain
    }

    fn get_value(self: &Arc<Self>, key: &Value) -> Option<Value> {
        let t = self.0;
        Some(Value::from(match key.as_str()? {
            "year" => i64::from(t.year()),
            "month" => i64::from(t.month()),
            "day" => i64::from(t.day()),
            "hour" => i64::from(t.hour()),
            "minute" => i64::from(t.minute()),
            "second" => i64::from(t.second()),
            "weekday" => i64::from(t.weekday().num_days_from_monday()),
            "timestamp" => t.timestamp(),
            _ => return None,
        }))
    }

    fn render(self: &Arc<Self>, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result
    where
        Self: Sized + 'static,
    {
        write!(f, "{}", self.0.format("%Y-%m-%d %H:%M:%S"))
    }
}

/// A value of a document's metadata as templates see it (`document.metadata.all` items).
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct MetadataEntry {
    /// The metadata type's name.
    pub name: String,
    /// The metadata type's label.
    pub label: String,
    /// The stored value.
    pub value: String,
}

/// What templates know of a document (`document` in spec 2.6, `workflow_instance.document`).
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct DocumentContext {
    /// Document id.
    pub id: i64,
    /// Document label.
    pub label: String,
    /// Label of the document's type.
    pub document_type_label: String,
    /// Creation time.
    pub created: DateTime<Utc>,
    /// The document's metadata values.
    pub metadata: Vec<MetadataEntry>,
}

impl Object for DocumentContext {
    fn repr(self: &Arc<Self>) -> ObjectRepr {
        ObjectRepr::Plain
    }

    fn get_value(self: &Arc<Self>, key: &Value) -> Option<Value> {
        Some(match key.as_str()? {
            "id" | "pk" => Value::from(self.id),
            "label" => Value::from(self.label.as_str()),
            "document_type" => Value::from_object(Named {
                text: self.document_type_label.clone(),
                attribute: "label",
            }),
            "datetime_created" => Value::from_object(Moment(self.created)),
            "metadata_value_of" => Value::from_object(MetadataValueOf(self.clone())),
            "metadata" => Value::from_object(MetadataSet(self.clone())),
            _ => return None,
        })
    }

    fn render(self: &Arc<Self>, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result
    where
        Self: Sized + 'static,
    {
        f.write_str(&self.label)
    }
}

/// A record shown by one text attribute (`label`, `username`, `name`) that also renders as it.
#[derive(Debug, Clone)]
struct Named {
    text: String,
    attribute: &'static str,
}

impl Object for Named {
    fn repr(self: &Arc<Self>) -> ObjectRepr {
        ObjectRepr::Plain
    }

    fn get_value(self: &Arc<Self>, key: &Value) -> Option<Value> {
        (key.as_str()? == self.attribute).then(|| Value::from(self.text.as_str()))
    }

    fn render(self: &Arc<Self>, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result
    where
        Self: Sized + 'static,
    {
        f.write_str(&self.text)
    }
}

/// `document.metadata_value_of.<name>`: the value, or none when the metadata is absent.
#[derive(Debug)]
struct MetadataValueOf(Arc<DocumentContext>);

impl Object for MetadataValueOf {
    fn get_value(self: &Arc<Self>, key: &Value) -> Option<Value> {
        let name = key.as_str()?;
        Some(
            self.0
                .metadata
                .iter()
                .find(|m| m.name == name)
                .map_or(Value::from(()), |m| Value::from(m.value.as_str())),
        )
    }
}

/// `document.metadata`: `.all` (attribute or call) iterates the entries.
#[derive(Debug)]
struct MetadataSet(Arc<DocumentContext>);

impl MetadataSet {
    fn all(&self) -> Value {
        Value::from_iter(
            self.0
                .metadata
                .iter()
                .map(|m| Value::from_object(EntryObject(m.clone()))),
        )
    }
}

impl Object for MetadataSet {
    fn repr(self: &Arc<Self>) -> ObjectRepr {
        ObjectRepr::Seq
    }

    fn get_value(self: &Arc<Self>, key: &Value) -> Option<Value> {
        match key.as_str() {
            Some("all") => Some(self.all()),
            Some("count") => Some(Value::from(self.0.metadata.len())),
            _ => key
                .as_usize()
                .and_then(|i| self.0.metadata.get(i))
                .map(|m| Value::from_object(EntryObject(m.clone()))),
        }
    }

    fn enumerate(self: &Arc<Self>) -> Enumerator {
        Enumerator::Seq(self.0.metadata.len())
    }

    fn call_method(
        self: &Arc<Self>,
        _state: &mut State<'_, '_>,
        method: &str,
        _args: &[Value],
    ) -> Result<Value, minijinja::Error> {
        match method {
            "all" => Ok(self.all()),
            "count" => Ok(Value::from(self.0.metadata.len())),
            _ => Err(minijinja::Error::from(ErrorKind::UnknownMethod)),
        }
    }
}

#[derive(Debug)]
struct EntryObject(MetadataEntry);

impl Object for EntryObject {
    fn repr(self: &Arc<Self>) -> ObjectRepr {
        ObjectRepr::Plain
    }

    fn get_value(self: &Arc<Self>, key: &Value) -> Option<Value> {
        Some(match key.as_str()? {
            "value" => Value::from(self.0.value.as_str()),
            "metadata_type" => minijinja::context! {
                name => self.0.name.as_str(),
                label => self.0.label.as_str(),
            },
            _ => return None,
        })
    }

    fn render(self: &Arc<Self>, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result
    where
        Self: Sized + 'static,
    {
        f.write_str(&self.0.value)
    }
}

/// A user as lookup templates see it (`users`): renders as the username.
pub fn user_value(id: i64, username: &str) -> Value {
    principal(
        &[("id", Value::from(id)), ("username", Value::from(username))],
        username,
    )
}

/// A group as lookup templates see it (`groups`): renders as the name.
pub fn group_value(id: i64, name: &str) -> Value {
    principal(
        &[("id", Value::from(id)), ("name", Value::from(name))],
        name,
    )
}

fn principal(fields: &[(&str, Value)], text: &str) -> Value {
    let fields: std::collections::BTreeMap<&str, Value> = fields.iter().cloned().collect();
    Value::from_object(Principal {
        fields: Value::from(fields),
        text: text.to_owned(),
    })
}

#[derive(Debug)]
struct Principal {
    fields: Value,
    text: String,
}

impl Object for Principal {
    fn repr(self: &Arc<Self>) -> ObjectRepr {
        ObjectRepr::Plain
    }

    fn get_value(self: &Arc<Self>, key: &Value) -> Option<Value> {
        self.fields.get_item(key).ok().filter(|v| !v.is_undefined())
    }

    fn render(self: &Arc<Self>, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result
    where
        Self: Sized + 'static,
    {
        f.write_str(&self.text)
    }
}

/// A JSON value as templates see it.
pub(crate) fn json_value(v: &serde_json::Value) -> Value {
    match v {
        serde_json::Value::Null => Value::from(()),
        serde_json::Value::Bool(b) => Value::from(*b),
        serde_json::Value::Number(n) => match n.as_i64() {
            Some(i) => Value::from(i),
            None => Value::from(n.as_f64().unwrap_or(0.0)),
        },
        serde_json::Value::String(s) => Value::from(s.as_str()),
        serde_json::Value::Array(items) => {
            Value::from(items.iter().map(json_value).collect::<Vec<_>>())
        }
        serde_json::Value::Object(map) => {
            Value::from_iter(map.iter().map(|(k, v)| (k.clone(), json_value(v))))
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use minijinja::context;
    use std::time::Instant;

    fn now() -> DateTime<Utc> {
        DateTime::parse_from_rfc3339("2024-03-01T14:05:09Z")
            .map(|d| d.to_utc())
            .unwrap_or_default()
    }

    #[test]
    fn django_spelling_is_rewritten() {
        assert_eq!(
            django_filter_arguments(r#"{{ now|date:"Y-m-d" }}"#),
            r#"{{ now|date("Y-m-d") }}"#
        );
        assert_eq!(
            django_filter_arguments(r#"a|b:"c" {{ x | default : 'y|z:1' }}"#),
            r#"a|b:"c" {{ x | default('y|z:1') }}"#
        );
        assert_eq!(django_filter_arguments("{{ x|upper }}"), "{{ x|upper }}");
        assert_eq!(django_filter_arguments("{{ '|a:b' }}"), "{{ '|a:b' }}");
    }

    #[test]
    fn renders_both_spellings_and_limits() {
        let e = TemplateEngine::new();
        let ctx = || context! { now => Value::from_object(Moment(now())) };
        assert_eq!(
            e.render(r#"{{ now|date:"d/m/Y" }}"#, ctx(), 100),
            Ok("01/03/2024".into())
        );
        assert_eq!(
            e.render(r#"{{ now|date("Y") }}-X"#, ctx(), 100),
            Ok("2024-X".into())
        );
        assert_eq!(
            e.render("plain {text", ctx(), 100),
            Ok("plain {text".into())
        );
        let long = e.render(
            "{% for i in range(100000) %}xxxxxxxxxx{% endfor %}",
            ctx(),
            1000,
        );
        assert!(long.is_err());
        let fuel = e.render(
            "{% for i in range(100000) %}{% for j in range(100000) %}{% endfor %}{% endfor %}",
            ctx(),
            1000,
        );
        assert!(fuel.is_err_and(|e| e.0.contains("fuel")));
        assert!(e.check("{% for %}").is_err());
    }

    fn refused(e: &TemplateEngine, source: &str) -> String {
        let started = Instant::now();
        let s100k = "x".repeat(100_000);
        let out = e.render(
            source,
            context! { s => s100k, users => Value::from_iter((0..50_000).map(|i| user_value(i, "someone"))) },
            1 << 20,
        );
        assert!(
            started.elapsed() < Duration::from_secs(3),
            "{source}: took {:?}",
            started.elapsed()
        );
        match out {
            Err(err) => err.0,
            Ok(out) => panic!("{source}: rendered {} bytes", out.len()),
        }
    }

    #[test]
    fn every_way_to_build_a_big_value_is_refused() {
        let e = TemplateEngine::new();
        let doubling = format!(
            "{{% set a = \"xxxxxxxxxxxxxxxx\" %}}{}{{{{ a|length }}}}",
            "{% set a = a ~ a %}".repeat(40)
        );
        let plus = doubling.replace(" ~ ", " + ");
        let list = format!(
            "{{% set a = [1] %}}{}{{{{ a|length }}}}",
            "{% set a = a + a %}".repeat(40)
        );
        let attacks = [
            doubling.as_str(),
            plus.as_str(),
            list.as_str(),
            "{{ ('x' * 1000000000)|length }}",
            "{{ ([1] * 1000000000)|length }}",
            "{{ (range(100000)|list * 100)|length }}",
            "{{ ('x' * 200000)|replace('', 'yyyyyyyyyy')|length }}",
            "{{ s|replace('x', s)|length }}",
            "{{ s|indent(100000)|length }}",
            "{{ [s, s, s]|join|length }}",
            "{{ '%s%s%s'|format(s, s, s)|length }}",
            "{{ (s ~ s ~ s)|length }}",
            "{{ ([s] * 1000)|string|length }}",
            "{{ ([s] * 1000)|pprint|length }}",
            "{{ ([s] * 1000) in 'x' }}",
            "{{ [s, s, s]|sum(start='')|length }}",
            "{{ s|batch(1000000000, 'x')|length }}",
            "{{ range(100000)|chain(range(100000))|list|length }}",
            "{{ users|join(',')|length }}",
            "{{ ('&' * 100000)|escape|escape|length }}",
            "{% for i in range(100000) %}{{ s }}{% endfor %}",
            "{% for i in range(100000) %}0123456789012345678901234567890123456789{% endfor %}",
            "{{ now|date(s ~ s) }}",
        ];
        for attack in attacks {
            let message = refused(&e, attack);
            assert!(
                message.contains("longer than")
                    || message.contains("more than")
                    || message.contains("fuel"),
                "{attack}: {message}"
            );
        }
        // Constructs that would build values out of reach of the checks are refused on save.
        for source in [
            "{% set a %}{{ s }}{% endset %}",
            "{% filter upper %}x{% endfilter %}",
            "{% macro d(s) %}{{ s ~ s }}{% endmacro %}{{ d('x') }}",
            "{% for x in [1] recursive %}{{ loop(x) }}{% endfor %}",
            "{% set ns = namespace(a=1) %}{% set ns.a = 2 %}",
            "{% set __docmeta_concat = 1 %}",
            "{% include 'x' %}",
            "{{ dict(*[1], *[2]) }}",
            "{{ dict(**dict(a=1), **dict(b=2)) }}",
        ] {
            assert!(e.check(source).is_err(), "{source}");
        }
    }

    #[test]
    fn a_slow_template_stops_at_the_deadline() {
        let e = TemplateEngine::with_budget(Duration::from_millis(50));
        let started = Instant::now();
        let out = e.render(
            "{% for i in range(100000) %}{% if (s ~ i)|length > 0 %}{% endif %}{% endfor %}",
            context! { s => "x".repeat(200_000) },
            100,
        );
        assert!(started.elapsed() < Duration::from_secs(1));
        assert!(
            out.as_ref()
                .is_err_and(|e| e.0.contains("render budget (50 ms") || e.0.contains("fuel")),
            "{out:?}"
        );
    }

    #[test]
    fn ordinary_templates_still_render() {
        let e = TemplateEngine::new();
        let ctx = || context! { n => 3, s => "ab", l => vec![1, 2, 3] };
        for (source, expected) in [
            ("{{ s ~ '-' ~ n }}", "ab-3"),
            (
                "{{ n + 4 }}|{{ s + 'c' }}|{{ n * 2 }}|{{ s * 2 }}",
                "7|abc|6|abab",
            ),
            ("{{ (l + [4])|join(',') }}", "1,2,3,4"),
            (
                "{{ 'a' in s }}|{{ 2 in l }}|{{ 0 < n < 5 }}",
                "True|True|True",
            ),
            ("{% set t = s ~ s %}{{ t|upper }}", "ABAB"),
            ("{{ l|map('string')|join('+') }}", "1+2+3"),
            ("{{ s|replace('a', 'x') }}{{ [3,1]|sort|first }}", "xb1"),
            ("{{ '%s=%s'|format(s, n) }}", "ab=3"),
            ("{{ l|sum }}|{{ l|length }}|{{ dict(a=1).a }}", "6|3|1"),
            (
                "{% for i in range(3) %}{{ i }}{% if not loop.last %},{% endif %}{% endfor %}",
                "0,1,2",
            ),
            (
                "{{ x|default('none') }} {{ s is startingwith('a') }}",
                "none True",
            ),
            ("a\n{{ s }}\nb\n", "a\nab\nb"),
        ] {
            let out = e.render(source, ctx(), 1000);
            assert_eq!(out.as_deref(), Ok(expected), "{source}");
        }
    }

    #[test]
    fn document_context() {
        let doc = DocumentContext {
            id: 1,
            label: "inv".into(),
            document_type_label: "Invoice".into(),
            created: now(),
            metadata: vec![MetadataEntry {
                name: "number".into(),
                label: "Number".into(),
                value: "42".into(),
            }],
        };
        let e = TemplateEngine::new();
        let ctx = context! { document => Value::from_object(doc) };
        let out = e.render(
            "{{ document.metadata_value_of.number }}|{{ document.metadata_value_of.nope is none }}|{% for m in document.metadata.all %}{{ m.metadata_type.label }}={{ m.value }}{% endfor %}|{{ document.document_type.label }}",
            ctx,
            1000,
        );
        assert_eq!(out, Ok("42|True|Number=42|Invoice".into()));
        let users = Value::from_iter([user_value(1, "ann"), user_value(2, "bob")]);
        assert_eq!(
            e.render(
                "{{ users|join(',') }}",
                context! { users => users.clone() },
                100
            ),
            Ok("ann,bob".into())
        );
        let out = e.render(
            "{% for u in users %}{{ u.username }}{{ u.id }};{% endfor %}",
            context! { users },
            100,
        );
        assert_eq!(out, Ok("ann1;bob2;".into()));
    }
}
