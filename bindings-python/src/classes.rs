//! Applications' own validators and parsers written in Python (`docmeta.Classes`), and
//! validation and parsing without a database (`docmeta.validate`, `docmeta.parse`,
//! `docmeta.MetadataProcessor`), both on docmeta-core's `ClassRegistry`.
//!
//! A Python class runs inside the value pipeline, which works with the GIL released: each call
//! takes the GIL only while the Python code runs (`Python::attach`), so other Python threads go
//! on meanwhile, and every exception it raises becomes the pipeline's refusal of the value.

use docmeta_core as core;
use docmeta_core::{Parser, Validator};
use parking_lot::Mutex;
use pyo3::prelude::*;
use pyo3::types::{PyDict, PyType};

use crate::errors::run;

/// The text of a Python exception, as the message of a refusal.
fn message(py: Python<'_>, e: &PyErr) -> String {
    let text = e.value(py).to_string();
    if text.is_empty() {
        e.get_type(py)
            .name()
            .map(|n| n.to_string())
            .unwrap_or_else(|_| "refused".to_owned())
    } else {
        text
    }
}

/// YAML `arguments` as a Python dict (empty text, or YAML `null`: no arguments).
fn arguments<'py>(py: Python<'py>, yaml: &str) -> Result<Bound<'py, PyDict>, String> {
    let dict = PyDict::new(py);
    if yaml.trim().is_empty() {
        return Ok(dict);
    }
    let value: serde_json::Value =
        serde_saphyr::from_str(yaml).map_err(|e| format!("invalid YAML arguments: {e}"))?;
    match value {
        serde_json::Value::Null => Ok(dict),
        serde_json::Value::Object(_) => {
            let text = value.to_string();
            let loaded = py
                .import("json")
                .and_then(|json| json.call_method1("loads", (text,)))
                .map_err(|e| message(py, &e))?;
            loaded.cast_into::<PyDict>().map_err(|e| e.to_string())
        }
        _ => Err("the arguments must be a YAML mapping of names to values".to_owned()),
    }
}

/// Builds the Python object that checks or parses values: a class is called with the
/// arguments as keywords; anything else callable is the check itself and takes no arguments.
fn build(factory: &Py<PyAny>, yaml: &str) -> Result<Py<PyAny>, String> {
    Python::attach(|py| {
        let kwargs = arguments(py, yaml)?;
        let factory = factory.bind(py);
        if factory.is_instance_of::<PyType>() {
            factory
                .call((), Some(&kwargs))
                .map(Bound::unbind)
                .map_err(|e| message(py, &e))
        } else if kwargs.is_empty() {
            Ok(factory.clone().unbind())
        } else {
            Err("this function takes no arguments (register a class to accept some)".to_owned())
        }
    })
}

/// Calls `method` of `object` (or the object itself when it is a plain function) on `value`.
fn call<'py>(
    py: Python<'py>,
    object: &Py<PyAny>,
    method: &str,
    value: &str,
) -> Result<Bound<'py, PyAny>, String> {
    let object = object.bind(py);
    let result = if object.hasattr(method).unwrap_or(false) {
        object.call_method1(method, (value,))
    } else {
        object.call1((value,))
    };
    result.map_err(|e| message(py, &e))
}

/// A validator written in Python: it refuses by raising (or by returning `False`).
struct PyValidator(Py<PyAny>);

impl Validator for PyValidator {
    fn validate(&self, value: &str) -> Result<(), String> {
        Python::attach(|py| {
            let result = call(py, &self.0, "validate", value)?;
            match result.extract::<bool>() {
                Ok(false) => Err(format!("'{value}' is not a valid value")),
                _ => Ok(()),
            }
        })
    }
}

/// A parser written in Python: it returns the value to store, or raises.
struct PyParser(Py<PyAny>);

impl Parser for PyParser {
    fn parse(&self, value: &str) -> Result<String, String> {
        Python::attach(|py| {
            call(py, &self.0, "parse", value)?
                .extract::<String>()
                .map_err(|_| "the parser did not return a str".to_owned())
        })
    }
}

/// The validator and parser classes metadata types may name: the built-ins
/// (`svc.apps.metadata.metadata_validators.*`, `...metadata_parsers.*`) plus an application's
/// own, written in Python. Give it to `Docmeta.open(..., classes=...)` or to
/// `MetadataProcessor(..., classes=...)`.
///
/// `factory` is either a class, called as `factory(**arguments)` with the type's YAML arguments
/// (`validation_arguments` / `parser_arguments`) when a metadata type naming it is saved or
/// first used, whose instance has `validate(value)` / `parse(value) -> str`; or a plain
/// function `validate(value)` / `parse(value) -> str` taking no arguments. A validator refuses
/// a value by raising (or returning `False`); a factory refuses its arguments by raising.
#[pyclass(module = "docmeta")]
pub struct Classes {
    pub(crate) registry: Mutex<core::ClassRegistry>,
}

#[pymethods]
impl Classes {
    /// The built-in classes only.
    #[new]
    fn new() -> Self {
        Classes {
            registry: Mutex::new(core::ClassRegistry::default()),
        }
    }

