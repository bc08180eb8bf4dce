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
    /// (`Quirks.savesValuesLate`), to an item whose value is not empty: an empty secret read
    /// from an item that has it is a lost write (`KeyringError.valueLost`), not a value.
    static let nonEmptyValue = (name: "keyring-identity:value", value: "non-empty")

    /// The `Created` an item had before this library first replaced it in an update (where the
    /// provider keeps no item changes: `Quirks.keepsItemChanges`), as `ItemOrder.stamp` writes it.
    /// A replace gives the item a new `Created`; ordered by that, it would fall behind younger items.
    static let firstCreated = "keyring-identity:created"

    /// True when `attributes` say the item was written with a non-empty value.
    static func marksNonEmpty(_ attributes: [String: String]) -> Bool { attributes[nonEmptyValue.name] == nonEmptyValue.value }

    /// `attributes` with the non-empty marker set, or removed.
    static func marked(_ attributes: [String: String], nonEmpty: Bool) -> [String: String] {
        var marked = attributes
        marked[nonEmptyValue.name] = nonEmpty ? nonEmptyValue.value : nil
        return marked
    }

    /// What gnome-keyring shows of a locked item's attributes, loaded from disk: each name
    /// prefixed with this (`gkr:compat:hashed:NAME`, `gkr:compat:uint32:NAME`) and its value
    /// hashed, beside a plain `xdg:schema`.
    static let compatPrefix = "gkr:compat:"

    /// True when a locked item's `attributes` do not say what it holds: none at all, or only
    /// gnome-keyring's hashed forms. Such an item is neither compared nor listed by them.
    static func areUnreadable(_ attributes: [String: String]) -> Bool {
        attributes.keys.allSatisfy { $0 == "xdg:schema" || $0.hasPrefix(compatPrefix) }
    }

    /// `attributes` without those the provider (or this library's marker) added, except any named
    /// in `keeping` (what a caller asked for explicitly).
    static func withoutAdded(_ attributes: [String: String], keeping: Set<String> = []) -> [String: String] {
        var own = attributes
        for name in [nonEmptyValue.name, oo7ContentType, firstCreated] where !keeping.contains(name) { own[name] = nil }
        guard own["Uuid"] != nil, own["Path"] != nil else { return own }
        return own.filter { !keePassXC.contains($0.key) || keeping.contains($0.key) }
    }
}
