// The example every face shows (README; core/examples/own_validator.rs in Rust), run
// by bindings-uniffi/test.sh so that it stays true: an application's own validator, checked
// offline first, then a value through the pipeline of spec 2.10, a grant and its `explain`.
package example

import docmeta.*

/** Accepts even numbers only. */
class Even : MetadataValidator {
    override fun validate(value: String) {
        if ((value.trim().toLongOrNull() ?: 1L) % 2L != 0L)
            throw DocmetaException.Validation("value", "'$value' is not an even number")
    }
}

fun main() {
    val classes = Classes()
    classes.registerValidator("myapp.validators.Even", "Even number", object : MetadataValidatorFactory {
        override fun create(arguments: String): MetadataValidator = Even() // arguments: YAML
    })
    val pairs = MetadataTypeSpec(name = "pairs", label = "Pairs", validation = "myapp.validators.Even")

    // Offline: no database, the same errors as the pipeline.
    val form = MetadataProcessor(pairs, classes)
    check(form.process("42", true) == "42")
    try {
        form.process("7", true)
    } catch (e: DocmetaException.Validation) {
        println("offline: ${e.field}: ${e.reason}") // offline: value: '7' is not an even number
    }

    // The same type in a store.
    val db = Docmeta.inMemory(classes) // Docmeta.open(path, classes = classes) for files
    val admin = db.system()
    val box = admin.createDocumentType("Box")
    val pairsType = admin.createMetadataType(pairs)
    admin.associate(box.id, pairsType.id, true)
    val doc = admin.createDocument(box.id, "Box 1", listOf(NewValue(pairsType.id, "12")))
    println("stored: ${admin.metadataValueOf(doc.id, "pairs")}") // stored: 12
    try {
        admin.createDocument(box.id, "Box 2", listOf(NewValue(pairsType.id, "13")))
    } catch (e: DocmetaException.Validation) {
        println("pipeline: ${e.field}: ${e.reason}") // pipeline: metadata[0].value: '13' is not an even number
    }

    // A grant, and why it applies.
    val clerk = admin.createUser("clerk", "correct horse battery", false)
    val role = admin.createRole("Box readers")
    val group = admin.createGroup("Warehouse")
    admin.setGroupMember(group.id, clerk.id, true)
    admin.setRoleGroup(role.id, group.id, true)
    admin.grant("documents.document_view", role.id, "documents.documenttype", box.id)
    val why = db.explain(clerk.id, "documents.document_view", "documents.document", doc.id)
    check(why.granted && why.grant is Grant.Acl) // Grant.Acl(acl, role, target, path)
    println("explain: ${why.sentence}")
    // explain: granted by ACL 1 of role 1 on documents.documenttype 1, reached through
    // documents.document 1 -> documents.documenttype 1
}
