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
        answersReplacingCreate: true, savesBeforeAnswering: false, numbersPathsInCreationOrder: true)
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
    /// (`Quirks.keepsTypeMapAsJSON`). Asks for the provider only for such items.
    func refuseItemTheProviderMisreads(_ attributes: [String: String], secret: Data) throws(KeyringError) {
        guard attributes["type"] == "map", !ProviderValues.isJSONObjectOfStrings(secret), provider().quirks.keepsTypeMapAsJSON else { return }
        throw .invalidArgument(
            "KWallet's ksecretd keeps an item whose attribute type is \"map\" as a map, a JSON object of strings, and returns {} "
                + "for other bytes; store a JSON object of strings, or give the type attribute another value")
    }
}
