#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif

/// KDE's ksecretd (KDE Frameworks 6.14 and later), which took the Secret Service over from kwalletd6.
extension Quirks {
    /// ksecretd lists locked matches, numbers its paths anew on each start, saves values on a 5 s
    /// timer after their attributes, and keeps a `type=map` item as a KWallet map.
    package static let ksecretd = Quirks(
        listsLockedMatches: true, renumbersItems: true, savesValuesLate: true, keepsTypeMapAsJSON: true,
        rejectsFieldReferences: false, signalsSetSecret: false, dropsWritesWhileLocked: false, flushesOnRequest: false,
        mayMismatchSessionKeys: false, survivesPromptDismiss: true, signalsEveryItemChange: false, keepsContentType: true,
        answersReplacingCreate: true, savesBeforeAnswering: false, numbersPathsInCreationOrder: true, keepsItemChanges: true)
}

extension ProviderValues {
    /// True when `bytes` are a JSON object whose values are all strings: a KWallet map.
    static func isJSONObjectOfStrings(_ bytes: Data) -> Bool {
        (try? JSONDecoder().decode([String: String].self, from: bytes)) != nil
    }
}

extension ProviderValues {
    /// ksecretd's refusal of an item whose `type` attribute is `map` and whose secret is not a JSON
    /// object of strings (`Quirks.keepsTypeMapAsJSON`): it would keep something else. Nil otherwise;
    /// asks for the provider's quirks only for such items.
    static func typeMapRefusal(_ secret: Data, attributes: [String: String]?, quirks: () -> Quirks) -> KeyringError? {
        guard attributes?["type"] == "map", !isJSONObjectOfStrings(secret), quirks().keepsTypeMapAsJSON else { return nil }
        return .invalidArgument(
            "KWallet's ksecretd keeps an item whose attribute type is \"map\" as a map, a JSON object of strings, and returns {} "
                + "for other bytes; store a JSON object of strings, or give the type attribute another value")
    }
}
