#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif

/// Checks attributes before libsecret sees them: libsecret 0.20 answers some bad input with a
/// GLib critical and no error, and C strings end at the first NUL.
enum AttributeRules {
    static let maximumCount = 32
    static let maximumLength = 4096

    static func validate(_ attributes: [String: String], requireOne: Bool = false) throws(KeyringError) {
        if requireOne && attributes.isEmpty { throw .invalidArgument("at least one attribute is required") }
        if attributes.count > maximumCount {
            throw .invalidArgument("\(attributes.count) attributes given; at most \(maximumCount) are allowed")
        }
        for (name, value) in attributes {
            if name.isEmpty { throw .invalidArgument("an attribute name is empty") }
            if name.hasPrefix("xdg:") && name != "xdg:schema" {
                throw .invalidArgument("attribute names starting with \"xdg:\" are reserved by libsecret")
            }
            try validateText(name, what: "an attribute name")
            try validateText(value, what: "the value of attribute \"\(printable(name))\"")
        }
    }

    /// Rejects a secret larger than `SecretStore.maximumValueSize`, the one cap every write shares
    /// (`Keyring.store`, `insertIfAbsent`, `SecretStore`): D-Bus and the daemon hold whole messages in memory.
    static func validateSecret(_ secret: Data, what: String) throws(KeyringError) {
        if secret.count > SecretStore.maximumValueSize {
            throw .invalidArgument("\(what) is \(secret.count) bytes; at most \(SecretStore.maximumValueSize) are allowed")
        }
    }

    /// The content type a write sends: `requested`, or for nil `text/plain` when the secret is
    /// UTF-8 text without NUL bytes and `application/octet-stream` otherwise. A `text/*` type is
    /// never sent with other bytes: KWallet cuts `text/*` at a NUL, and ksecretd (KDE Frameworks
    /// 6.28 and later) refuses invalid UTF-8 as `text/*` yet keeps an empty item behind.
    static func contentType(_ requested: String?, for secret: Data) throws(KeyringError) -> String {
        let isText = !secret.contains(0) && String(validating: secret, as: UTF8.self) != nil
        guard let requested else { return isText ? "text/plain" : "application/octet-stream" }
        try validateText(requested, what: "the content type")
        if requested.lowercased().hasPrefix("text/") && !isText {
            throw .invalidArgument(
                "the secret is not UTF-8 text without NUL bytes, so it cannot be stored as \(printable(requested)); "
                    + "pass application/octet-stream or leave the content type out")
        }
        return requested
    }

    /// Rejects text that C or D-Bus would silently cut or refuse.
    static func validateText(_ text: String, what: String) throws(KeyringError) {
        if text.utf8.contains(0) { throw .invalidArgument("\(what) contains a NUL byte") }
        if text.utf8.count > maximumLength {
            throw .invalidArgument("\(what) is \(text.utf8.count) bytes; at most \(maximumLength) are allowed")
        }
    }

    /// A name fit for an error message: short, no control characters.
    static func printable(_ name: String) -> String {
        let cleaned = String(name.unicodeScalars.map { $0.properties.generalCategory == .control ? "?" : Character($0) })
        return cleaned.count > 40 ? String(cleaned.prefix(40)) + "…" : cleaned
    }
}
