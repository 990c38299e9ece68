// The docmeta Kotlin bindings on the real library: the value pipeline, an ACL rule, errors as
// exceptions, an event callback, files, search, and a workflow driven by a metadata edit.
import docmeta.*
import kotlin.system.exitProcess

fun expect(ok: Boolean, what: String) {
    if (!ok) {
        System.err.println("FAILED: $what")
        exitProcess(1)
    }
}

class Collector : EventListener {
    val names: MutableList<String> = java.util.Collections.synchronizedList(mutableListOf())
    override fun onEvent(event: Event) {
        names.add(event.name)
    }
}

fun main() {
    val db = Docmeta.inMemory()
    val events = Collector()
    val subscription = db.subscribe(events)
    val admin = db.system()
    val invoice = admin.createDocumentType("Invoice")
    val due = admin.createMetadataType(
        MetadataTypeSpec(
            name = "due",
            label = "Due date",
            parser = "svc.apps.metadata.metadata_parsers.DateParser",
            validation = "svc.apps.metadata.metadata_validators.DateValidator",
        )
    )
    admin.associate(invoice.id, due.id, true)
    val doc = admin.createDocument(invoice.id, "INV-1", listOf(NewValue(due.id, "31/12/2024")))
    expect(admin.metadataValueOf(doc.id, "due") == "2024-12-31", "the parser normalised the date")

    // An ACL rule: a document-type ACL lets ann view the invoice.
    val ann = admin.createUser("ann", "a long password", false)
    val group = admin.createGroup("Accounting")
    val role = admin.createRole("Accountant")
    admin.setGroupMember(group, ann.id, true)
    admin.setRoleGroup(role, group, true)
    expect(!db.check(ann.id, "documents.document_view", "documents.document", doc.id), "denied before the grant")
    admin.grant("documents.document_view", role, "documents.documenttype", invoice.id)
    expect(db.check(ann.id, "documents.document_view", "documents.document", doc.id), "allowed after the grant")
    expect(db.session(ann.id).document(doc.id).label == "INV-1", "ann reads the invoice")

    // Errors are exceptions with their data.
    try {
        admin.addMetadata(doc.id, due.id, "31/02/2024")
        expect(false, "an invalid date is refused")
    } catch (e: DocmetaException.Validation) {
        expect(e.field == "value", "the error names the field: ${e.field}")
    }
    try {
        db.session(ann.id).deleteDocument(doc.id)
        expect(false, "ann may not delete")
    } catch (e: DocmetaException.PermissionDenied) {
    }
    try {
        admin.searchDocuments("label:(", 1u, 20u)
        expect(false, "a malformed query is refused")
    } catch (e: DocmetaException.InvalidInput) {
    }

    // The callback saw the commits, in order.
    expect(events.names.take(2) == listOf("documents.document_type_created", "metadata.metadata_type_created"), "events: ${events.names}")
    expect(events.names.contains("documents.document_created"), "document_created reached the listener")
    db.unsubscribe(subscription)
    val seen = events.names.size
    admin.createDocument(invoice.id, "INV-2", listOf(NewValue(due.id, "2025-01-31")))
    expect(events.names.size == seen, "no events after unsubscribe")

    // Files and search.
    val file = admin.addFile(doc.id, "scan.txt", "hello".toByteArray())
    expect(file.size == 5uL && file.mimetype == "text/plain", "file record $file")
    expect(admin.readFile(file.id).toString(Charsets.UTF_8) == "hello", "file bytes")
    val storage = db.verifyStorage()
    expect(storage.filesChecked == 1uL && storage.damaged.isEmpty(), "every stored file intact: $storage")
    expect(db.session(ann.id).searchDocuments("label:inv", 1u, 20u).count == 2uL, "search")

    // A workflow moved by a metadata edit.
    val status = admin.createMetadataType(MetadataTypeSpec(name = "status", label = "Status", defaultValue = "draft"))
    admin.associate(invoice.id, status.id, true)
    val flow = admin.createWorkflow("Approval", listOf(invoice.id))
    val draft = admin.createWorkflowState(flow, "draft", true)
    val done = admin.createWorkflowState(flow, "approved", false)
    val approve = admin.createWorkflowTransition(
        flow, "approve", draft, done,
        "{% if workflow_instance.document.metadata_value_of.status == 'ok' %}True{% endif %}"
    )
    admin.addWorkflowTrigger(flow, approve, "document_metadata_edited")
    val third = admin.createDocument(invoice.id, "INV-3", listOf(NewValue(due.id, "2025-02-28")))
    val statusValue = admin.metadata(third.id).first { it.metadataTypeId == status.id }
    admin.editMetadata(third.id, statusValue.id, "ok")
    expect(admin.workflowInstances(third.id).single().stateId == done, "the trigger moved the instance")
    // Issue #17: a document with its first file, lookup choices, states and transitions edited.
    val withFile = admin.createDocumentWithFile(invoice.id, "INV-4", listOf(NewValue(due.id, "2025-03-31")), "scan.txt", "hello".toByteArray())
    expect(withFile.file.documentId == withFile.document.id, "the file belongs to the new document")
    val kind = admin.createMetadataType(MetadataTypeSpec(name = "kind", label = "Kind", lookup = "a,b"))
    admin.associate(invoice.id, kind.id, false)
    expect(admin.documentLookupChoices(third.id, kind.id) == listOf("a", "b"), "lookup choices rendered")
    expect(admin.updateWorkflowState(flow, done, "done", null).label == "done", "state renamed")
    expect(admin.workflowState(flow, done).label == "done", "state read")
    expect(admin.updateWorkflowTransition(flow, approve, "accept", null, null, null).label == "accept", "transition renamed")
    expect(admin.workflowTransition(flow, approve).triggers == listOf("metadata.document_metadata_edited"), "transition read with its trigger")
    println("kotlin: all checks passed")
}
