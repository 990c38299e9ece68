// The docmeta Kotlin bindings on the real library, run from the packaged JAR (the native library
// comes out of it as a JNA resource). One function per group of operations; each opens its own
// instance, and a failed check stops the run naming the group and what was expected.
import docmeta.*
import java.nio.file.Files
import kotlin.system.exitProcess

var group = ""

fun expect(ok: Boolean, what: String) {
    if (!ok) {
        System.err.println("FAILED [$group]: $what")
        exitProcess(1)
    }
}

/** Runs `block`, which must throw an `E`; returns it. */
inline fun <reified E : Throwable> refused(what: String, block: () -> Unit): E {
    try {
        block()
    } catch (e: Throwable) {
        if (e is E) return e
        expect(false, "$what: expected ${E::class.simpleName}, got $e")
    }
    expect(false, "$what: expected ${E::class.simpleName}, nothing was thrown")
    throw IllegalStateException()
}

const val DATE_VALIDATOR = "svc.apps.metadata.metadata_validators.DateValidator"
const val DATE_PARSER = "svc.apps.metadata.metadata_parsers.DateParser"
const val VIEW = "documents.document_view"

class Collector : EventListener {
    val names: MutableList<String> = java.util.Collections.synchronizedList(mutableListOf())
    override fun onEvent(event: Event) {
        names.add(event.name)
    }
}

/** An invoice type with a required, parsed and validated due date. */
class Invoices(val db: Docmeta) {
    val admin = db.system()
    val type = admin.createDocumentType("Invoice")
    val due = admin.createMetadataType(
        MetadataTypeSpec(name = "due", label = "Due date", parser = DATE_PARSER, validation = DATE_VALIDATOR)
    )
    val association = admin.associate(type.id, due.id, true)
    fun invoice(label: String, date: String = "2025-01-31") =
        admin.createDocument(type.id, label, listOf(NewValue(due.id, date)))
}

fun metadata() {
    val inv = Invoices(Docmeta.inMemory())
    val admin = inv.admin
    val doc = inv.invoice("INV-1", "31/12/2024")
    expect(admin.metadataValueOf(doc.id, "due") == "2024-12-31", "the parser normalised the date")
    val e = refused<DocmetaException.Validation>("an impossible date") {
        admin.addDocumentMetadata(doc.id, inv.due.id, "31/02/2024")
    }
    expect(e.field == "value", "the refusal names the field: ${e.field}")

    // Metadata types: read, update, delete.
    expect(admin.metadataType(inv.due.id).parser == DATE_PARSER, "the type's whole definition is read")
    expect(admin.metadataTypeByName("due").id == inv.due.id, "a type found by name")
    val note = admin.createMetadataType(MetadataTypeSpec(name = "note", label = "Note"))
    val renamed = admin.updateMetadataType(note.id, MetadataTypeSpec(name = "note", label = "Remark", defaultValue = "none"))
    expect(renamed.label == "Remark" && renamed.defaultValue == "none", "type updated: $renamed")
    admin.deleteMetadataType(note.id)
    expect(admin.metadataTypes().none { it.id == note.id }, "type deleted")

    // Document types and associations.
    expect(admin.documentTypes().map { it.label } == listOf("Invoice"), "document types listed")
    expect(admin.updateDocumentType(inv.type.id, "Bill").label == "Bill", "document type renamed")
    expect(admin.documentType(inv.type.id).label == "Bill", "document type read")
    val only = admin.associations(inv.type.id).single()
    expect(only.metadataType.name == "due" && only.required, "association with its types: $only")
    expect(!admin.updateAssociation(inv.type.id, only.id, false).required, "association made optional")
    expect(admin.association(inv.type.id, only.id).documentType.label == "Bill", "association read")

    // Documents: update, change type, values one by one, in a batch, with details.
    expect(admin.updateDocument(doc.id, "INV-1b").label == "INV-1b", "document renamed")
    val other = admin.createDocumentType("Receipt")
    val total = admin.createMetadataType(MetadataTypeSpec(name = "total", label = "Total"))
    val totalOnReceipt = admin.associate(other.id, total.id, false)
    expect(admin.changeDocumentType(doc.id, other.id).documentTypeId == other.id, "document type changed")
    expect(admin.documentMetadata(doc.id).none { it.metadataTypeId == inv.due.id }, "values of the old type dropped")
    val added = admin.addDocumentMetadataBatch(listOf(NewDocumentValue(doc.id, total.id, "12.50")))
    expect(added.single().value == "12.50", "batch added: $added")
    expect(admin.metadataValue(doc.id, added.single().id).value == "12.50", "one value read")
    val edited = admin.editDocumentMetadata(doc.id, added.single().id, "13.00")
    expect(edited.value == "13.00", "value edited")
    // A value's metadata type never changes: naming another one is refused.
    val retyped = refused<DocmetaException.Validation>("another metadata type") {
        admin.editDocumentMetadata(doc.id, edited.id, "14.00", inv.due.id)
    }
    expect(retyped.field == "metadata_type_id", "the refusal names the type: ${retyped.field}")
    expect(admin.editDocumentMetadata(doc.id, edited.id, "13.00", total.id).value == "13.00", "its own type accepted")
    val details = admin.documentMetadataDetails(doc.id)
    expect(details.values.single().metadataType.name == "total", "details carry the types: $details")
    admin.removeDocumentMetadata(doc.id, edited.id)
    expect(admin.documentMetadata(doc.id).isEmpty(), "value removed")
    admin.deleteAssociation(other.id, totalOnReceipt.id)
    expect(admin.associations(other.id).isEmpty(), "association deleted")
    expect(admin.documentIds(other.id) == listOf(doc.id), "document ids of a type")
    admin.deleteDocument(doc.id)
    admin.deleteDocumentType(other.id)
    expect(admin.documentTypes().none { it.id == other.id }, "document type deleted")
}

fun documentBatch() {
    val inv = Invoices(Docmeta.inMemory())
    val admin = inv.admin
    val created = admin.createDocuments(listOf(
        NewDocument(inv.type.id, "B-1", listOf(NewValue(inv.due.id, "31/12/2024"))),
        NewDocument(inv.type.id, "B-2", listOf(NewValue(inv.due.id, "2025-01-31"))),
    ))
    expect(created.map { it.label } == listOf("B-1", "B-2"), "a batch creates its documents in order: $created")
    expect(admin.metadataValueOf(created[0].id, "due") == "2024-12-31", "each value went through the parser")
    val before = admin.documentIds(inv.type.id)
    val e = refused<DocmetaException.Validation>("an impossible date in the second document") {
        admin.createDocuments(listOf(
            NewDocument(inv.type.id, "B-3", listOf(NewValue(inv.due.id, "2025-01-31"))),
            NewDocument(inv.type.id, "B-4", listOf(NewValue(inv.due.id, "31/02/2024"))),
        ))
    }
    expect(e.field == "documents[1].metadata[0].value", "the refusal names its entry: ${e.field}")
    expect(admin.documentIds(inv.type.id) == before, "a refused batch creates nothing")
    val tooMany = refused<DocmetaException.Validation>("a batch above the bound") {
        admin.createDocuments(List(1001) { NewDocument(inv.type.id, "many", listOf(NewValue(inv.due.id, "2025-01-31"))) })
    }
    expect(tooMany.field == "documents", "the bound is refused on documents: ${tooMany.field}")
}

