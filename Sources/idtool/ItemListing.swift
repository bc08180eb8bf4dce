import Keyring

#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif

/// `idtool item list`: the items of an identifier or access group, as a table or as JSON. The
/// library lists them (`SecretStore.items`); this only lays them out. Secrets are never read.
enum ItemListing {
    /// Lists and prints; returns the exit status (75 for a locked keyring, never an empty list).
    static func run(identifier: String?, group: String?, json: Bool, keyring: Keyring) -> Int32 {
        let listed: [SecretStore.Listing]
        do throws(KeyringError) {
            listed = try SecretStore.items(identifier: identifier, accessGroup: group, keyring: keyring)
        } catch {
            return Output.fail(error)
        }
        guard Output.print(json ? self.json(listed).serialized + "\n" : table(listed)) else {
            Output.error("cannot write to stdout: check where the output goes")
            return ExitCode.software.rawValue
        }
        return ExitCode.ok.rawValue
    }

    /// The `--json` schema: `{"items": [...]}`, each item's keys in this fixed order; absent values are null.
    static func json(_ listed: [SecretStore.Listing]) -> JSON {
        .object([
            (
                "items",
                .array(
                    listed.map { item in
                        .object([
                            ("identifier", item.identifier.map(JSON.string) ?? .null),
                            ("account", item.account.map(JSON.string) ?? .null),
                            ("group", item.accessGroup.map(JSON.string) ?? .null),
                            ("label", .string(item.label)),
                            ("created", item.created.map { .string($0.formatted(.iso8601)) } ?? .null),
                            ("modified", item.modified.map { .string($0.formatted(.iso8601)) } ?? .null),
                            ("locked", .bool(item.isLocked)),
                            ("writer", .string(writer(item.writer).name)),
                            ("schema", writer(item.writer).schema.map(JSON.string) ?? .null),
                        ])
                    })
            )
        ])
    }

    /// "secretstore" or "other", and the schema the item carries.
    static func writer(_ writer: SecretStore.Writer) -> (name: String, schema: String?) {
        switch writer {
        case .secretStore: return ("secretstore", "io.keyringidentity.SecretStore")
        case .otherClient(let schema): return ("other", schema)
        }
    }

    static let header = ["IDENTIFIER", "ACCOUNT", "GROUP", "LOCKED", "CREATED", "MODIFIED", "WRITER", "LABEL"]

    /// A header and one line per item, columns padded to one width; "-" for an absent value.
    /// Control characters in stored text print as "?", so one item is always one line.
    static func table(_ listed: [SecretStore.Listing]) -> String {
        let rows =
            [header]
            + listed.map { item in
                let (name, schema) = writer(item.writer)
                return [
                    item.identifier ?? "-", item.account ?? "-", item.accessGroup ?? "-", item.isLocked ? "yes" : "no",
                    item.created?.formatted(.iso8601) ?? "-", item.modified?.formatted(.iso8601) ?? "-",
                    name == "other" ? schema.map { "other:" + $0 } ?? "other" : name, item.label.isEmpty ? "-" : item.label,
                ].map(printable)
            }
        let widths = (0..<header.count - 1).map { column in rows.map { $0[column].count }.max() ?? 0 }
        return rows.map { row in
            zip(row.dropLast(), widths).map { $0 + String(repeating: " ", count: $1 - $0.count + 2) }.joined() + row.last!
        }.joined(separator: "\n") + "\n"
    }

    static func printable(_ text: String) -> String {
        String(text.unicodeScalars.map { $0.properties.generalCategory == .control ? "?" : Character($0) })
    }
}
