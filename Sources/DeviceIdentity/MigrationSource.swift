import Keyring

#if canImport(Glibc)
import Glibc
#endif
#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif

/// Where an older version of the app (or another tool) kept its identifier.
///
/// Sources are consulted in order, and only when no store holds an identifier. A value is adopted
/// byte for byte, except that a leading BOM and surrounding whitespace are trimmed. A value that
/// is empty, not UTF-8, has control characters or is over 256 bytes is rejected, and the next
/// source is tried. A source that cannot answer is not absent: keyring sources are read from the
/// resolver's own keyring, within its call's time, and a miss that a locked collection may hide
/// (KeePassXC hides a locked database's items) fails the call as locked; a resolver without a
/// keyring fails with `IdentityError.migrationSourceUnreadable` on them.
public struct MigrationSource: Sendable, CustomStringConvertible {
    enum Kind: Sendable {
        case keyringItem([String: String])
        case secretStore(identifier: String, accessGroup: String?)
        case file(String)
        case machineID(String)
    }

    let kind: Kind
    /// Whether to delete the legacy copy once the adopted value has been written and read back.
    public let removesLegacyCopy: Bool

    /// A keyring item found by its attributes, e.g. `["service": "legacy.app", "username": "udid"]`.
    /// - Parameters:
    ///   - attributes: the attributes to match (at least one).
    ///   - removeAfterMigration: delete the item after a verified migration.
    /// - Returns: the source.
    public static func keyringItem(_ attributes: [String: String], removeAfterMigration: Bool = false) -> MigrationSource {
        MigrationSource(kind: .keyringItem(attributes), removesLegacyCopy: removeAfterMigration)
    }

    /// The `.valueData` of an older version's `SecretStore`.
    /// - Parameters:
    ///   - identifier: the old wrapper's identifier.
    ///   - accessGroup: the old wrapper's access group.
    ///   - removeAfterMigration: reset the old item after a verified migration.
    /// - Returns: the source.
    public static func secretStore(identifier: String, accessGroup: String? = nil, removeAfterMigration: Bool = false) -> MigrationSource {
        MigrationSource(kind: .secretStore(identifier: identifier, accessGroup: accessGroup), removesLegacyCopy: removeAfterMigration)
    }

    /// A plain file holding the identifier, like an old preferences-file fallback.
    /// - Parameters:
    ///   - path: the file's path.
    ///   - removeAfterMigration: delete the file after a verified migration.
    /// - Returns: the source.
    public static func file(_ path: String, removeAfterMigration: Bool = false) -> MigrationSource {
        MigrationSource(kind: .file(path), removesLegacyCopy: removeAfterMigration)
    }

    /// The raw machine ID, for apps whose older versions used it as their identifier. Opt-in only:
    /// it is confidential (machine-id(5)), and storing it in the keyring exposes it to the user's
    /// processes. New apps should use `GenerationPolicy.appSpecificMachineID` instead.
    /// - Parameter path: the machine ID file.
    /// - Returns: the source.
    public static func machineID(path: String = "/etc/machine-id") -> MigrationSource {
        MigrationSource(kind: .machineID(path), removesLegacyCopy: false)
    }

    /// E.g. `keyring:service=legacy.app,username=udid`, `file:/path`, `machine-id`.
    public var description: String {
        switch kind {
        case .keyringItem(let attributes):
            return "keyring:" + attributes.sorted { $0.key < $1.key }.map { "\($0.key)=\($0.value)" }.joined(separator: ",")
        case .secretStore(let identifier, let group):
            return "secret-store:\(identifier)" + (group.map { "@\($0)" } ?? "")
        case .file(let path): return "file:\(path)"
        case .machineID: return "machine-id"
        }
    }

    enum Reading {
        /// A usable value, and the keyring item it came from (so only that item is ever removed).
        case value(String, item: KeyringItem?)
        case absent
        case rejected(reason: String)
    }