fun accessAndExplain() {
    val inv = Invoices(Docmeta.inMemory())
    val (db, admin) = inv.db to inv.admin
    val doc = inv.invoice("INV-1")
    val ann = admin.createUser("ann", "a long password", false)
    val group = admin.createGroup("Accounting")
    val role = admin.createRole("Accountant")
    expect(admin.setGroupMember(group.id, ann.id, true).name == "Accounting", "member added")
    admin.setRoleGroup(role.id, group.id, true)
    expect(admin.groupMembers(group.id) == listOf(ann.id) && admin.roleGroups(role.id) == listOf(group.id), "memberships read")
    expect(!db.check(ann.id, VIEW, "documents.document", doc.id), "denied before the grant")
    val denied = db.explain(ann.id, VIEW, "documents.document", doc.id)
    expect(!denied.granted && denied.grant == null && denied.sentence.isNotEmpty(), "refusal explained: $denied")

    // An ACL on the document type reaches the document by inheritance.
    val acl = admin.grant(VIEW, role.id, "documents.documenttype", inv.type.id)
    expect(acl.role.label == "Accountant" && acl.permissions == listOf(VIEW), "the grant's ACL: $acl")
    expect(db.check(ann.id, VIEW, "documents.document", doc.id), "allowed after the grant")
    val why = db.explain(ann.id, VIEW, "documents.document", doc.id)
    val grant = why.grant
    expect(why.granted && grant is Grant.Acl, "granted by an ACL: $why")
    grant as Grant.Acl
    expect(grant.role == role.id && grant.target == ObjectRef("documents.documenttype", inv.type.id), "the ACL's object: $grant")
    expect(grant.path.first() == ObjectRef("documents.document", doc.id), "inherited from the document's type: ${grant.path}")
    expect(why.sentence.startsWith("granted"), "one sentence: ${why.sentence}")
    expect(db.session(ann.id).explain(ann.id, VIEW, "documents.document", doc.id) == why, "a user may ask about herself")
    val objects = listOf(ObjectRef("documents.document", doc.id), ObjectRef("documents.document", doc.id + 100))
    expect(db.filter(ann.id, VIEW, objects) == objects.take(1), "filter keeps what she may view")

    // ACL administration by id.
    val target = ObjectRef("documents.document", doc.id)
    val docAcl = admin.createAcl(target, role.id)
    expect(docAcl.permissions.isEmpty(), "a new ACL is empty")
    expect(admin.aclAddPermission(target, docAcl.id, "documents.document_edit").permissions == listOf("documents.document_edit"), "permission added")
    expect(admin.acls(target).map { it.id } == listOf(docAcl.id), "ACLs listed")
    expect(admin.aclRemovePermission(target, docAcl.id, "documents.document_edit") == null, "emptied ACL removed")
    val again = admin.createAcl(target, role.id)
    admin.deleteAcl(target, again.id)
    refused<DocmetaException.NotFound>("a deleted ACL") { admin.acl(target, again.id) }
    expect(admin.revoke(VIEW, role.id, "documents.documenttype", inv.type.id) == null, "last permission revoked")
    expect(!db.check(ann.id, VIEW, "documents.document", doc.id), "denied after the revoke")

    // Global permissions.
    admin.grantGlobal(VIEW, role.id)
    expect(admin.rolePermissions(role.id) == listOf(VIEW), "role permissions read")
    expect(db.session(ann.id).canGlobally(VIEW), "granted globally")
    val global = db.explain(ann.id, VIEW, "documents.document", doc.id).grant
    expect(global == Grant.Global(role.id, group.id), "explained as global: $global")
    admin.revokeGlobal(VIEW, role.id)
    expect(admin.setRolePermission(role.id, "documents.document_edit", true) == listOf("documents.document_edit"), "set role permission")

    // An application's own kind, its existence check and its parents.
    val note = db.registerKind("notes", "note", listOf(), listOf("document_comments.document_comment_view"))
    expect(note == "notes.note" && db.kinds().any { it.name == note }, "kind registered")
    db.setKindExistence(note, object : ObjectExistence {
        override fun exists(id: Long): Boolean {
            if (id == 6L) throw IllegalStateException("the app's store is down")
            return id % 2 == 0L
        }
    })
    admin.createAcl(ObjectRef(note, 4), role.id)
    refused<DocmetaException.NotFound>("an object the existence check denies") { admin.createAcl(ObjectRef(note, 5), role.id) }
    refused<DocmetaException.NotFound>("an existence check that throws") { admin.createAcl(ObjectRef(note, 6), role.id) }
    val comment = db.registerKind("notes", "comment", listOf("documents.document"), listOf("document_comments.document_comment_view"))
    db.setObjectParents(ObjectRef(comment, 9), listOf(ObjectRef("documents.document", doc.id)))
    admin.grant("document_comments.document_comment_view", role.id, "documents.document", doc.id)
    expect(db.check(ann.id, "document_comments.document_comment_view", comment, 9), "a comment inherits its document's ACL")

    // Users, groups and roles administration.
    expect(admin.updateUser(ann.id, UserUpdate(isActive = false)).isActive.not(), "user deactivated")
    expect(admin.user(ann.id).username == "ann" && admin.users().any { it.id == ann.id }, "users read")
    expect(admin.renameGroup(group.id, "Finance").name == "Finance" && admin.group(group.id).name == "Finance", "group renamed")
    expect(admin.renameRole(role.id, "Clerk").label == "Clerk" && admin.role(role.id).label == "Clerk", "role renamed")
    expect(admin.groups().size == 1 && admin.roles().size == 1, "groups and roles listed")
    admin.setPassword(ann.id, "another long password")
    admin.updateUser(ann.id, UserUpdate(isActive = true))
    expect(db.authenticate("ann", "another long password")?.id == ann.id, "the new password authenticates")
    admin.deleteRole(role.id)
    admin.deleteGroup(group.id)
    admin.deleteUser(ann.id)
    expect(admin.users().none { it.id == ann.id } && admin.groups().isEmpty() && admin.roles().isEmpty(), "deleted")
}

