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
//! This file holds the engine: the shared environment, the cache of compiled templates, and
//! checking and rendering a template. The rest lives beside it, one job a file:
//!
//! - `sandbox`: the budget of a render, the checks of what a template builds, and the rewriting
//!   of its instructions;
//! - `filters`: the filters, tests and functions templates can call, and Django's spelling;
//! - `context`: the values templates see (documents, metadata, moments, users, groups).
//!
//! Part of `metadata` (layer 4 of `scripts/check-structure`): it may import only what `metadata`
//! may (see `metadata`'s module documentation).

mod context;
mod filters;
mod sandbox;

use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::{Duration, Instant};

use minijinja::value::Value;
use minijinja::{AutoEscape, Environment, Error as JinjaError, ErrorKind};
use parking_lot::RwLock;

pub(crate) use context::json_value;
pub use context::{DocumentContext, MetadataEntry, Moment, group_value, user_value};
pub use filters::django_filter_arguments;

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
        for (name, original) in filters::builtin_filters() {
            sandbox::add_checked_filter(&mut env, name, original);
        }
        for (name, original) in filters::builtin_tests() {
            sandbox::add_checked_test(&mut env, name, original);
        }
        for (name, original) in filters::builtin_functions() {
            sandbox::add_checked_function(&mut env, name, original);
        }
        env.remove_global("namespace");
        env.remove_global("debug");
        sandbox::add_operators(&mut env);
        // Every `{{ }}` and (rewritten) raw text.
        env.set_formatter(sandbox::write_value);
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
        sandbox::rewrite(minijinja::machinery::get_compiled_template(&template)).map(drop)
    }

    /// The compiled form of `source` (minijinja's own instructions, not yet sandboxed), from
    /// the cache or compiled now.
    fn compile(&self, source: &str) -> Result<Arc<Environment<'static>>, TemplateError> {
        if let Some(compiled) = self.cache.read().get(source) {
            return Ok(compiled.clone());
        }
        let mut env = Environment::empty();
        env.add_template_owned(NAME, filters::django_filter_arguments(source))
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
        let instructions =
            sandbox::rewrite(minijinja::machinery::get_compiled_template(&template))?;
        let mut text = String::new();
        let deadline = deadline.min(Instant::now() + self.budget);
        let result = sandbox::bounded(deadline, self.budget, max_output, || {
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
        });
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

fn describe(e: &JinjaError) -> String {
    match e.kind() {
        ErrorKind::OutOfFuel => "template ran too long (out of fuel)".to_owned(),
        _ => match e.detail() {
            Some(detail) => format!("{} ({detail})", e.kind()),
            None => e.kind().to_string(),
        },
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use chrono::{DateTime, Utc};
    use minijinja::context;

    fn now() -> DateTime<Utc> {
        DateTime::parse_from_rfc3339("2024-03-01T14:05:09Z")
            .map(|d| d.to_utc())
            .unwrap_or_default()
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
}
