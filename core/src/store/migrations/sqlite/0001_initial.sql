-- docmeta schema version 1: metadata, documents, access control, events and tasks.
CREATE TABLE metadata_types (
    id INTEGER PRIMARY KEY AUTOINCREMENT,
    name TEXT NOT NULL UNIQUE,
    label TEXT NOT NULL,
    default_value TEXT NOT NULL DEFAULT '',
    lookup TEXT NOT NULL DEFAULT '',
    validation TEXT NOT NULL DEFAULT '',
    validation_arguments TEXT NOT NULL DEFAULT '',
    parser TEXT NOT NULL DEFAULT '',
    parser_arguments TEXT NOT NULL DEFAULT ''
);
CREATE TABLE document_types (
    id INTEGER PRIMARY KEY AUTOINCREMENT,
    label TEXT NOT NULL UNIQUE
);
CREATE TABLE documents (
    id INTEGER PRIMARY KEY AUTOINCREMENT,
    label TEXT NOT NULL,
    document_type_id INTEGER NOT NULL REFERENCES document_types(id),
    created INTEGER NOT NULL
);
CREATE INDEX documents_by_type ON documents(document_type_id, id);
CREATE TABLE document_type_metadata_types (
    id INTEGER PRIMARY KEY AUTOINCREMENT,
    document_type_id INTEGER NOT NULL REFERENCES document_types(id),
    metadata_type_id INTEGER NOT NULL REFERENCES metadata_types(id),
    required INTEGER NOT NULL,
    UNIQUE (document_type_id, metadata_type_id)
);
CREATE INDEX associations_by_metadata_type ON document_type_metadata_types(metadata_type_id);
CREATE TABLE document_metadata (
    id INTEGER PRIMARY KEY AUTOINCREMENT,
    document_id INTEGER NOT NULL REFERENCES documents(id),
    metadata_type_id INTEGER NOT NULL REFERENCES metadata_types(id),
    value TEXT NOT NULL,
    UNIQUE (document_id, metadata_type_id)
);
CREATE INDEX document_metadata_by_type ON document_metadata(metadata_type_id);
CREATE TABLE events (
    id INTEGER PRIMARY KEY AUTOINCREMENT,
    timestamp INTEGER NOT NULL,
    name TEXT NOT NULL,
    actor_id INTEGER,
    target_kind TEXT NOT NULL,
    target_id INTEGER NOT NULL,
    target_label TEXT NOT NULL,
    action_kind TEXT,
    action_id INTEGER,
    action_label TEXT
);
CREATE INDEX events_by_target ON events(target_kind, target_id, id);
CREATE INDEX events_by_action_object ON events(action_kind, action_id, id);
CREATE TABLE tasks (
    id INTEGER PRIMARY KEY AUTOINCREMENT,
    name TEXT NOT NULL,
    payload TEXT NOT NULL,
    state TEXT NOT NULL,
    attempts INTEGER NOT NULL DEFAULT 0,
    error TEXT NOT NULL DEFAULT '',
    run_after INTEGER NOT NULL,
    created INTEGER NOT NULL,
    updated INTEGER NOT NULL
);
CREATE INDEX tasks_runnable ON tasks(state, run_after, id);
CREATE TABLE users (
    id INTEGER PRIMARY KEY AUTOINCREMENT,
    username TEXT NOT NULL UNIQUE,
    password_hash TEXT NOT NULL,
    is_superuser INTEGER NOT NULL,
    is_active INTEGER NOT NULL,
    created INTEGER NOT NULL
);
CREATE TABLE groups (
    id INTEGER PRIMARY KEY AUTOINCREMENT,
    name TEXT NOT NULL UNIQUE
);
CREATE TABLE group_users (
    group_id INTEGER NOT NULL REFERENCES groups(id),
    user_id INTEGER NOT NULL REFERENCES users(id),
    PRIMARY KEY (group_id, user_id)
);
CREATE TABLE roles (
    id INTEGER PRIMARY KEY AUTOINCREMENT,
    label TEXT NOT NULL UNIQUE
);
CREATE TABLE role_groups (
    role_id INTEGER NOT NULL REFERENCES roles(id),
    group_id INTEGER NOT NULL REFERENCES groups(id),
    PRIMARY KEY (role_id, group_id)
);
CREATE TABLE role_permissions (
    role_id INTEGER NOT NULL REFERENCES roles(id),
    permission TEXT NOT NULL,
    PRIMARY KEY (role_id, permission)
);
CREATE TABLE acls (
    id INTEGER PRIMARY KEY AUTOINCREMENT,
    object_kind TEXT NOT NULL,
    object_id INTEGER NOT NULL,
    role_id INTEGER NOT NULL REFERENCES roles(id),
    UNIQUE (object_kind, object_id, role_id)
);
CREATE TABLE acl_permissions (
    acl_id INTEGER NOT NULL REFERENCES acls(id),
    permission TEXT NOT NULL,
    PRIMARY KEY (acl_id, permission)
);
CREATE TABLE cabinets (
    id INTEGER PRIMARY KEY AUTOINCREMENT,
    label TEXT NOT NULL,
    parent_id INTEGER REFERENCES cabinets(id)
);
CREATE INDEX cabinets_by_parent ON cabinets(parent_id);
CREATE TABLE cabinet_documents (
    cabinet_id INTEGER NOT NULL REFERENCES cabinets(id),
    document_id INTEGER NOT NULL REFERENCES documents(id),
    PRIMARY KEY (cabinet_id, document_id)
);
CREATE TABLE object_parents (
    object_kind TEXT NOT NULL,
    object_id INTEGER NOT NULL,
    parent_kind TEXT NOT NULL,
    parent_id INTEGER NOT NULL,
    PRIMARY KEY (object_kind, object_id, parent_kind, parent_id)
);
CREATE TABLE settings (
    key TEXT PRIMARY KEY,
    value TEXT NOT NULL
);