fun cabinets() {
    val inv = Invoices(Docmeta.inMemory())
    val admin = inv.admin
    val doc = inv.invoice("INV-1")
    val root = admin.createCabinet("2025", null)
    val child = admin.createCabinet("January", root.id)
    expect(child.parentId == root.id, "a cabinet under another")
    admin.setCabinetDocument(child.id, doc.id, true)
    expect(admin.cabinetDocuments(child.id) == listOf(doc.id), "the document is in the cabinet")
    expect(admin.renameCabinet(child.id, "Jan").label == "Jan" && admin.cabinet(child.id).label == "Jan", "renamed")
    admin.setCabinetDocument(child.id, doc.id, false)
    expect(admin.cabinetDocuments(child.id).isEmpty(), "taken out")
    admin.deleteCabinet(root.id)
    expect(admin.cabinets().isEmpty(), "a cabinet and those under it deleted")
}

fun workflows() {
    val inv = Invoices(Docmeta.inMemory())
    val admin = inv.admin
    val status = admin.createMetadataType(MetadataTypeSpec(name = "status", label = "Status", defaultValue = "draft"))
    admin.associate(inv.type.id, status.id, true)
    val flow = admin.createWorkflow("Approval", listOf(inv.type.id))
    val draft = admin.createWorkflowState(flow.id, "draft", true)
    val done = admin.createWorkflowState(flow.id, "approved", false)
    val approve = admin.createWorkflowTransition(
        flow.id, "approve", draft.id, done.id,
        "{% if workflow_instance.document.metadata_value_of.status == 'ok' %}True{% endif %}"
    )
    expect(admin.addWorkflowTrigger(flow.id, approve.id, "document_metadata_edited").triggers.size == 1, "trigger added")
    val stamp = admin.createWorkflowAction(
        flow.id, done.id, "stamp", true, false,
        WorkflowActionKind.EditMetadata(inv.due.id, "2030-01-01")
    )
    expect(admin.workflowActions(flow.id, done.id).single().action == stamp.action, "typed action read back")

    // A metadata edit fires the trigger; the entry action runs.
    val doc = inv.invoice("INV-3")
    val instance = admin.workflowInstances(doc.id).single()
    expect(admin.availableTransitions(doc.id, instance.id).isEmpty(), "the condition holds the transition back")
    val statusValue = admin.documentMetadata(doc.id).first { it.metadataTypeId == status.id }
    admin.editDocumentMetadata(doc.id, statusValue.id, "ok")
    inv.db.runPendingTasks()
    expect(admin.workflowInstance(doc.id, instance.id).stateId == done.id, "the trigger moved the instance")
    expect(admin.metadataValueOf(doc.id, "due") == "2030-01-01", "the entry action set the date")
    expect(admin.workflowLog(doc.id, instance.id).any { it.transitionId == approve.id }, "the log records the transition")

    // A transition taken by hand.
    val back = admin.createWorkflowTransition(flow.id, "reopen", done.id, draft.id, "")
    expect(admin.availableTransitions(doc.id, instance.id).map { it.id } == listOf(back.id), "available transitions")
    val entry = admin.transitionWorkflow(doc.id, instance.id, back.id, "needs a fix")
    expect(entry.comment == "needs a fix" && entry.transitionId == back.id, "log entry: $entry")

    // Reading, updating, deleting the definition.
    expect(admin.workflows().single().label == "Approval" && admin.workflow(flow.id).documentTypeIds == listOf(inv.type.id), "workflow read")
    expect(admin.updateWorkflow(flow.id, "Review", null).label == "Review", "workflow renamed")
    expect(admin.workflowStates(flow.id).map { it.label } == listOf("draft", "approved"), "states listed")
    expect(admin.updateWorkflowState(flow.id, done.id, "done", null).label == "done", "state renamed")
    expect(admin.workflowTransitions(flow.id).size == 2, "transitions listed")
    expect(admin.updateWorkflowTransition(flow.id, approve.id, "accept", null, null, null).label == "accept", "transition renamed")
    expect(admin.removeWorkflowTrigger(flow.id, approve.id, "document_metadata_edited").triggers.isEmpty(), "trigger removed")
    admin.deleteWorkflowAction(flow.id, done.id, stamp.id)
    expect(admin.workflowActions(flow.id, done.id).isEmpty(), "action deleted")
    admin.deleteWorkflow(flow.id)
    expect(admin.workflows().isEmpty(), "workflow deleted")
}

fun search() {
    val inv = Invoices(Docmeta.inMemory())
    val (db, admin) = inv.db to inv.admin
    inv.invoice("INV-1", "2024-12-31")
    inv.invoice("INV-2", "2025-01-31")
    db.waitForIndex()
    expect(admin.searchDocuments("label:inv", 1u, 20u).count == 2uL, "documents found")
    val values = admin.searchMetadata("value:2024-12-31", 1u, 20u)
    expect(values.count == 1uL && values.results.single().value == "2024-12-31", "a value found: $values")
    val stranger = admin.createUser("bob", "a long password", false)
    expect(db.session(stranger.id).searchDocuments("label:inv", 1u, 20u).count == 0uL, "results filtered by access")
    refused<DocmetaException.InvalidInput>("a malformed query") { admin.searchDocuments("label:(", 1u, 20u) }
    val status = db.searchStatus()
    expect(status.documents == 2uL && status.schemaCurrent, "index status: $status")
    expect(db.searchIndexObjects("documents.document", null, null) == 2uL, "documents indexed again")
    expect(db.searchReindex(null) == 2uL && !db.searchRebuilding(), "index rebuilt")
    expect(db.searchWork(SearchWork.Upgrade, null) is SearchWorkRun.Done, "work ran in this process")
}

/** Typed metadata types, field-bound terms, sorting, and a change of value type checked first. */
fun typedSearch() {
    val db = Docmeta.inMemory()
    val admin = db.system()
    val invoice = admin.createDocumentType("Invoice")
    val amount = admin.createMetadataType(MetadataTypeSpec(name = "amount", label = "Amount", valueType = ValueType.DECIMAL))
    val po = admin.createMetadataType(MetadataTypeSpec(name = "po_number", label = "PO number"))
    expect(amount.valueType == ValueType.DECIMAL && po.valueType == ValueType.TEXT, "value types: $amount $po")
    admin.associate(invoice.id, amount.id, false)
    admin.associate(invoice.id, po.id, false)
    val small = admin.createDocument(invoice.id, "small", listOf(NewValue(amount.id, "95.50"), NewValue(po.id, "PO-1")))
    val large = admin.createDocument(invoice.id, "large", listOf(NewValue(amount.id, "1200")))
    val none = admin.createDocument(invoice.id, "none", listOf())
    val refusedValue = refused<DocmetaException.Validation>("a value that is not a decimal") {
        admin.addDocumentMetadata(none.id, amount.id, "twelve")
    }
    expect(refusedValue.field == "value", "the refusal names the value: ${refusedValue.field}")
    // As numbers 95.50 < 100 < 1200.
    expect(admin.searchDocuments("amount:>100", 1u, 20u).results.map { it.id } == listOf(large.id), "a typed range")
    expect(admin.searchDocuments("NOT has:po_number", 1u, 20u).count == 2uL, "documents without a value")
    val byAmount = admin.searchDocuments("label:small OR label:large OR label:none", 1u, 20u, "-amount")
    expect(byAmount.results.map { it.id } == listOf(large.id, small.id, none.id), "sorted, missing last: $byAmount")
    val listed = admin.documents(null, 0, 20u, "amount", 1u)
    expect(listed.map { it.id } == listOf(small.id, large.id, none.id), "a list in a typed order: $listed")
    val check = admin.checkValueType(po.id, ValueType.INTEGER)
    expect(check.checked == 1uL && check.count == 1uL && check.misfits.single().value == "PO-1", "the check: $check")
    val change = refused<DocmetaException.Validation>("a change of value type a value does not fit") {
        admin.updateMetadataType(po.id, MetadataTypeSpec(name = "po_number", label = "PO number", valueType = ValueType.INTEGER))
    }
    expect(change.field == "value_type", "the refusal names value_type: ${change.field}")
    refused<DocmetaException.InvalidInput>("a range of another form") { admin.searchDocuments("amount:[a TO b]", 1u, 20u) }
    // Templates previewed before they are saved, errors in the answer.
    val preview = admin.previewTemplates("{{ 6 * 7 }}", "a, b, {{ 'c' }}", large.id, null)
    expect(preview.default == "42" && preview.lookupChoices == listOf("a", "b", "c"), "the preview: $preview")
    val broken = admin.previewTemplates("{{ oops", "", null, null)
    expect(broken.default == null && broken.defaultError != null, "a broken default: $broken")
}

