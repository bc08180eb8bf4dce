#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif

/// KeePassXC (2.7 and 2.8).
extension Quirks {
    /// KeePassXC hides a locked database's items, keeps its paths, signals `SetSecret`, and refuses
    /// values that hold a field reference (`ProviderValues`). It adds attributes of its own
    /// (`ProviderAttributes.keePassXC`), recognised on the items themselves.
    package static let keePassXC = Quirks(
        listsLockedMatches: false, renumbersItems: false, savesValuesLate: false, keepsTypeMapAsJSON: false,
        rejectsFieldReferences: true, signalsSetSecret: true, dropsWritesWhileLocked: false, flushesOnRequest: false,
        mayMismatchSessionKeys: false, survivesPromptDismiss: true, signalsEveryItemChange: false, keepsContentType: true,
        answersReplacingCreate: false, savesBeforeAnswering: false, numbersPathsInCreationOrder: false, keepsItemChanges: true)
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
    /// KeePassXC's refusal of `secret` (see above) when it holds a field reference and the provider
    /// refuses those; nil otherwise. Asks for the provider's quirks only for such a value.
    static func fieldReferenceRefusal(_ secret: Data, quirks: () -> Quirks) -> KeyringError? {
        guard containsFieldReference(secret), quirks().rejectsFieldReferences else { return nil }
        return .invalidArgument(
            "KeePassXC refuses values that contain a field reference such as {REF:P@I:…}; store it encoded (e.g. base64)")
    }
}