    /// Registers a validator under the dotted `path` (e.g. `"myapp.validators.Even"`).
    fn register_validator(&self, path: &str, label: &str, factory: Py<PyAny>) {
        self.registry
            .lock()
            .register_validator(path, label, move |yaml| {
                let object = build(&factory, yaml)?;
                Ok(Box::new(PyValidator(object)) as Box<dyn Validator>)
            });
    }

    /// Registers a parser under the dotted `path` (e.g. `"myapp.parsers.Upper"`).
    fn register_parser(&self, path: &str, label: &str, factory: Py<PyAny>) {
        self.registry
            .lock()
            .register_parser(path, label, move |yaml| {
                let object = build(&factory, yaml)?;
                Ok(Box::new(PyParser(object)) as Box<dyn Parser>)
            });
    }

    /// The registered validators as `{path: label}`.
    fn validators(&self) -> std::collections::BTreeMap<String, String> {
        self.registry
            .lock()
            .validators()
            .map(|c| (c.path.clone(), c.label.clone()))
            .collect()
    }

    /// The registered parsers as `{path: label}`.
    fn parsers(&self) -> std::collections::BTreeMap<String, String> {
        self.registry
            .lock()
            .parsers()
            .map(|c| (c.path.clone(), c.label.clone()))
            .collect()
    }

    /// Checks `value` with the validator at `path` of these classes (see `docmeta.validate`).
    fn validate(&self, py: Python<'_>, path: &str, arguments: &str, value: &str) -> PyResult<()> {
        let registry = self.registry.lock().clone();
        run(py, || registry.validate(path, arguments, value))
    }

    /// Parses `value` with the parser at `path` of these classes (see `docmeta.parse`).
    fn parse(&self, py: Python<'_>, path: &str, arguments: &str, value: &str) -> PyResult<String> {
        let registry = self.registry.lock().clone();
        run(py, || registry.parse(path, arguments, value))
    }
}

impl Classes {
    /// A copy of the registry, for an instance or a processor to own.
    pub(crate) fn registry(&self) -> core::ClassRegistry {
        self.registry.lock().clone()
    }

    /// Classes holding a copy of `registry`.
    pub(crate) fn of(registry: core::ClassRegistry) -> Self {
        Classes {
            registry: Mutex::new(registry),
        }
    }
}

/// Checks `value` with the built-in validator class at `path` (spec 2.8) and its YAML
/// `arguments`, without a database. Raises `ValidationError` on the field `validation` (unknown
/// class), `validation_arguments` (bad arguments) or `value` (the value is refused), as the
/// pipeline does. An empty value is accepted (the pipeline never validates "no value").
#[pyfunction]
pub(crate) fn validate(py: Python<'_>, path: &str, arguments: &str, value: &str) -> PyResult<()> {
    run(py, || core::validate_value(path, arguments, value))
}

/// Parses `value` with the built-in parser class at `path` (spec 2.9) and its YAML `arguments`,
/// without a database; returns the value a store would keep. Errors as `validate`'s, on
/// `parser`, `parser_arguments` or `value`.
#[pyfunction]
pub(crate) fn parse(py: Python<'_>, path: &str, arguments: &str, value: &str) -> PyResult<String> {
    run(py, || core::parse_value(path, arguments, value))
}

/// A metadata type definition checked once (every field, as saving the type would), ready to
/// run spec 2.10's steps (default, required, lookup, validator, parser) on values without a
/// database. Templates see `now` but no `document`; lookups see no `users` or `groups`.
#[pyclass(frozen, module = "docmeta")]
pub struct MetadataProcessor {
    inner: core::MetadataProcessor,
}

#[pymethods]
impl MetadataProcessor {
    #[new]
    #[pyo3(signature = (name, label, *, default = String::new(), lookup = String::new(),
        validation = String::new(), validation_arguments = String::new(),
        parser = String::new(), parser_arguments = String::new(),
        value_type = "text".to_owned(), classes = None))]
    #[allow(clippy::too_many_arguments)]
    fn new(
        py: Python<'_>,
        name: String,
        label: String,
        default: String,
        lookup: String,
        validation: String,
        validation_arguments: String,
        parser: String,
        parser_arguments: String,
        value_type: String,
        classes: Option<PyRef<'_, Classes>>,
    ) -> PyResult<Self> {
        let input = core::MetadataTypeInput {
            name,
            label,
            default,
            lookup,
            validation,
            validation_arguments,
            parser,
            parser_arguments,
            value_type: crate::errors::value_type(&value_type)?,
        };
        let registry = classes.map(|c| c.registry()).unwrap_or_default();
        let inner = run(py, || registry.processor(&input))?;
        Ok(MetadataProcessor { inner })
    }

    /// The definition's name.
    #[getter]
    fn name(&self) -> String {
        self.inner.metadata_type().name.clone()
    }

    /// Runs spec 2.10 on `value` and returns the value a store would keep; `required` is what
    /// a document type's association would say. Raises `ValidationError` on the field `value`.
    #[pyo3(signature = (value, required = false))]
    fn process(&self, py: Python<'_>, value: &str, required: bool) -> PyResult<String> {
        run(py, || self.inner.process(value, required))
    }

    /// The lookup's choices (spec 2.7), or None when the type has no lookup.
    fn lookup_choices(&self, py: Python<'_>) -> PyResult<Option<Vec<String>>> {
        run(py, || self.inner.lookup_choices())
    }
}