fun filesAndBackup() {
    val dir = Files.createTempDirectory("docmeta-kotlin")
    val inv = Invoices(Docmeta.open(dir.resolve("data").toString(), worker = false))
    val (db, admin) = inv.db to inv.admin
    val doc = inv.invoice("INV-1")
    admin.checkAddFile(doc.id)
    admin.checkCreateDocument(inv.type.id, true)
    val nobody = admin.createUser("nobody", "a long password", false)
    refused<DocmetaException.Validation>("a document of a type the user may not see") {
        db.session(nobody.id).checkCreateDocument(inv.type.id, true)
    }
    val file = admin.addFile(doc.id, "scan.txt", "hello".toByteArray())
    expect(file.size == 5uL && file.mimetype == "text/plain", "file record $file")
    expect(admin.readFile(file.id).toString(Charsets.UTF_8) == "hello", "file bytes")
    val copy = dir.resolve("copy.txt")
    expect(admin.openFile(file.id, copy.toString()) == admin.file(file.id), "file streamed out")
    expect(Files.readString(copy) == "hello", "streamed bytes")
    val storage = db.verifyStorage()
    expect(storage.filesChecked == 1uL && storage.damaged.isEmpty(), "every stored file intact: $storage")

    val backups = Files.createDirectories(dir.resolve("backups"))
    val archive = backups.resolve("full.tar.zst").toString()
    val steps = mutableListOf<Pair<ULong, ULong>>()
    val id = db.backup(archive, null, object : ProgressListener {
        override fun onProgress(done: ULong, total: ULong) { steps.add(done to total) }
    })
    expect(steps.isNotEmpty() && steps.last().first == steps.last().second, "backup progress reported: $steps")
    expect(verifyBackup(archive) == id && backupInfo(archive).id == id, "the archive verifies")
    expect(backupDamagedFiles(archive).isEmpty(), "nothing damaged")
    val kept = pruneBackups(backups.toString(), 7u, 4u, true)
    expect(kept.single().keptBecause != null, "the only backup is kept: $kept")
    val report = restoreReport(listOf(archive), dir.resolve("restored").toString(), null, null)
    expect(report.documents == 1uL && report.info.id == id, "restored: $report")

    val schema = db.exportSchema()
    expect(schema.contains("due"), "schema exported")
    expect(db.applySchema(schema, true).isEmpty(), "the schema it exported changes nothing")
    admin.deleteFile(file.id)
    expect(admin.files(doc.id).isEmpty(), "file deleted")
}

/** Accepts even numbers; refuses the rest through the face's error type. */
class Even : MetadataValidator {
    override fun validate(value: String) {
        if ((value.toLongOrNull() ?: 1L) % 2L != 0L) {
            throw DocmetaException.Validation("value", "'$value' is not an even number")
        }
    }
}

/** Upper-cases a value, with the suffix its YAML arguments give (`suffix: X`). */
class Upper(private val suffix: String) : MetadataParser {
    override fun parse(value: String): String {
        if (value == "boom") throw IllegalStateException("the parser broke")
        return value.uppercase() + suffix
    }
}

fun customValidatorAndParser() {
    val classes = Classes()
    classes.registerValidator("app.validators.Even", "Even", object : MetadataValidatorFactory {
        override fun create(arguments: String): MetadataValidator = Even()
    })
    classes.registerParser("app.parsers.Upper", "Upper", object : MetadataParserFactory {
        override fun create(arguments: String): MetadataParser =
            Upper(arguments.substringAfter("suffix:", "").trim())
    })
    expect(classes.validators().any { it.path == "app.validators.Even" }, "the class is registered")
    val db = Docmeta.inMemory(classes)
    val admin = db.system()
    val type = admin.createDocumentType("Crate")
    val count = admin.createMetadataType(MetadataTypeSpec(name = "count", label = "Count", validation = "app.validators.Even"))
    val code = admin.createMetadataType(
        MetadataTypeSpec(name = "code", label = "Code", parser = "app.parsers.Upper", parserArguments = "suffix: -X")
    )
    admin.associate(type.id, count.id, false)
    admin.associate(type.id, code.id, false)
    val doc = admin.createDocument(type.id, "C-1", listOf())
    expect(admin.addDocumentMetadata(doc.id, count.id, "4").value == "4", "an even count accepted")
    val refusal = refused<DocmetaException.Validation>("an odd count") { admin.addDocumentMetadata(doc.id, count.id, "5") }
    expect(refusal.field == "value" && refusal.reason.contains("not an even number"), "the Kotlin refusal: $refusal")
    expect(admin.addDocumentMetadata(doc.id, code.id, "ab").value == "AB-X", "the Kotlin parser rewrote the value")
    val broken = refused<DocmetaException.Validation>("a parser throwing") { admin.addDocumentMetadata(doc.id, code.id, "boom") }
    expect(broken.field == "value" && broken.reason.contains("the parser broke"), "any exception refuses the value: $broken")
    expect(db.classes().parsers().any { it.path == "app.parsers.Upper" }, "the instance runs the classes")
    refused<DocmetaException.Validation>("a type naming an unknown class") {
        Docmeta.inMemory().system().createMetadataType(MetadataTypeSpec(name = "n", label = "N", validation = "app.validators.Even"))
    }
}

