//! The access evaluator on a generated world of 1,000 users, 200 groups, 100 roles,
//! 1,000,000 documents in 500 document types and 100,000 ACLs.
//! Targets: `check` ≤ 1 µs median; `filter` of all 1,000,000 documents ≤ 150 ms; snapshot
//! refresh after one grant ≤ 1 ms.

use std::hint::black_box;
use std::time::Instant;

use criterion::{Criterion, criterion_group, criterion_main};
use docmeta_core::AccessSnapshot;
use docmeta_core::store::{Mode, Param};
use docmeta_core::{
    AclId, Docmeta, GroupId, ObjectKind, ObjectRef, Permission as P, PermissionSet, RoleId, UserId,
};

const USERS: i64 = 1_000;
const GROUPS: i64 = 200;
const ROLES: i64 = 100;
const DOCUMENTS: i64 = 1_000_000;
const TYPES: i64 = 500;
const ACLS: i64 = 100_000;

/// xorshift64*: deterministic, dependency-free.
struct Rng(u64);
impl Rng {
    fn next(&mut self, n: i64) -> i64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        (self.0.wrapping_mul(0x2545_F491_4F6C_DD1D) % n as u64) as i64
    }
}

const ACL_PERMS: [P; 4] = [
    P::DocumentView,
    P::DocumentEdit,
    P::DocumentMetadataView,
    P::DocumentMetadataEdit,
];

/// The world written straight into a SQLite data directory, then opened by docmeta (which
/// loads the snapshot), so the grant benchmark runs the real session path.
fn build_world(dir: &std::path::Path) -> Docmeta {
    let db = Docmeta::builder()
        .data_dir(dir)
        .worker(false)
        .open()
        .expect("open");
    let mut rng = Rng(0x9E37_79B9_7F4A_7C15);
    let mut tx = db.store().begin(Mode::Write).expect("begin");
    for u in 1..=USERS {
        tx.execute("INSERT INTO users (id, username, password_hash, is_superuser, is_active, created) VALUES (?1, ?2, 'x', 0, 1, 0)", &[Param::Int(u), Param::Text(&format!("user{u}"))]).expect("user");
    }
    for g in 1..=GROUPS {
        tx.execute(
            "INSERT INTO groups (id, name) VALUES (?1, ?2)",
            &[Param::Int(g), Param::Text(&format!("group{g}"))],
        )
        .expect("group");
    }
    for r in 1..=ROLES {
        tx.execute(
            "INSERT INTO roles (id, label) VALUES (?1, ?2)",
            &[Param::Int(r), Param::Text(&format!("role{r}"))],
        )
        .expect("role");
    }
    for u in 1..=USERS {
        for _ in 0..1 + rng.next(3) {
            tx.execute("INSERT INTO group_users (group_id, user_id) VALUES (?1, ?2) ON CONFLICT DO NOTHING", &[Param::Int(1 + rng.next(GROUPS)), Param::Int(u)]).expect("member");
        }
    }
    for g in 1..=GROUPS {
        for _ in 0..1 + rng.next(2) {
            tx.execute("INSERT INTO role_groups (role_id, group_id) VALUES (?1, ?2) ON CONFLICT DO NOTHING", &[Param::Int(1 + rng.next(ROLES)), Param::Int(g)]).expect("role group");
        }
    }
    // A few roles hold unrelated global permissions, as real installations do.
    for r in 1..=10 {
        tx.execute(
            "INSERT INTO role_permissions (role_id, permission) VALUES (?1, 'tags.tag_view')",
            &[Param::Int(r)],
        )
        .expect("global");
    }
    for t in 1..=TYPES {
        tx.execute(
            "INSERT INTO document_types (id, label) VALUES (?1, ?2)",
            &[Param::Int(t), Param::Text(&format!("type{t}"))],
        )
        .expect("type");
    }
    for d in 1..=DOCUMENTS {
        tx.execute(
            "INSERT INTO documents (id, label, document_type_id, created) VALUES (?1, 'd', ?2, 0)",
            &[Param::Int(d), Param::Int(1 + (d % TYPES))],
        )
        .expect("document");
    }
    let mut acl_id = 0;
    for i in 0..ACLS {
        // One ACL per document type (the common set-up), the rest on single documents.
        let (kind, object) = if i < TYPES {
            ("documents.documenttype", i + 1)
        } else {
            ("documents.document", 1 + rng.next(DOCUMENTS))
        };
        let role = 1 + rng.next(ROLES);
        let inserted = tx.execute("INSERT INTO acls (object_kind, object_id, role_id) VALUES (?1, ?2, ?3) ON CONFLICT DO NOTHING", &[Param::Text(kind), Param::Int(object), Param::Int(role)]).expect("acl");
        if inserted == 0 {
            continue;
        }
        acl_id += 1;
        let perm = ACL_PERMS[rng.next(4) as usize].key();
        tx.execute("INSERT INTO acl_permissions (acl_id, permission) SELECT id, ?1 FROM acls WHERE object_kind = ?2 AND object_id = ?3 AND role_id = ?4", &[Param::Text(perm), Param::Text(kind), Param::Int(object), Param::Int(role)]).expect("acl permission");
    }
    tx.commit().expect("commit");
    eprintln!("world: {acl_id} ACLs written");
    drop(db);
    let started = Instant::now();
    let db = Docmeta::builder()
        .data_dir(dir)
        .worker(false)
        .open()
        .expect("reopen");
    eprintln!(
        "opening docmeta and loading the access snapshot of the world took {:?}",
        started.elapsed()
    );
    db
}

