//! The value pipeline of spec 2.10 (targets: ≥ 1,000,000 values/s with validator + parser;
//! ≥ 200,000 values/s with a template default), on one core.

use criterion::{Criterion, Throughput, criterion_group, criterion_main};
use docmeta_core::{
    ClassRegistry, CompiledMetadataType, DocumentContext, MetadataEntry, Moment, TemplateEngine,
    TemplateInputs, TemplateValue,
};
use docmeta_core::{MetadataType, MetadataTypeId, Result};
use std::hint::black_box;

struct Inputs {
    document: DocumentContext,
}

impl TemplateInputs for Inputs {
    fn default_context(&mut self) -> Result<TemplateValue> {
        let mut context = std::collections::BTreeMap::new();
        context.insert(
            "now",
            TemplateValue::from_object(Moment(chrono::Utc::now())),
        );
        context.insert(
            "document",
            TemplateValue::from_object(self.document.clone()),
        );
        Ok(TemplateValue::from(context))
    }
    fn lookup_context(&mut self) -> Result<TemplateValue> {
        self.default_context()
    }
}

fn metadata_type(default: &str, validation: &str, parser: &str) -> MetadataType {
    MetadataType {
        id: MetadataTypeId(1),
        name: "due".into(),
        label: "Due".into(),
        default: default.into(),
        lookup: String::new(),
        validation: validation.into(),
        validation_arguments: String::new(),
        parser: parser.into(),
        parser_arguments: String::new(),
        value_type: docmeta_core::ValueType::Text,
    }
}

fn bench(c: &mut Criterion) {
    let registry = ClassRegistry::default();
    let engine = TemplateEngine::new();
    let mut inputs = Inputs {
        document: DocumentContext {
            id: 1,
            label: "INV-1".into(),
            document_type_label: "Invoice".into(),
            created: chrono::Utc::now(),
            metadata: vec![MetadataEntry {
                name: "number".into(),
                label: "Number".into(),
                value: "42".into(),
            }],
        },
    };
    let dated = CompiledMetadataType::new(
        metadata_type(
            "",
            "svc.apps.metadata.metadata_validators.DateValidator",
            "svc.apps.metadata.metadata_parsers.DateParser",
        ),
        &registry,
    )
    .expect("compile");
    let values: Vec<String> = (0..1000)
        .map(|i| format!("{:02}/{:02}/20{:02}", i % 28 + 1, i % 12 + 1, i % 100))
        .collect();
    let mut group = c.benchmark_group("pipeline");
    group.throughput(Throughput::Elements(values.len() as u64));
    group.bench_function("date validator + parser, 1000 values", |b| {
        b.iter(|| {
            for v in &values {
                black_box(
                    dated
                        .process(black_box(v), true, &engine, &mut inputs)
                        .expect("valid"),
                );
            }
        })
    });
    let templated = CompiledMetadataType::new(
        metadata_type(r#"{{ now|date:"Y-m-d" }}"#, "", ""),
        &registry,
    )
    .expect("compile");
    group.bench_function("template default, 1000 values", |b| {
        b.iter(|| {
            for _ in 0..1000 {
                black_box(
                    templated
                        .process("", true, &engine, &mut inputs)
                        .expect("renders"),
                );
            }
        })
    });
    let regex = CompiledMetadataType::new(
        MetadataType {
            validation_arguments: "pattern: 'INV-[0-9]+'".into(),
            parser_arguments: "pattern: '-'\nreplacement: ''".into(),
            ..metadata_type(
                "",
                "svc.apps.metadata.metadata_validators.RegularExpressionValidator",
                "svc.apps.metadata.metadata_parsers.RegularExpressionParser",
            )
        },
        &registry,
    )
    .expect("compile");
    let numbers: Vec<String> = (0..1000).map(|i| format!("INV-{i}")).collect();
    group.bench_function("regex validator + parser, 1000 values", |b| {
        b.iter(|| {
            for v in &numbers {
                black_box(
                    regex
                        .process(black_box(v), true, &engine, &mut inputs)
                        .expect("valid"),
                );
            }
        })
    });
    group.finish();
}

criterion_group! {
    name = benches;
    config = Criterion::default().sample_size(20).measurement_time(std::time::Duration::from_secs(3));
    targets = bench
}
criterion_main!(benches);