fun offlineValidation() {
    validate(DATE_VALIDATOR, "", "2026-11-24")
    val bad = refused<DocmetaException.Validation>("an impossible date") { validate(DATE_VALIDATOR, "", "2026-02-30") }
    expect(bad.field == "value", "the value is refused: ${bad.field}")
    val unknown = refused<DocmetaException.Validation>("an unknown class") { validate("svc.apps.metadata.metadata_validators.Nope", "", "x") }
    expect(unknown.field == "validation", "the class is refused: ${unknown.field}")
    expect(parse(DATE_PARSER, "", "24/11/2026") == "2026-11-24", "parsed without a database")

    val date = MetadataProcessor(MetadataTypeSpec(name = "due", label = "Due", validation = DATE_VALIDATOR, parser = DATE_PARSER))
    expect(date.process("24/11/2026", true) == "2026-11-24", "processed")
    refused<DocmetaException.Validation>("a required value missing") { date.process("", true) }
    expect(date.process("", false) == "", "an optional value stays empty")
    val colour = MetadataProcessor(MetadataTypeSpec(name = "colour", label = "Colour", lookup = "red, green"))
    expect(colour.lookupChoices() == listOf("red", "green"), "lookup choices")
    refused<DocmetaException.Validation>("a value outside the lookup") { colour.process("blue", true) }
    val badName = refused<DocmetaException.Validation>("a bad definition") { MetadataProcessor(MetadataTypeSpec(name = "bad name!", label = "B")) }
    expect(badName.field == "name", "the definition's field is named: ${badName.field}")
    val classes = Classes()
    classes.registerValidator("app.validators.Even", "Even", object : MetadataValidatorFactory {
        override fun create(arguments: String): MetadataValidator = Even()
    })
    refused<DocmetaException.Validation>("an odd value offline") { classes.validate("app.validators.Even", "", "3") }
    val even = MetadataProcessor(MetadataTypeSpec(name = "n", label = "N", validation = "app.validators.Even"), classes)
    expect(even.process("8", true) == "8", "an application validator runs offline")
}

fun eventsTasksAndErrors() {
    val db = Docmeta.inMemory()
    val events = Collector()
    val subscription = db.subscribe(events)
    val inv = Invoices(db)
    inv.invoice("INV-1")
    expect(events.names.take(2) == listOf("documents.document_type_created", "metadata.metadata_type_created"), "events: ${events.names}")
    expect(events.names.contains("documents.document_created"), "document_created reached the listener")
    db.unsubscribe(subscription)
    val seen = events.names.size
    inv.invoice("INV-2")
    expect(events.names.size == seen, "no events after unsubscribe")
    val failing = db.subscribe(object : EventListener {
        override fun onEvent(event: Event) = throw IllegalStateException("a listener's bug")
    })
    expect(inv.invoice("INV-3").label == "INV-3", "a throwing listener does not fail the commit")
    db.unsubscribe(failing)
    val logged = inv.admin.events(100u)
    expect(logged.map { it.id } == logged.map { it.id }.sortedDescending(), "the session's events, newest first")
    expect(logged.map { it.name }.reversed().take(2) == events.names.take(2), "the log holds what the listener saw")
    val ann = inv.admin.createUser("ann", "a long password", false)
    val root = inv.admin.createUser("root", "a long password", true)
    val notes = db.session(root.id).createDocumentType("Notes")
    val created = inv.admin.events(10u).first { it.targetId == notes.id && it.name == "documents.document_type_created" }
    expect(created.actorId == root.id && created.actorUsername == "root", "the event names its actor: $created")
    expect(created.changes == listOf(EventChange("label", null, "Notes")), "a creation's changes: ${created.changes}")
    db.session(root.id).updateDocumentType(notes.id, "Memos")
    val renamed = inv.admin.events(1u).first()
    expect(renamed.changes == listOf(EventChange("label", "Notes", "Memos")), "an edit's changes: ${renamed.changes}")
    inv.admin.setPassword(ann.id, "cnry password")
    val reset = inv.admin.events(1u).first()
    expect(reset.name == "user_management.user_edited" && reset.changes.isEmpty(), "a password is no change shown: $reset")
    refused<DocmetaException.NotFound>("a document she may not see") { db.session(ann.id).deleteDocument(1) }
    refused<DocmetaException.PermissionDenied>("tasks are for superusers") { db.session(ann.id).tasks() }
    expect(db.session(ann.id).actor() == ann.id && inv.admin.actor() == null, "actors")
    inv.admin.tasks()
    db.runPendingTasks()
    expect(db.waitForTasks(1000u) && db.openTasks().isEmpty(), "no task left")
    val token = db.signToken(listOf("a".toByteArray()))
    expect(db.verifyToken(listOf("a".toByteArray()), token) && !db.verifyToken(listOf("b".toByteArray()), token), "tokens")
    expect(db.config().taskMaxAttempts > 0u && db.dataDir() == null, "settings of an in-memory instance")
    expect(db.config().readCacheDocuments == null, "the read cache size is left to the store")
    expect(db.withDeadline(60_000u).system().document(1).label == "INV-1", "a deadline does not stop a read")
}

fun followingTheLog() {
    val db = Docmeta.inMemory()
    val inv = Invoices(db)
    inv.invoice("INV-1")
    val all = inv.admin.eventsAfter(null, 0u, 1000u)
    expect(all.events.isNotEmpty() && all.events.map { it.id } == all.events.map { it.id }.sorted(), "the log from its start, in commit order")
    expect(all.cursor == all.events.last().id, "the cursor is the last event read: ${all.cursor}")
    val none = inv.admin.eventsAfter(all.cursor, 100u, 10u)
    expect(none.events.isEmpty() && none.cursor == all.cursor, "nothing new at the deadline, the cursor kept")
    // A waiter wakes when another thread commits, long before its deadline.
    val writer = Thread {
        Thread.sleep(200)
        inv.invoice("INV-2")
    }
    val started = System.nanoTime()
    writer.start()
    val woken = inv.admin.eventsAfter(all.cursor, 30_000u, 10u)
    val tookMs = (System.nanoTime() - started) / 1_000_000
    writer.join()
    expect(woken.events.any { it.name == "documents.document_created" && it.targetLabel == "INV-2" }, "woken with the new document: ${woken.events}")
    expect(tookMs < 15_000, "woken by the commit, not the deadline: $tookMs ms")
    // Nothing of what she may not see (she sees herself), though her cursor moves past it.
    val ann = inv.admin.createUser("ann", "a long password", false)
    val hers = db.session(ann.id).eventsAfter(all.cursor, 0u, 100u)
    expect(hers.events.all { it.targetKind == "user_management.user" && it.targetId == ann.id }, "only herself: $hers")
    expect(hers.cursor == inv.admin.eventsAfter(all.cursor, 0u, 100u).cursor, "hidden events skipped: $hers")
    val e = refused<DocmetaException.Validation>("a wait over a minute") { inv.admin.eventsAfter(null, 60_001u, 10u) }
    expect(e.field == "wait", "the refusal names the field: ${e.field}")
}