fn bench(c: &mut Criterion) {
    let dir = tempfile::tempdir().expect("tempdir");
    let started = Instant::now();
    let db = build_world(dir.path());
    eprintln!("world built in {:?}", started.elapsed());
    let docs: Vec<ObjectRef> = (1..=DOCUMENTS)
        .map(|d| ObjectRef::new(ObjectKind::DOCUMENT, d))
        .collect();
    let mut rng = Rng(42);
    let probes: Vec<(UserId, ObjectRef)> = (0..4096)
        .map(|_| {
            (
                UserId(1 + rng.next(USERS)),
                docs[rng.next(DOCUMENTS) as usize],
            )
        })
        .collect();
    let granted = probes
        .iter()
        .filter(|(u, o)| db.check(*u, P::DocumentView, *o))
        .count();
    eprintln!("{granted} of {} probes granted", probes.len());

    let mut group = c.benchmark_group("access");
    let mut i = 0;
    group.bench_function("check (random user, random document)", |b| {
        b.iter(|| {
            i = (i + 1) & 4095;
            let (u, o) = probes[i];
            black_box(db.check(u, P::DocumentView, o))
        })
    });
    let user = UserId(7);
    group.bench_function("filter 1,000,000 documents for one user", |b| {
        b.iter(|| black_box(db.filter(user, P::DocumentView, &docs).len()))
    });
    eprintln!(
        "user 7 sees {} documents",
        db.filter(user, P::DocumentView, &docs).len()
    );

    // The in-memory refresh alone, on a snapshot of the same size.
    let mut snapshot = AccessSnapshot::default();
    for d in 1..=DOCUMENTS {
        snapshot.set_parents(
            ObjectRef::new(ObjectKind::DOCUMENT, d),
            vec![ObjectRef::new(ObjectKind::DOCUMENT_TYPE, 1 + d % TYPES)],
        );
    }
    for a in 0..ACLS {
        snapshot.set_acl(
            ObjectRef::new(ObjectKind::DOCUMENT, 1 + (a * 7919) % DOCUMENTS),
            AclId(a),
            RoleId(1 + a % ROLES),
            PermissionSet::of(&[P::DocumentView]),
        );
    }
    for u in 1..=USERS {
        snapshot.set_user(UserId(u), false, true);
        snapshot.set_membership(GroupId(1 + u % GROUPS), UserId(u), true);
    }
    for g in 1..=GROUPS {
        snapshot.set_role_group(RoleId(1 + g % ROLES), GroupId(g), true);
    }
    let mut n = 0i64;
    group.bench_function("snapshot refresh after one grant (in memory)", |b| {
        b.iter(|| {
            n += 1;
            snapshot.set_acl(
                ObjectRef::new(ObjectKind::DOCUMENT, 1 + n % DOCUMENTS),
                AclId(1_000_000 + n),
                RoleId(1 + n % ROLES),
                PermissionSet::of(&[P::DocumentEdit]),
            );
        })
    });
    group.bench_function("role permission change (recomputes its users)", |b| {
        b.iter(|| {
            n += 1;
            snapshot.set_role_permissions(
                RoleId(1 + n % ROLES),
                PermissionSet::of(&[if n % 2 == 0 { P::TagView } else { P::TagEdit }]),
            );
        })
    });
    let admin = db.system();
    let mut d = 0i64;
    group.bench_function(
        "grant through a session (transaction + event + refresh)",
        |b| {
            b.iter(|| {
                d += 1;
                admin
                    .grant(
                        P::DocumentEdit,
                        RoleId(1 + d % ROLES),
                        ObjectRef::new(ObjectKind::DOCUMENT, 1 + (d * 104_729) % DOCUMENTS),
                    )
                    .expect("grant");
            })
        },
    );
    group.finish();
}

criterion_group! {
    name = benches;
    config = Criterion::default().sample_size(20).measurement_time(std::time::Duration::from_secs(4));
    targets = bench
}
criterion_main!(benches);