    /// Reads the legacy value. Throws when the source cannot answer (which is not absence).
    /// A keyring source never matches an identifier item of this library: adopting another
    /// scope's identifier, or deleting it afterwards, would break that scope.
    /// - Parameter budget: the resolver call's budget: each keyring call gets the time left then,
    ///   and without a keyring a keyring source cannot be read.
    func read(budget: Budget) throws(IdentityError) -> Reading {
        let bytes: Data?
        var item: KeyringItem?
        switch kind {
        case .keyringItem(let attributes):
            guard budget.hasKeyring else { throw noKeyring }
            do throws(KeyringError) {
                // A miss that a locked collection may hide is "locked": KeePassXC hides a locked
                // database's items, so the legacy item may be there (gnome-keyring lists them).
                let items = try budget.call { keyring throws(KeyringError) in
                    try keyring.searchProvingMiss(attributes) { $0.attributes["identity-scope"] == nil }
                }
                guard let readable = items.first else { return .absent }
                bytes = try budget.call { keyring throws(KeyringError) in try keyring.secret(of: readable) }
                item = readable
            } catch {
                throw .keyring(error)
            }
        case .secretStore(let identifier, let group):
            guard budget.hasKeyring else { throw noKeyring }
            do throws(KeyringError) {
                let found = try budget.call { keyring throws(KeyringError) in
                    try SecretStore(identifier: identifier, accessGroup: group, keyring: keyring).storedItem()
                }
                bytes = found?.value
                item = found?.item
            } catch {
                throw .keyring(error)
            }
        case .file(let path):
            bytes = try readFile(path)
        case .machineID(let path):
            bytes = try readFile(path)
            if let bytes, let problem = Self.machineIDProblem(bytes) { return .rejected(reason: problem) }
        }
        guard let bytes else { return .absent }
        switch IdentifierText.normalize(bytes) {
        case .success(let value): return .value(value, item: item)
        case .failure(let rejection): return .rejected(reason: rejection.reason)
        }
    }

    /// Deletes the legacy copy, and only it (only called after a verified migration).
    func removeLegacy(item: KeyringItem?, budget: Budget) throws(IdentityError) {
        guard removesLegacyCopy else { return }
        switch kind {
        case .keyringItem, .secretStore:
            // Exactly the item the value was read from; other clients' items stay. Only the
            // resolver's keyring, with its time left: never `Keyring.default`.
            guard let item, budget.hasKeyring else { return }
            do throws(KeyringError) {
                try budget.call { keyring throws(KeyringError) in try keyring.delete(item: item) }
            } catch {
                throw .keyring(error)
            }
        case .file(let path):
            if unlink(path) != 0 && errno != ENOENT { throw unreadable(Errno.text(errno)) }
        case .machineID:
            return
        }
    }

    /// Why a machine-id file's content is no machine ID: systemd writes "uninitialized" during
    /// early boot, and containers often carry all zeros. Either would give every such machine
    /// the same identifier.
    static func machineIDProblem(_ bytes: Data) -> String? {
        let text = String(decoding: bytes, as: UTF8.self).trimmingWhitespace()
        guard text.utf8.count == 32, text.utf8.allSatisfy({ (48...57).contains($0) || (97...102).contains($0) }) else {
            return "it is not a machine ID (32 lowercase hex digits), e.g. \"uninitialized\""
        }
        if text.utf8.allSatisfy({ $0 == 48 }) { return "it is all zeros" }
        return nil
    }

    private func readFile(_ path: String) throws(IdentityError) -> Data? {
        // Anything over 64 KiB is rejected anyway; a huge file is not read to the end.
        switch FileReading.contents(of: path, limit: 64 * 1024) {
        case .success(let data): return data
        case .failure(let failure): throw unreadable(failure.text)
        }
    }

    /// Only the resolver's keyring is read (another would be outside its budget and unlock
    /// policy); a resolver with none cannot read a keyring source, which is not absence.
    private var noKeyring: IdentityError { unreadable("the resolver uses no keyring") }

    private func unreadable(_ reason: String) -> IdentityError {
        .migrationSourceUnreadable(source: description, reason: reason)
    }
}