fun webhooks() {
    // Loopback allowed, no worker: deliveries are queued, never sent.
    val data = Files.createTempDirectory("docmeta-kotlin-webhooks")
    Files.writeString(data.resolve("config.yml"), "password_hash_memory_kib: 64\npassword_hash_iterations: 1\nwebhooks_allow_private_networks: true\n")
    val db = Docmeta.open(data.toString(), worker = false)
    val admin = db.system()
    fun webhookUser(name: String): Long {
        val user = admin.createUser(name, "a long password", false)
        val group = admin.createGroup("$name's")
        val role = admin.createRole("$name's role")
        admin.setGroupMember(group.id, user.id, true)
        admin.setRoleGroup(role.id, group.id, true)
        for (key in listOf("create", "view", "edit", "delete")) admin.grantGlobal("webhooks.webhook_$key", role.id)
        admin.grantGlobal("documents.document_type_view", role.id)
        return user.id
    }
    val alice = db.session(webhookUser("alice"))
    val created = alice.createWebhook("http://127.0.0.1:9/hook", listOf("documents.document_type_created"))
    expect(created.secret.startsWith("whsec_") && created.webhook.active, "created, with its secret: ${created.webhook}")
    val hook = created.webhook
    expect(alice.webhooks() == listOf(hook) && alice.webhook(hook.id) == hook, "listed and read")
    admin.createDocumentType("Invoice")
    val queued = alice.webhookDeliveries(hook.id)
    expect(queued.size == 1 && queued[0].status == DeliveryStatus.PENDING, "a delivery queued with the event: $queued")
    expect(alice.retryWebhookDelivery(hook.id, queued[0].id).status == DeliveryStatus.PENDING, "retried")
    val off = alice.updateWebhook(hook.id, WebhookUpdate(active = false))
    expect(!off.active && off.url == hook.url && off.events == hook.events, "only what is given changes: $off")
    val bob = db.session(webhookUser("bob"))
    refused<DocmetaException.NotFound>("someone else's webhook") { bob.webhook(hook.id) }
    refused<DocmetaException.NotFound>("someone else's webhook") { bob.deleteWebhook(hook.id) }
    val url = refused<DocmetaException.Validation>("not http") { alice.createWebhook("ftp://example.com/", listOf(), null) }
    expect(url.field == "url", "the refusal names the url: ${url.field}")
    alice.deleteWebhook(hook.id)
    expect(alice.webhooks().isEmpty(), "deleted")
}

fun devices() {
    val data = Files.createTempDirectory("docmeta-kotlin-devices")
    Files.writeString(data.resolve("config.yml"), "password_hash_memory_kib: 64\npassword_hash_iterations: 1\n")
    val db = Docmeta.open(data.toString(), worker = false)
    val admin = db.system()
    val ann = admin.createUser("ann", "a long password", false)
    expect(db.signInDevice("ann", "the wrong password", "phone") == null, "a wrong password signs nothing in")
    val phone = db.signInDevice("ann", "a long password", "Ann's phone", 3600u)
    expect(phone != null && phone.token.startsWith("dmd_") && phone.device.userId == ann.id, "signed in: $phone")
    val token = phone!!.token
    expect(db.authenticateDevice(token)?.id == ann.id, "the token signs in")
    val mine = db.session(ann.id).devices()
    expect(mine.map { it.id } == listOf(phone.device.id) && mine[0].lastUsed != null, "listed, with its last use: $mine")
    val bob = admin.createUser("bob", "a long password", false)
    refused<DocmetaException.NotFound>("another user's devices without user_view") { db.session(bob.id).devices(ann.id) }
    val e = refused<DocmetaException.Validation>("a blank name") { db.signInDevice("ann", "a long password", " ") }
    expect(e.field == "name", "the refusal names the field: ${e.field}")
    // A replica of what ann may see: nothing yet, then the document she is granted.
    val memo = admin.createDocumentType("Memo")
    val doc = admin.createDocument(memo.id, "Note", listOf())
    fun sync(from: String?): Pair<Set<Long>, String> {
        var cursor = from
        val seen = mutableSetOf<Long>()
        while (true) {
            val batch = db.session(ann.id).syncChanges(phone.device.id, cursor, 10u)
            seen.addAll(batch.documents.map { it.document.id })
            seen.removeAll(batch.removed.toSet())
            cursor = batch.cursor
            if (!batch.more) return seen to batch.cursor
        }
    }
    expect(db.session(ann.id).devices().single().lastSync == null, "never synced")
    val (none, cursor) = sync(null)
    expect(none.isEmpty(), "nothing visible, nothing synced: $none")
    expect(db.session(ann.id).devices().single().lastSync != null, "listed with its last sync")
    val role = admin.createRole("Reader")
    val group = admin.createGroup("Readers")
    admin.setGroupMember(group.id, ann.id, true)
    admin.setRoleGroup(role.id, group.id, true)
    admin.grant("documents.document_view", role.id, "documents.document", doc.id)
    val (granted, _) = sync(cursor)
    expect(granted == setOf(doc.id), "a grant sends the document: $granted")
    val wrong = refused<DocmetaException.Validation>("a cursor the server never gave") {
        db.session(ann.id).syncChanges(phone.device.id, "x", 10u)
    }
    expect(wrong.field == "cursor", "the refusal names the cursor: ${wrong.field}")
    refused<DocmetaException.NotFound>("another user's device") { db.session(bob.id).syncChanges(phone.device.id, null, 10u) }
    val pushed = db.session(ann.id).syncPush(phone.device.id, listOf(PendingWrite("k", 999_999L, 1L, PushAction.REMOVE, null, null, null, null, listOf(), null, null, null, null, null, null)))
    expect(pushed.size == 1 && pushed[0].key == "k" && pushed[0].status == PushStatus.REFUSED && pushed[0].errorKind == "not_found", "a push refused as online: $pushed")
    val moved = db.session(ann.id).syncPush(phone.device.id, listOf(PendingWrite("t", 999_999L, null, PushAction.TRANSITION, null, null, null, null, listOf(), 5L, 6L, "offline", 7L, null, null)))
    expect(moved.single().status == PushStatus.REFUSED && moved.single().errorKind == "not_found", "a transition refused as online: $moved")
    refused<DocmetaException.Validation>("a transition without its transition") {
        db.session(ann.id).syncPush(phone.device.id, listOf(PendingWrite("u", 1L, null, PushAction.TRANSITION, null, null, null, null, listOf(), 5L, null, null, null, null, null)))
    }
    db.session(ann.id).revokeDevice(phone.device.id)
    expect(db.authenticateDevice(token) == null, "revoked")
}

