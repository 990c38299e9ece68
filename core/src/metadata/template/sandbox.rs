//! The template sandbox: the checks that bound every render in time and memory (see the
//! module documentation of `template`).
//!
//! It holds the per-thread budget of the render running now, the checks of the values a
//! template builds and of the arguments of what it calls, the checked operators and formatter,
//! and the rewriting of a compiled template's instructions into checked ones (refusing the
//! constructs the checks cannot reach).

use std::cell::RefCell;
use std::sync::LazyLock;
use std::time::{Duration, Instant};

use minijinja::machinery::{CompiledTemplate, Instruction, Instructions};
use minijinja::value::{Kwargs, Rest, Value, ValueKind};
use minijinja::{Environment, Error as JinjaError, ErrorKind, Expression, Output, State};

use super::{MAX_TEMPLATE_ITEMS, MAX_TEMPLATE_STRING, TemplateError};

/// Names of the checked operators; templates may not use names with this prefix.
const RESERVED: &str = "__docmeta_";
const CONCAT: &str = "__docmeta_concat";
const ADD: &str = "__docmeta_add";
const MUL: &str = "__docmeta_mul";
const IN: &str = "__docmeta_in";
/// `LOOP_FLAG_RECURSIVE` of minijinja's instructions (not re-exported).
const LOOP_FLAG_RECURSIVE: u8 = 2;

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

/// Runs `render` with the limits of one render set for this thread: the wall-clock `deadline`
/// (`budget` is what error messages quote) and at most `max_output` bytes of output.
pub(super) fn bounded<R>(
    deadline: Instant,
    budget: Duration,
    max_output: usize,
    render: impl FnOnce() -> R,
) -> R {
    let previous = BUDGET.with(|b| {
        b.borrow_mut().replace(Budget {
            deadline,
            budget,
            emitted: 0,
            max_output,
        })
    });
    let result = render();
    BUDGET.with(|b| *b.borrow_mut() = previous);
    result
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

/// Registers the checked operators that the rewritten instructions call.
pub(super) fn add_operators(env: &mut Environment<'static>) {
    env.add_function(CONCAT, op_concat);
    env.add_function(ADD, op_add);
    env.add_function(MUL, op_mul);
    env.add_function(IN, op_in);
}

/// Writes a value of `{{ }}` or of (rewritten) raw text: autoescaping is off, so a value is
/// written as its text, counted exactly against the output limit.
pub(super) fn write_value(
    out: &mut Output<'_>,
    _state: &mut State<'_, '_>,
    value: &Value,
) -> Result<(), JinjaError> {
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
pub(super) fn add_checked_filter(
    env: &mut Environment<'static>,
    name: &'static str,
    original: Value,
) {
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
pub(super) fn add_checked_test(
    env: &mut Environment<'static>,
    name: &'static str,
    original: Value,
) {
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
pub(super) fn add_checked_function(
    env: &mut Environment<'static>,
    name: &'static str,
    original: Value,
) {
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

/// Rewrites a compiled template's instructions into the sandbox's (see the module docs of
/// `template`), or refuses what the sandbox does not allow.
pub(super) fn rewrite<'s>(
    compiled: &CompiledTemplate<'s>,
) -> Result<Instructions<'s>, TemplateError> {
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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::metadata::template::{TemplateEngine, user_value};
    use minijinja::context;

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
}
