// The README's Kotlin example, run by bindings-uniffi/test.sh so that it stays true: an
// application's validator inside the value pipeline, a grant and its explanation.
package example

import docmeta.*

// An application's own validator, run inside the value pipeline.
class Even : MetadataValidator {
    override fun validate(value: String) {
        if ((value.toLongOrNull() ?: 1L) % 2L != 0L)
            throw DocmetaException.Validation("value", "'$value' is not an even number")
    }
}

fun main() {
    val classes = Classes()
    classes.registerValidator("app.validators.Even", "Even", object : MetadataValidatorFactory {
        override fun create(arguments: String): MetadataValidator = Even()
    })
    val db = Docmeta.inMemory(classes)
    val admin = db.system()
    val crate = admin.createDocumentType("Crate")
    val count = admin.createMetadataType(
        MetadataTypeSpec(name = "count", label = "Count", validation = "app.validators.Even"))
    admin.associate(crate.id, count.id, false)
    val doc = admin.createDocument(crate.id, "C-1", listOf(NewValue(count.id, "4")))
    try {
        admin.addDocumentMetadata(doc.id, count.id, "5")
    } catch (e: DocmetaException.Validation) {
        println("refused ${e.field}: ${e.reason}") // refused value: '5' is not an even number
    }

    // A grant on the document type, and why it lets ann see the document.
    val ann = admin.createUser("ann", "a long password", false)
    val team = admin.createGroup("Warehouse")
    val role = admin.createRole("Clerk")
    admin.setGroupMember(team.id, ann.id, true)
    admin.setRoleGroup(role.id, team.id, true)
    admin.grant("documents.document_view", role.id, "documents.documenttype", crate.id)
    val why = db.explain(ann.id, "documents.document_view", "documents.document", doc.id)
    println(why.sentence) // granted by ACL 1 of role 1 on documents.documenttype 1, reached
                          // through documents.document 1 -> documents.documenttype 1
    val grant = why.grant as Grant.Acl // grant.target: the type; grant.path: document -> type
    check(grant.path.first() == ObjectRef("documents.document", doc.id)) { "path: ${grant.path}" }
}