fun replica() {
    val bin = System.getenv("DOCMETA_SERVER_BIN")
    if (bin.isNullOrEmpty()) {
        println("kotlin: replica skipped: DOCMETA_SERVER_BIN is not set (scripts/test sets it)")
        return
    }
    val data = Files.createTempDirectory("docmeta-kotlin-server")
    Files.writeString(data.resolve("config.yml"), "password_hash_memory_kib: 64\npassword_hash_iterations: 1\n")
    fun command(vararg args: String): ProcessBuilder {
        val builder = ProcessBuilder(listOf(bin) + args)
        builder.environment()["DOCMETA_DATA"] = data.toString()
        builder.environment()["DOCMETA_ADMIN_PASSWORD"] = "admin-password"
        builder.environment().remove("DOCMETA_DATABASE_URL")
        return builder
    }
    val demo = command("demo").redirectOutput(ProcessBuilder.Redirect.DISCARD).start()
    expect(demo.waitFor() == 0, "the demo data loaded")
    val server = command("serve", "--bind", "127.0.0.1:0").redirectError(ProcessBuilder.Redirect.INHERIT).start()
    try {
        val lines = server.inputStream.bufferedReader()
        var url = ""
        while (url.isEmpty()) {
            val line = lines.readLine() ?: break
            if (line.startsWith("docmeta listening on ")) url = line.removePrefix("docmeta listening on ").trim()
        }
        expect(url.isNotEmpty(), "the server started")
        Thread { lines.lineSequence().forEach { } }.apply { isDaemon = true }.start()
        val path = Files.createTempDirectory("docmeta-kotlin-replica").toString()
        val replica = Replica.open(path, url, "alice", "demo-password")
        var seen = 0uL
        val done = replica.sync(object : SyncListener {
            override fun onBatch(progress: SyncProgress) { seen = progress.batches }
        })
        expect(!done.more && done.received > 0uL && seen == done.batches, "synced with progress: $done")
        val session = replica.session()
        expect(session.documentIds(null).isNotEmpty(), "the replica holds alice's documents")
        expect(session.searchDocuments("invoice", 1u, 20u).count > 0uL, "found offline")
        val withFile = session.documentIds(null).first { session.files(it).isNotEmpty() }
        val scan = session.files(withFile)[0]
        expect(String(replica.readFile(scan.id)).startsWith("Invoice"), "a file's bytes fetched")
        val fetched = replica.fetchFiles()
        expect(fetched > 0uL && replica.fetchFiles() == 0uL, "every other file fetched: $fetched")
        expect(session.documentIds(null).all { d -> session.files(d).all { session.readFile(it.id).isNotEmpty() } }, "every file reads from the replica")
        expect(replica.device() != null, "signed in as a device")
        // An encrypted replica: the bytes it fetches are sealed on the device; its password is needed.
        val sealedPath = Files.createTempDirectory("docmeta-kotlin-sealed").toString()
        val sealed = Replica.openEncrypted(sealedPath, url, "alice", "demo-password", "the phone's secret")
        sealed.sync(null)
        expect(sealed.fetchFiles() > 0uL, "fetched into the encrypted storage")
        val plain = String(sealed.session().readFile(scan.id))
        expect(plain.startsWith("Invoice"), "read back through the key")
        Files.walk(java.nio.file.Paths.get(sealedPath)).use { paths ->
            paths.filter { Files.isRegularFile(it) }.forEach {
                expect(!String(Files.readAllBytes(it), Charsets.ISO_8859_1).contains(plain), "no file holds the bytes: $it")
            }
        }
        val locked = refused<DocmetaException.Validation>("an encrypted replica without its password") { Replica.open(sealedPath, url, "alice", "") }
        expect(locked.field == "storage_password", "the refusal names the password: ${locked.field}")
        // Opened again with the token it keeps: no password.
        expect(Replica.open(path, url, "alice", "").sync(null).received == 0uL, "nothing new")
        expect(replica.syncWhenChanged(1u).received == 0uL, "no change within the wait")
        val e = refused<DocmetaException.Validation>("another user's replica") { Replica.open(path, url, "bob", "demo-password") }
        expect(e.field == "username", "the refusal names the username: ${e.field}")
        // Writes made offline on the admin's replica, pushed at the next sync.
        val admins = Replica.open(Files.createTempDirectory("docmeta-kotlin-admin").toString(), url, "admin", "admin-password")
        admins.sync(null)
        val local = admins.session()
        val party = local.metadataTypes().first { it.name == "party" }.id
        val doc = local.documentIds(null).first { id -> local.documentMetadata(id).any { it.metadataTypeId == party } }
        expect(admins.setValue(doc, party, "written offline").value == "written offline", "stored offline")
        val pending = admins.pending()
        expect(pending.size == 1 && pending[0].action == PushAction.SET && pending[0].base != null, "queued: $pending")
        val pushed = admins.sync(null)
        expect(pushed.pushed == 1uL && pushed.rejected == 0uL, "pushed: $pushed")
        expect(admins.pending().isEmpty() && admins.rejected().isEmpty(), "nothing left")
        refused<DocmetaException.NotFound>("an unknown rejected write") { admins.discard("no such key") }
        // A document created offline: a local id, then the server's document in its place.
        val contract = local.documentTypes().first { it.label == "Contract" }.id
        refused<DocmetaException.Validation>("a required value without a default, as online") { admins.createDocument(contract, "No party", listOf()) }
        val made = admins.createDocument(contract, "Signed offline", listOf(NewValue(party, "ACME")))
        expect(made.id >= (1L shl 50), "a local id: ${made.id}")
        val create = admins.pending().single()
        expect(create.action == PushAction.CREATE && create.documentTypeId == contract && create.values == listOf(NewValue(party, "ACME")), "queued: $create")
        val created = admins.sync(null)
        expect(created.pushed == 1uL && created.rejected == 0uL, "created: $created")
        val id = local.documentIds(null).single { local.document(it).label == "Signed offline" }
        expect(id < (1L shl 50), "the server's id: $id")
        // Workflows on the replica: the demo's invoice workflow, its trigger fired offline.
        val flow = local.workflows().single { it.label == "Invoice approval" }
        val states = local.workflowStates(flow.id).associate { it.label to it.id }
        val transitions = local.workflowTransitions(flow.id).associate { it.label to it.id }
        val invoice = local.documentTypes().first { it.label == "Invoice" }.id
        val kinds = local.metadataTypes().associate { it.name to it.id }
        admins.createDocument(invoice, "Kotlin workflow", listOf(
            NewValue(kinds.getValue("invoice_number"), "INV-5151"),
            NewValue(kinds.getValue("due_date"), "2027-01-31"),
            NewValue(kinds.getValue("status"), "draft")))
        admins.sync(null)
        val flowing = local.documentIds(null).single { local.document(it).label == "Kotlin workflow" }
        val instance = local.workflowInstances(flowing).single()
        expect(instance.stateId == states["draft"], "started in draft on the server: $instance")
        admins.setValue(flowing, kinds.getValue("status"), "review")
        expect(local.workflowInstances(flowing).single().stateId == states["review"], "the trigger fired offline")
        val notYet = refused<DocmetaException.Validation>("a transition its condition does not allow") {
            admins.transitionWorkflow(flowing, instance.id, transitions.getValue("approve"), "")
        }
        expect(notYet.field == "transition_id", "the refusal names the transition: ${notYet.field}")
        val flowed = admins.sync(null)
        expect(flowed.pushed == 1uL && flowed.rejected == 0uL, "pushed: $flowed")
        expect(local.workflowInstances(flowing).single().stateId == states["review"], "the server's trigger fired too")
        expect(local.workflowLog(flowing, instance.id).isNotEmpty(), "the server's log on the replica")
        // A file added offline: readable at once, pushed with its bytes.
        val photo = admins.addFile(flowing, "receipt.jpg", "JPEG receipt".toByteArray())
        expect(photo.id >= (1L shl 50) && String(local.readFile(photo.id)) == "JPEG receipt", "added offline: $photo")
        val queued = admins.pending().single()
        expect(queued.action == PushAction.FILE && queued.fileId == photo.id && queued.filename == "receipt.jpg", "queued: $queued")
        val sent = admins.sync(null)
        expect(sent.pushed == 1uL && sent.rejected == 0uL, "pushed: $sent")
        val onServer = local.files(flowing).single { it.filename == "receipt.jpg" }
        expect(onServer.id < (1L shl 50) && String(local.readFile(onServer.id)) == "JPEG receipt", "the server's file, its bytes kept: $onServer")
    } finally {
        server.destroyForcibly()
        server.waitFor()
    }
}

