-- Workflows (spec 4.5, 6, 5.3): templates bound to document types, states, transitions
-- with condition templates and metadata triggers, actions on state entry or exit, instances per
-- document and their log.
CREATE TABLE workflows (
    id INTEGER PRIMARY KEY AUTOINCREMENT,
    label TEXT NOT NULL UNIQUE
);
CREATE TABLE workflow_document_types (
    workflow_id INTEGER NOT NULL REFERENCES workflows(id),
    document_type_id INTEGER NOT NULL REFERENCES document_types(id),
    PRIMARY KEY (workflow_id, document_type_id)
);
CREATE INDEX workflow_document_types_by_type ON workflow_document_types(document_type_id);
CREATE TABLE workflow_states (
    id INTEGER PRIMARY KEY AUTOINCREMENT,
    workflow_id INTEGER NOT NULL REFERENCES workflows(id),
    label TEXT NOT NULL,
    initial INTEGER NOT NULL DEFAULT 0,
    UNIQUE (workflow_id, label)
);
CREATE TABLE workflow_transitions (
    id INTEGER PRIMARY KEY AUTOINCREMENT,
    workflow_id INTEGER NOT NULL REFERENCES workflows(id),
    label TEXT NOT NULL,
    origin_state_id INTEGER NOT NULL REFERENCES workflow_states(id),
    destination_state_id INTEGER NOT NULL REFERENCES workflow_states(id),
    condition TEXT NOT NULL DEFAULT '',
    UNIQUE (workflow_id, label)
);
CREATE TABLE workflow_transition_triggers (
    id INTEGER PRIMARY KEY AUTOINCREMENT,
    transition_id INTEGER NOT NULL REFERENCES workflow_transitions(id),
    event_name TEXT NOT NULL,
    UNIQUE (transition_id, event_name)
);
CREATE TABLE workflow_state_actions (
    id INTEGER PRIMARY KEY AUTOINCREMENT,
    state_id INTEGER NOT NULL REFERENCES workflow_states(id),
    label TEXT NOT NULL,
    on_entry INTEGER NOT NULL,
    critical INTEGER NOT NULL DEFAULT 0,
    action TEXT NOT NULL
);
CREATE TABLE workflow_instances (
    id INTEGER PRIMARY KEY AUTOINCREMENT,
    workflow_id INTEGER NOT NULL REFERENCES workflows(id),
    document_id INTEGER NOT NULL REFERENCES documents(id),
    state_id INTEGER REFERENCES workflow_states(id),
    context TEXT NOT NULL DEFAULT '{}',
    UNIQUE (workflow_id, document_id)
);
CREATE INDEX workflow_instances_by_document ON workflow_instances(document_id);
CREATE TABLE workflow_instance_log (
    id INTEGER PRIMARY KEY AUTOINCREMENT,
    instance_id INTEGER NOT NULL REFERENCES workflow_instances(id),
    transition_id INTEGER REFERENCES workflow_transitions(id),
    user_id INTEGER,
    comment TEXT NOT NULL,
    error INTEGER NOT NULL DEFAULT 0,
    created INTEGER NOT NULL
);
CREATE INDEX workflow_instance_log_by_instance ON workflow_instance_log(instance_id, id);
