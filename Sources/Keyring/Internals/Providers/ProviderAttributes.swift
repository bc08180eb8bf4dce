#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif

/// Attributes a provider adds to items on its own, which this library neither sends nor compares.
///
/// oo7-daemon (0.6, read in its source) adds `xdg:content-type` to every item; it is left out of
/// comparisons unless a caller names it, so a store of the same attributes updates, not twins.
///
/// KeePassXC gives every item `Title`, `UserName`, `URL`, `Notes` and the read-only `Uuid` and
/// `Path` (sending those back fails the whole update), plus `FDO_SECRETS_CONTENT_TYPE` for a
/// secret kept as an attachment. They are recognised only on an item that carries `Uuid` and
/// `Path`, so another client's `Title` attribute on gnome-keyring stays an ordinary attribute.
enum ProviderAttributes {
    static let keePassXC: Set<String> = ["Title", "UserName", "URL", "Notes", "Uuid", "Path", "FDO_SECRETS_CONTENT_TYPE"]

    /// The content type oo7-daemon keeps as an attribute of every item.
    static let oo7ContentType = "xdg:content-type"

    /// The one attribute this library adds itself, on a provider that saves values late
    /// (`Provider.savesValuesLate`), to an item whose value is not empty: an empty secret read
    /// from an item that has it is a lost write (`KeyringError.valueLost`), not a value.
    static let nonEmptyValue = (name: "keyring-identity:value", value: "non-empty")

    /// True when `attributes` say the item was written with a non-empty value.
    static func marksNonEmpty(_ attributes: [String: String]) -> Bool { attributes[nonEmptyValue.name] == nonEmptyValue.value }

    /// `attributes` with the non-empty marker set, or removed.
    static func marked(_ attributes: [String: String], nonEmpty: Bool) -> [String: String] {
        var marked = attributes
        marked[nonEmptyValue.name] = nonEmpty ? nonEmptyValue.value : nil
        return marked
    }

    /// What gnome-keyring shows of a locked item's attributes, loaded from disk: each name
    /// prefixed with this and its value hashed, beside a plain `xdg:schema`.
    static let hashedPrefix = "gkr:compat:hashed:"

    /// True when a locked item's `attributes` do not say what it holds: none at all, or only
    /// gnome-keyring's hashed forms. Such an item is neither compared nor listed by them.
    static func areUnreadable(_ attributes: [String: String]) -> Bool {
        attributes.keys.allSatisfy { $0 == "xdg:schema" || $0.hasPrefix(hashedPrefix) }
    }

    /// `attributes` without those the provider (or this library's marker) added, except any named
    /// in `keeping` (what a caller asked for explicitly).
    static func withoutAdded(_ attributes: [String: String], keeping: Set<String> = []) -> [String: String] {
        var own = attributes
        for name in [nonEmptyValue.name, oo7ContentType] where !keeping.contains(name) { own[name] = nil }
        guard own["Uuid"] != nil, own["Path"] != nil else { return own }
        return own.filter { !keePassXC.contains($0.key) || keeping.contains($0.key) }
    }
}

/// Values a provider refuses to store.
///
/// KeePassXC 2.7 rejects a secret that contains a field reference (`{REF:P@I:…}`, the pattern of
/// its `EntryAttributes` reference regex) with InvalidArgs, whatever the content type; a creation
/// then leaves an item with an empty secret behind. Such values are refused up front instead.
enum ProviderValues {
    /// True when `bytes` holds `{REF:F@S:text}` with F one of TUPANI and S one of TUPANIO
    /// (ASCII, any case) and a non-empty text without `}`.
    static func containsFieldReference(_ bytes: Data) -> Bool {
        let data = [UInt8](bytes)
        let prefix = Array("{REF:".utf8)
        func upper(_ byte: UInt8) -> UInt8 { (97...122).contains(byte) ? byte - 32 : byte }
        let fields = Set("TUPANI".utf8)
        let searchIn = Set("TUPANIO".utf8)
        var start = 0
        while start + 8 < data.count {
            defer { start += 1 }
            guard data[start] == prefix[0], (1..<5).allSatisfy({ upper(data[start + $0]) == prefix[$0] }) else { continue }
            let field = upper(data[start + 5])
            let at = data[start + 6]
            let within = upper(data[start + 7])
            let colon = data[start + 8]
            guard fields.contains(field), at == UInt8(ascii: "@"), searchIn.contains(within), colon == UInt8(ascii: ":") else { continue }
            let rest = data[(start + 9)...]
            if let close = rest.firstIndex(of: UInt8(ascii: "}")), close > start + 9 { return true }
        }
        return false
    }
}

extension ProviderValues {
    /// True when `bytes` are a JSON object whose values are all strings: a KWallet map.
    static func isJSONObjectOfStrings(_ bytes: Data) -> Bool {
        (try? JSONDecoder().decode([String: String].self, from: bytes)) != nil
    }
}

extension ServiceCall {
    /// Throws `.invalidArgument` before a write ksecretd would keep as something else: an item
    /// whose `type` attribute is `map` must hold a JSON object of strings there
    /// (`Provider.keepsTypeMapAsJSON`). Asks for the provider only for such items.
    func refuseItemTheProviderMisreads(_ attributes: [String: String], secret: Data) throws(KeyringError) {
        guard attributes["type"] == "map", !ProviderValues.isJSONObjectOfStrings(secret), provider().keepsTypeMapAsJSON else { return }
        throw .invalidArgument(
            "KWallet's ksecretd keeps an item whose attribute type is \"map\" as a map, a JSON object of strings, and returns {} "
                + "for other bytes; store a JSON object of strings, or give the type attribute another value")
    }

    /// Throws `.invalidArgument` before a write KeePassXC would refuse or store empty (see
    /// `ProviderValues`). Asks for the provider only when the value holds a field reference.
    func refuseValueTheProviderRejects(_ secret: Data) throws(KeyringError) {
        guard ProviderValues.containsFieldReference(secret), providerName() == "keepassxc" else { return }
        throw .invalidArgument(
            "KeePassXC refuses values that contain a field reference such as {REF:P@I:…}; store it encoded (e.g. base64)")
    }
}