/** A value's history, its value at a past time, and the tamper-evident log. */
fun historyAndAudit() {
    val dir = Files.createTempDirectory("docmeta-kotlin-history")
    val inv = Invoices(Docmeta.open(dir.resolve("data").toString(), worker = false))
    val (db, admin) = inv.db to inv.admin
    val doc = inv.invoice("INV-1", "2025-01-31")
    val value = admin.documentMetadata(doc.id).single()
    Thread.sleep(10)
    val then = java.time.Instant.now()
    Thread.sleep(10)
    admin.editDocumentMetadata(doc.id, value.id, "2025-02-28")
    val history = admin.history(doc.id, inv.due.id)
    expect(history.count == 2uL, "two changes: $history")
    val newest = history.results.first()
    expect(newest.action == "edited" && newest.before == "2025-01-31" && newest.after == "2025-02-28", "newest change: $newest")
    expect(admin.valueAt(doc.id, inv.due.id, then) == "2025-01-31", "the value then")
    expect(admin.metadataAt(doc.id, then).single().value == "2025-01-31", "the values then")

    // A reader who may view the due date's values, and know of a secret's type without viewing
    // its values: the secret's change listed with its values null and hidden set.
    val secret = admin.createMetadataType(MetadataTypeSpec(name = "secret", label = "Secret"))
    admin.associate(inv.type.id, secret.id, false)
    admin.addDocumentMetadata(doc.id, secret.id, "canary-kotlin-7")
    val clerk = admin.createUser("clerk", "a long password", false)
    val clerks = admin.createGroup("Clerks")
    val clerkRole = admin.createRole("Clerks")
    admin.setGroupMember(clerks.id, clerk.id, true)
    admin.setRoleGroup(clerkRole.id, clerks.id, true)
    admin.grant(VIEW, clerkRole.id, "documents.document", doc.id)
    admin.grant("metadata.document_metadata_view", clerkRole.id, "documents.document", doc.id)
    admin.grant("metadata.document_metadata_view", clerkRole.id, "metadata.metadatatype", inv.due.id)
    admin.grant("metadata.metadata_type_view", clerkRole.id, "metadata.metadatatype", inv.due.id)
    admin.grant("metadata.metadata_type_view", clerkRole.id, "metadata.metadatatype", secret.id)
    val reader = db.session(clerk.id)
    val seen = reader.history(doc.id)
    expect(seen.count == 3uL, "the due date's two changes and the secret's one: $seen")
    expect(!seen.toString().contains("canary"), "the secret's value withheld: $seen")
    val hidden = seen.results.filter { it.metadataTypeId == secret.id }
    expect(hidden.size == 1, "the secret's change listed: $seen")
    val change = hidden.single()
    expect(change.hidden && change.before == null && change.after == null, "its values null, hidden set: $change")
    expect(change.action == "added" && change.metadataTypeLabel == "Secret", "what happened, to which type: $change")
    expect(seen.results.filter { it.metadataTypeId == inv.due.id }.all { !it.hidden && it.after != null }, "the due date's changes whole: $seen")
    expect(reader.history(doc.id, secret.id).results.single().hidden, "the secret's history alone: hidden")
    val now = java.time.Instant.now()
    expect(reader.valueAt(doc.id, secret.id, now) == null, "no value of the secret: null")
    expect(reader.metadataAt(doc.id, now).map { it.metadataType.name } == listOf("due"), "the secret left out of the values at a time")
    expect(admin.history(doc.id, secret.id).results.single().after == "canary-kotlin-7", "the administrator sees the value")

    val checkpoint = db.auditCheckpoint()
    expect(checkpoint.contains(db.auditPublicKey()), "a checkpoint signed by the installation's key")
    expect(checkpointSignedBy(checkpoint, db.auditPublicKey()), "a third party checks it with the public key alone")
    expect(!checkpointSignedBy(checkpoint.replaceFirst("\"seq\":", "\"seq\":1"), db.auditPublicKey()), "a checkpoint altered is not signed")
    expect(!checkpointSignedBy(checkpoint, "00".repeat(32)), "another key did not sign it")
    refused<DocmetaException.InvalidInput>("a checkpoint that is not JSON") { checkpointSignedBy("{", db.auditPublicKey()) }
    val report = db.verifyEvents(checkpoint)
    expect(report.intact && report.verified > 0uL && report.checkpoints == 2uL, "the log verifies: $report")
    refused<DocmetaException.InvalidInput>("a checkpoint that is not JSON") { db.verifyEvents("{") }
    val removed = db.pruneEvents(java.time.Instant.now().plusSeconds(1))
    expect(removed == report.head.toULong(), "every event pruned: $removed")
    admin.createDocumentType("After the prune")
    expect(db.verifyEvents().intact, "the chain goes on from the prune's checkpoint")
}

fun main() {
    val groups = listOf(
        "metadata" to ::metadata,
        "document batch" to ::documentBatch,
        "access and explain" to ::accessAndExplain,
        "cabinets" to ::cabinets,
        "workflows" to ::workflows,
        "search" to ::search,
        "typed search" to ::typedSearch,
        "files and backup" to ::filesAndBackup,
        "custom validator and parser" to ::customValidatorAndParser,
        "offline validation" to ::offlineValidation,
        "events, tasks and errors" to ::eventsTasksAndErrors,
        "following the log" to ::followingTheLog,
        "webhooks" to ::webhooks,
        "devices" to ::devices,
        "replica" to ::replica,
        "history and audit" to ::historyAndAudit,
    )
    for ((name, run) in groups) {
        group = name
        run()
        println("kotlin: $name ok")
    }
    println("kotlin: all checks passed")
}
